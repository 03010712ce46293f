"""A control group per fork server, or per worker when workers share one: a cap on the memory and
processes of a part's whole tree, and a CPU share of its own.

The rlimits in isolation.py bound each process, and student code may start up to 64 of them; a
control group bounds their sum, and the kernel's OOM killer acts inside the group once it holds
more than the part's memory (set before each part: each group runs one child at a time). A fork
server of its own joins its group as it starts, and a part's cap is the server's own memory (charged
before) plus the part's; where a batch's workers share one server, each worker has a group of its
own that its session leaders join before their first part, and a part's cap is the part's memory.
Groups are made under the grader's own, with cgroup v1's memory, pids, cpu and cpuacct hierarchies,
or with cgroup v2 where the grader's group hands those controllers down. Every group gets the same
CPU share (cpu.shares, cpu.weight), however many processes it runs: a batch's busy neighbour takes
one share, not the machine; and its CPU time is what a part's time limit is judged on (client.py). Where neither can be written (no
root, a read-only /sys/fs/cgroup, a v2 group that hands nothing down), there is no group, and the
protections in the report do not list one.
"""
import errno
import os
import signal
import time

from autograder.sandbox import procfs

MOUNT = "/sys/fs/cgroup"
PREFIX = "ch03-sandbox-"  # + the grader's pid, "-", a number
MEMORY_FILES = ("memory.limit_in_bytes", "memory.max")  # cgroup v1, v2


def _membership():
    """{controller: path} of this process from /proc/self/cgroup ('' is the cgroup v2 entry)."""
    groups = {}
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                for controller in controllers.split(",") if controllers else [""]:
                    groups[controller] = path
    except (OSError, ValueError):
        pass
    return groups


CPU_SHARE = {"cpu.shares": 1024, "cpu.weight": 100}  # v1, v2: every group the same share of a busy CPU


def _plan(memory_bytes, processes):
    """[(parent folder, {limit file: value})]: v1 memory, pids, cpu and cpuacct where mounted, else v2
    (memory, pids and cpu where the grader's group hands them down). A folder mounted for several
    controllers (cpu,cpuacct) is planned once."""
    groups = _membership()
    v1, seen = [], set()
    for c, limits in (("memory", {"memory.limit_in_bytes": memory_bytes}), ("pids", {"pids.max": processes}),
                      ("cpu", {"cpu.shares": CPU_SHARE["cpu.shares"]}), ("cpuacct", {})):
        folder = os.path.join(MOUNT, c, groups.get(c, "").lstrip("/"))
        if c in groups and os.path.isfile(os.path.join(folder, "cgroup.procs")) and os.path.realpath(folder) not in seen:
            seen.add(os.path.realpath(folder))
            v1.append((folder, limits))
    if any("memory.limit_in_bytes" in limits for _, limits in v1):
        return v1
    for mount in (MOUNT, os.path.join(MOUNT, "unified")):
        folder = os.path.join(mount, groups.get("", "/").lstrip("/"))
        try:
            with open(os.path.join(folder, "cgroup.subtree_control")) as f:
                handed_down = f.read().split()
        except OSError:
            continue
        limits = {name: value for c, name, value in (("memory", "memory.max", memory_bytes),
                                                      ("pids", "pids.max", processes),
                                                      ("cpu", "cpu.weight", CPU_SHARE["cpu.weight"]))
                  if c in handed_down}
        if "memory.max" in limits:
            return [(folder, limits)]
    return v1


class Group:
    """A folder in each hierarchy: the fork server's (joined as it starts), or, when several
    workers share one server, each worker's own, which its session leaders join (join()) before
    their first part; set_memory() before each part."""

    def __init__(self, folders: list[str], processes: int) -> None:
        self.folders, self.processes = folders, processes
        self._counter: procfs.KeptOpen | None = None  # the CPU counter found, kept open

    def procs_files(self) -> list[str]:
        """The files a process writes its pid into to join (the fork server's start-up shim)."""
        return [os.path.join(folder, "cgroup.procs") for folder in self.folders]

    def join(self, pid: int) -> bool:
        """Move process pid (and what it starts from now on) into this group -> True when every
        hierarchy took it."""
        if pid <= 0:
            return False
        try:
            for path in self.procs_files():
                with open(path, "w") as f:
                    f.write(str(pid))
        except OSError:
            return False
        return True

    def usage(self) -> int:
        """Bytes of anonymous memory the group holds now (0 where it cannot be read): the part of
        its charge the kernel cannot reclaim (file pages, torch's libraries among them, it can)."""
        for path in (os.path.join(f, "memory.stat") for f in self.folders):
            try:
                with open(path) as f:
                    stat = dict(line.split() for line in f if len(line.split()) == 2)
            except (OSError, ValueError):
                continue
            for name in ("total_rss", "rss", "anon"):  # cgroup v1 (hierarchical, own), v2
                if name in stat:
                    return int(stat[name])
        return 0

    def cpu_seconds(self) -> float | None:
        """CPU time used by every process that has been in the group (None where it cannot be read):
        cgroup v1's cpuacct.usage (ns) or v2's cpu.stat usage_usec. Read after every request a part's
        child answers: the file found first is kept open and read again from its start (a control
        group's files are generated on each read), found again in a process forked since."""
        if self._counter is not None and self._counter.pid == os.getpid():
            used = _read_counter(self._counter)
            if used is not None:
                return used
        self.close_counter()
        for path in (os.path.join(folder, name) for folder in self.folders for name in CPU_COUNTERS):
            try:
                counter = procfs.KeptOpen(path)
            except OSError:
                continue
            used = _read_counter(counter)
            if used is not None:
                self._counter = counter
                return used
        return None

    def close_counter(self) -> None:
        """Close the CPU counter kept open (remove() works with it open; a read after that fails, and
        the next cpu_seconds looks again); in a process forked since, its copy there."""
        self._counter = None

    def has_cpu_share(self) -> bool:
        return any(os.path.exists(os.path.join(f, name)) for f in self.folders for name in CPU_SHARE)

    def set_memory(self, memory_bytes: int) -> str:
        """Cap the group's memory at memory_bytes -> the sentence for the report."""
        caps = [f"memory {memory_bytes >> 20} MiB"] if _write_any(self.folders, MEMORY_FILES, memory_bytes) else []
        if self.processes:
            caps.append(f"{self.processes} processes")
        if self.has_cpu_share():
            caps.append("a CPU share of its own")
        return f"control group ({', '.join(caps)} for the whole process tree)" if caps else ""


CPU_COUNTERS = ("cpuacct.usage", "cpu.stat")  # cgroup v1 (ns), v2 (a line "usage_usec N")


def _read_counter(counter: procfs.KeptOpen) -> float | None:
    """Seconds of CPU an open cpuacct.usage or cpu.stat says, read from its start; None on failure."""
    try:
        data = counter.read()
        if data.startswith(b"usage_usec "):  # cpu.stat's first line
            return int(data.split(None, 2)[1]) / 1e6
        if b"usage_usec " in data:
            return int(data.split(b"usage_usec ", 1)[1].split(None, 1)[0]) / 1e6
        return int(data) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def _write_any(folders, names, value):
    """Write value into each folder's file of those names that exists; True when one took it."""
    written = False
    for path in (os.path.join(folder, name) for folder in folders for name in names):
        if os.path.exists(path):
            try:
                with open(path, "w") as f:
                    f.write(str(value))
                written = True
            except OSError:
                pass
    return written


def make(name: str, memory_bytes: int, processes: int) -> Group | None:
    """A Group named name with those caps, or None where this machine gives none."""
    if os.geteuid() != 0:
        return None
    folders = []
    try:
        for parent, limits in _plan(memory_bytes, processes):
            _sweep(parent)
            folders.append(os.path.join(parent, name))
            os.mkdir(folders[-1])
            for limit, value in limits.items():
                with open(os.path.join(folders[-1], limit), "w") as f:
                    f.write(str(value))
    except OSError:
        remove(folders, wait=0)
        return None
    _write_any(folders, ["memory.swap.max"], 0)  # v2 with swap accounting: no way around the cap
    capped = any(os.path.exists(os.path.join(folder, "pids.max")) for folder in folders)
    return Group(folders, processes if capped else 0) if folders else None


def accounting(name):
    """A group that only counts CPU time (cgroup v1 cpuacct, else a v2 group: cpu.stat's usage_usec
    is in every one), made under the grader's own and named name (PREFIX + a pid: swept and removed
    as the others) -> Group (cpu_seconds(): every process that has been in it and in the groups made
    below it), or None where none can be made. For measuring a whole run from outside it
    (benchmarks/bench_cpu.py): on a shared machine the machine's own busy time counts the
    neighbours too. Under cgroup v2 a run in such a group gets no groups of its own below it (the
    group hands no controller down), so it is measured without them."""
    if os.geteuid() != 0:
        return None
    groups = _membership()
    parent = os.path.join(MOUNT, "cpuacct", groups.get("cpuacct", "").lstrip("/")) if "cpuacct" in groups \
        else os.path.join(MOUNT, groups.get("", "/").lstrip("/"))
    folder = os.path.join(parent, name)
    try:
        _sweep(parent)
        os.mkdir(folder)
    except OSError:
        return None
    group = Group([folder], 0)
    if group.cpu_seconds() is None:
        group.close_counter()
        remove([folder], wait=0)
        return None
    return group


def _sweep(parent):
    """End the groups of fork servers that are gone (killed with their grader, say). A group is
    named after its server's pid; what is still in it is student code that outlived its grader
    (it cleared its parent-death signal): killed, then the group removed. A group named after a
    live process is never touched."""
    try:
        names = [n for n in os.listdir(parent) if n.startswith(PREFIX) and _owner(n)]
    except OSError:
        return
    stale = [os.path.join(parent, n) for n in names if not os.path.exists(f"/proc/{_owner(n)}")]
    for folder in stale:
        try:
            with open(os.path.join(folder, "cgroup.procs")) as f:
                left = [int(pid) for pid in f.read().split()]
        except (OSError, ValueError):
            continue
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    remove(stale)


def _owner(name):
    """The grader pid a group's name carries ('' when the name is not one of ours)."""
    owner = name[len(PREFIX):].split("-")[0]
    return owner if owner.isdigit() else ""


def remove(folders: list[str], wait: float = 1.0) -> None:
    """rmdir each group this module made (named ch03-sandbox-PID); the last processes of a killed
    tree may take a moment to leave."""
    deadline = time.monotonic() + wait
    for folder in map(str, folders):
        if not (folder.startswith(MOUNT + "/") and os.path.basename(folder).startswith(PREFIX)):
            continue
        while True:
            try:
                os.rmdir(folder)
                break
            except OSError as e:
                if e.errno != errno.EBUSY or time.monotonic() > deadline:
                    break
                time.sleep(0.005)
