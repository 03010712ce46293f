"""What the kernel says of a sandboxed process, read from /proc: its scheduler counters (time on a CPU,
time runnable but waiting for one), its pid in the grader's namespace (from a pidfd), and whether it
has begun to exit. Read by the part's clocks (part_child.py, idle.py) and the death verdict (death.py).
Also the one way a process is killed through its pidfd (`kill`: the part's child, the session's leader)."""
from __future__ import annotations

import os
import signal
import threading


def schedstat(path: str) -> tuple[float, float] | None:
    """(seconds on a CPU, seconds runnable but waiting) from a schedstat file, or None."""
    try:
        with open(path, "rb") as f:
            return _fields(f.read())
    except (OSError, ValueError):
        return None


def _fields(text: bytes) -> tuple[float, float]:
    """A schedstat file's first two fields, nanoseconds on a CPU and waiting, in seconds (ValueError
    when they are not there)."""
    on_cpu, waiting = text.split()[:2]
    return int(on_cpu) / 1e9, int(waiting) / 1e9


class KeptOpen:
    """A file kept open to be read again from its start (a /proc or control-group file is generated
    on each read); its descriptor is closed when the last reference goes (the thread that holds it
    ends, its owner drops it, or a process forked since replaces it: its copy is closed there).
    `pid`: the process that opened it."""

    fd = -1  # until the open succeeds (OSError: nothing to close)

    def __init__(self, path: str) -> None:
        self.pid, self.fd = os.getpid(), os.open(path, os.O_RDONLY | os.O_CLOEXEC)

    def read(self, size: int = 4096) -> bytes:
        return os.pread(self.fd, size, 0)

    def __del__(self) -> None:
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except OSError:
                pass


class _OwnSchedstat(threading.local):
    """The calling thread's /proc/thread-self/schedstat, opened once per thread (the link resolves
    to the thread that opens it) and read again from its start; closed when the thread ends."""

    file: KeptOpen | None = None

    def read(self) -> bytes:
        if self.file is None or self.file.pid != os.getpid():  # first use here, or forked since
            self.file = KeptOpen("/proc/thread-self/schedstat")
        return self.file.read(256)


_OWN = _OwnSchedstat()


def own_schedule() -> float | None:
    """The calling thread's CPU time plus its run delay so far (seconds), or None. Asked twice per
    request to a part's child after a hidden input (idle.py): its file is kept open."""
    try:
        return sum(_fields(_OWN.read()))
    except (OSError, ValueError):
        return None


def run_delay(pid: int) -> float:
    """The run delay of every thread of a process so far (seconds; 0 where unreadable)."""
    if pid <= 0:
        return 0.0
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        threads = []
    total = 0.0
    for thread in threads or [str(pid)]:
        got = schedstat(f"/proc/{pid}/task/{thread}/schedstat")
        total += got[1] if got else 0.0
    return total


def host_pid(pidfd: int) -> int:
    """The pid (in the grader's PID namespace) of the process a pidfd refers to, or 0."""
    try:
        with open(f"/proc/self/fdinfo/{pidfd}") as f:
            for line in f:
                if line.startswith("Pid:"):
                    return max(0, int(line.split()[1]))
    except (OSError, ValueError, IndexError):
        pass
    return 0


def threads_and_children(pid: int) -> tuple[int, tuple[int, ...]] | None:
    """(how many threads process pid has, the pids of its children), read from the grader's side; None
    where /proc does not say."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        children: list[int] = []
        for task in tasks:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                children += map(int, f.read().split())
    except (OSError, ValueError):
        return None
    return len(tasks), tuple(sorted(children))


PF_EXITING = 0x4  # include/linux/sched.h: the process has begun to exit (set before its files are closed)


def exiting(host_pid: int) -> bool:
    """The process has begun to exit, or is gone (the kernel's own record: /proc/<pid>/stat's state and
    flags); False where it cannot be told (no pid)."""
    if host_pid <= 0:
        return False
    try:
        with open(f"/proc/{host_pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # after the command's name, which may hold anything
        return fields[0] in ("Z", "X", "x") or bool(int(fields[6]) & PF_EXITING)
    except (OSError, ValueError, IndexError):
        return True  # no such process any more


def kill(pidfd: int | None) -> None:
    """SIGKILL to the process pidfd refers to; nothing when there is no pidfd or it is already gone
    (an OSError: the process was reaped, the descriptor closed)."""
    if pidfd is not None:
        try:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        except OSError:
            pass
