"""Where the test suite spends CPU (issue 38 item 6): a pytest plugin, off unless named, that writes each
test's wall time and the CPU time of its whole process tree, sandboxes included.

    PYTHONPATH=tests .venv/bin/python -m pytest -n 3 --dist loadgroup -p cpu_profile --cpu-profile=OUT.json
    .venv/bin/python tests/cpu_profile.py OUT.json        # per-file CPU and wall, the largest first

On a shared machine the wall time says how busy the others were; the CPU time says what the tests cost,
which is what a change to the suite should be measured by. Each test process (each xdist worker) moves
itself into a cgroup v1 cpuacct group of its own as it starts; every process it starts is counted there
with it, the sandbox's too (the grader makes its control groups under the group it is in:
autograder/sandbox/cgroup.py), including the processes the grader kills rather than waits for, which
`time` never sees. Where that group cannot be made (no root, no cgroup v1 cpuacct hierarchy) a test's CPU
is its process's and the children it waited for (getrusage), and OUT says so ("counted").
The groups are removed when the session ends. Read-only for the tests: nothing of a test's outcome
depends on it.
"""
from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict

import pytest

CPUACCT = "/sys/fs/cgroup/cpuacct"


def pytest_addoption(parser):
    parser.addoption("--cpu-profile", default="cpu-profile.json",
                     help="cpu_profile: where to write each test's CPU and wall time (one file per worker, suffixed)")


def _own_group() -> str:
    """This process's cpuacct group folder (cgroup v1), where the profile's group is made."""
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if "cpuacct" in controllers.split(","):
                    return os.path.join(CPUACCT, path.lstrip("/"))
    except (OSError, ValueError):
        pass
    return CPUACCT


class _Counter:
    """The CPU seconds of this process's tree so far: its own cpuacct group's, else getrusage's."""

    def __init__(self, worker: str) -> None:
        self.group, self.parent = "", _own_group()
        try:
            group = os.path.join(self.parent, f"ch03-cpu-profile-{worker}-{os.getpid()}")
            os.mkdir(group)
            with open(os.path.join(group, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
            self.group = group
        except OSError:
            pass
        self.counted = "cgroup v1 cpuacct (the whole tree)" if self.group else "getrusage (self and waited-for children)"

    def seconds(self) -> float:
        if self.group:
            with open(os.path.join(self.group, "cpuacct.usage")) as f:
                return int(f.read()) / 1e9
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    def close(self) -> None:
        """Back to the parent group, and the group removed (the sandbox's own are gone by now)."""
        if not self.group:
            return
        try:
            with open(os.path.join(self.parent, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
            os.rmdir(self.group)
        except OSError:
            pass


class _Profile:
    def __init__(self, config) -> None:
        self.worker = getattr(config, "workerinput", {}).get("workerid", "main")
        self.out = f"{config.getoption('--cpu-profile')}.{self.worker}"
        self.counter = _Counter(self.worker)
        self.rows: list[tuple[str, float, float]] = []
        self.started, self.cpu = time.monotonic(), self.counter.seconds()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        cpu, wall = self.counter.seconds(), time.monotonic()
        yield
        self.rows.append((item.nodeid, time.monotonic() - wall, self.counter.seconds() - cpu))

    def pytest_unconfigure(self, config):
        record = {"worker": self.worker, "counted": self.counter.counted, "tests": self.rows,
                  "wall": time.monotonic() - self.started, "cpu": self.counter.seconds() - self.cpu}
        with open(self.out, "w") as f:
            json.dump(record, f)
        self.counter.close()


def pytest_configure(config):
    config.pluginmanager.register(_Profile(config), "cpu_profile_recorder")


def per_file(paths: list[str]) -> list[tuple[str, float, float, int]]:
    """[(test file, CPU seconds, wall seconds, tests)] of the workers' records, the most CPU first."""
    files: dict[str, list] = defaultdict(lambda: [0.0, 0.0, 0])
    for path in paths:
        with open(path) as f:
            for nodeid, wall, cpu in json.load(f)["tests"]:
                row = files[nodeid.split("::", 1)[0]]
                row[0] += cpu
                row[1] += wall
                row[2] += 1
    return sorted(((name, cpu, wall, n) for name, (cpu, wall, n) in files.items()), key=lambda r: -r[1])


if __name__ == "__main__":
    import glob

    found = sorted(p for stem in sys.argv[1:] for p in glob.glob(f"{stem}.*"))
    total = 0.0
    for name, cpu, wall, n in per_file(found):
        total += cpu
        print(f"{cpu:8.1f} s CPU {wall:8.1f} s wall {n:5d} tests  {name}")
    print(f"{total:8.1f} s CPU in all, from {len(found)} record(s): {', '.join(found)}")
