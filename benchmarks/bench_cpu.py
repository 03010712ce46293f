"""CPU per submission: the sandboxed batch against the in-process floor, measured in one run.

    .venv/bin/python benchmarks/bench_cpu.py [--students 20] [--small 5] [--jobs 2] [--repeats 3]

floor: the hidden checks' own work, one process, no sandbox: the solutions' modules imported
       once into this process and every request answered by the child's own code (child.run),
       without serialization; CPU time (user + system) per submission, warm.
batch: `python -m autograder batch` over N copies of the solutions in a subprocess, started in a
       control group of its own (sandbox/cgroup.accounting: cgroup v1 cpuacct.usage, v2 cpu.stat
       usage_usec), so its CPU time is the batch's, its workers', the fork servers' and every
       sandboxed child's (the sandbox's groups are made below it), start-up included, and no
       neighbour's; per submission. Where no group can be made (no root), the CPU time the whole
       machine spent while it ran (/proc/stat: user + nice + system + irq + softirq), as before:
       then run it on an otherwise idle machine. ("cpu_counted_from" says which.) (The kernel's
       accounting of waited-for children misses the sandboxed processes: a session's leader is
       ended with SIGKILL, and what its children used is never added to anything the batch waits for.)
Alternating floor and batch, it prints the medians, and the ratios batch / floor of each repeat
(pair by pair: each batch against the floor measured just before it) with their median, least and
most, for the whole batch of N (start-up included: torch imported by the batch and in the sandbox, warmed up once) and
for the steady state: (CPU for N - CPU for `--small`) / (N - small), the cost of one more submission.
"""
import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def ask_in_process(question, tensors=()):
    """inside/stand_in.ask without the child's channel: a stand-in's question (the grader's classes in
    place of a part, suites/dependencies.py) answered here by the grader's own answer (student.py's
    stand_in_answer), encoded and decoded as it is between the child and the grader."""
    from autograder.inside import protocol, stand_in
    from autograder.student import stand_in_answer

    structure, buffers = protocol.encode({"question": question, "tensors": list(tensors)})
    header, out = stand_in_answer({"stand_in": structure}, b"".join(bytes(b) for b in buffers))
    if "error" in header:
        raise stand_in._error(header["error"])
    answer = protocol.decode(header["input"], b"".join(bytes(b) for b in out))
    return answer, answer.pop("tensors", [])


class InProcessPart:
    """The Part interface (client.PartChild), answered in this process by the child's request handler."""

    died = ""
    machine = False
    saw_hidden = False  # runner marks a part that was sent a hidden input (client.PartChild)
    protections = ["none (in-process floor)"]

    def __init__(self):
        from autograder.inside import child, stand_in

        stand_in.ask = ask_in_process  # the stand-ins' questions have no channel to travel on here
        self.child, self.handles = child, child.Handles()
        self.started = time.process_time()

    def spent(self):
        """CPU seconds of this part so far (client.PartChild.spent: what the part's limit counts)."""
        return time.process_time() - self.started

    def call(self, header, buffers=(), limit=None):
        from autograder.inside import protocol

        payload = b"".join(bytes(b) for b in buffers)
        if header.get("op") == "plan":  # several steps in one request (issue 38.7)
            reply, out = self.child.run_plan(self.handles, header, payload)
            return reply, b"".join(bytes(b) for b in out)
        try:
            result = self.child.run(self.handles, header, payload)
            structure, out = protocol.encode(result, fallback=self.handles.store)
            return {"result": structure}, b"".join(bytes(b) for b in out)
        except Exception as exc:
            return self.child.error_reply(exc), b""

    @contextlib.contextmanager
    def idle_measured(self):
        """client.PartChild.idle_measured: nothing here waits for a child, so nothing is idle."""
        yield types.SimpleNamespace(idle=lambda: 0.0)

    def finish(self):
        return {"output": "", "output_bytes": 0, "reusable": True}

    def next_part(self, timeout, memory_mb):
        return self

    def close(self):
        return {"output": "", "output_bytes": 0}


class InProcessSession:
    died = ""
    uid = 0
    protections = []

    def part(self, timeout, memory_mb, budget=None):
        return InProcessPart()

    def close(self):
        pass


class InProcessSandbox:
    def session(self, folder, key=None):
        return InProcessSession()


def floor(repeats=5):
    """CPU seconds per submission of grading the solutions in this process (median of repeats)."""
    from autograder import grading
    from autograder.engine import one_thread

    one_thread()  # as the grading process, the batch's workers and the sandbox's children run
    rubric, suites = grading.load_rubric()
    modules = tempfile.mkdtemp(prefix="floor-")
    for path in (ROOT / "solutions" / "ch03").glob("*.py"):
        shutil.copy(path, modules)
    sys.path.insert(0, modules)
    try:
        box = InProcessSandbox()
        grade = grading.grade_submission(ROOT / "solutions" / "ch03", rubric, suites, box, seed=1)  # warm
        assert grade.score == grade.max_score, [(c.name, c.message) for c in grade.checks if not c.passed]
        times = []
        for _ in range(repeats):
            start = time.process_time()
            grading.grade_submission(ROOT / "solutions" / "ch03", rubric, suites, box, seed=1)
            times.append(time.process_time() - start)
        return statistics.median(times)
    finally:  # the modules' copy goes with the measurement (it was left in the temporary folder)
        sys.path.remove(modules)
        shutil.rmtree(modules, ignore_errors=True)


def busy_seconds():
    """CPU seconds the machine has spent busy since boot (all cores: user, nice, system, irq, softirq)."""
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in f.readline().split()[1:8])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


COUNTED_FROM = {"group": "the batch's control group", "machine": "the whole machine's busy time (/proc/stat)"}


def batch_cpu(students, jobs, python):
    """(CPU seconds of a whole `batch` run over `students` copies of the solutions, "group" or
    "machine": where they were counted)."""
    from autograder.sandbox import cgroup

    work = Path(tempfile.mkdtemp(prefix="bench-cpu-"))
    group = cgroup.accounting(f"{cgroup.PREFIX}{os.getpid()}-bench-{time.monotonic_ns() % 10**6}")
    try:
        for i in range(students):
            shutil.copytree(ROOT / "solutions" / "ch03", work / "class" / f"student{i:03d}")
        before = busy_seconds()
        run = subprocess.run([python, "-m", "autograder", "batch", str(work / "class"), "--out", str(work / "out"),
                              "--jobs", str(jobs), "--force"], cwd=ROOT, capture_output=True, text=True,
                             preexec_fn=(lambda: group.join(os.getpid()) or os._exit(99)) if group else None)
        machine = busy_seconds() - before
        if run.returncode != 0:
            raise SystemExit(f"batch failed ({run.returncode}): {run.stderr[-2000:]}")
        used = group.cpu_seconds() if group else None
        return (used, "group") if used is not None else (machine, "machine")
    finally:
        if group:
            group.close_counter()
            cgroup.remove(group.folders)
        shutil.rmtree(work, ignore_errors=True)


def spread(values):
    """{median, least, most} of values, rounded."""
    return {"median": round(statistics.median(values), 2), "least": round(min(values), 2), "most": round(max(values), 2)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--small", type=int, default=5, help="the smaller class, for the steady-state cost")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if not 0 < args.small < args.students:
        parser.error("--small must be between 0 and --students")
    floors, whole, steady, where = [], [], [], set()
    for _ in range(args.repeats):
        floors.append(floor())
        (small, at_small), (large, at_large) = (batch_cpu(n, args.jobs, sys.executable)
                                                for n in (args.small, args.students))
        where |= {at_small, at_large}
        whole.append(large / args.students)
        steady.append((large - small) / (args.students - args.small))
    result = {"students": args.students, "small": args.small, "jobs": args.jobs, "repeats": args.repeats,
              "cpu_counted_from": " and ".join(COUNTED_FROM[w] for w in sorted(where)),
              "load_average_at_end": round(os.getloadavg()[0], 2),
              "floor_cpu_s_per_submission": round(statistics.median(floors), 3),
              "batch_cpu_s_per_submission_whole_batch": round(statistics.median(whole), 3),
              "batch_cpu_s_per_submission_steady_state": round(statistics.median(steady), 3),
              "ratio_whole_batch": spread([b / f for b, f in zip(whole, floors, strict=True)]),
              "ratio_steady_state": spread([b / f for b, f in zip(steady, floors, strict=True)])}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
