"""Whether the processes a test ended are all gone, decided by the kernel's records of each, not by a clock;
and the tree of processes below one (descendants), read the one way every test reads it.

A test that kills a process tree (a batch, a sandbox session) and asks that nothing of it is left used
to poll for 5 or 10 s: on a busy machine a dying tree can take longer than that to be scheduled through
its exits, and the test failed though nothing outlived anything. Read from /proc instead, each process
still there is

- dying: a zombie, exiting (the kernel's PF_EXITING flag) or with a SIGKILL pending (its parent's death
  signal, its pid namespace ending, the grader's own kill): it needs only a CPU to finish;
- below a dying one (the parent-death signals and the pid namespaces pass an end down the tree, one
  level at a time): its end is on its way;
- else a survivor: alive, not dying, and nothing above it dying, so nothing will end it. A test learns
  of it at once, without waiting for any deadline.

A process that has just taken its SIGKILL off the queue and is not yet flagged exiting (a few kernel
instructions, but a preemption there can last) reads as not dying: a survivor is believed only once it
has been seen so while asleep (a process on its way out never sleeps) or after it has run meanwhile
(its CPU ticks grew) and still read so.
"""
from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass

PF_EXITING = 0x4
SIGKILL_BIT = 1 << (9 - 1)
BOUND = 600.0  # seconds: a bound on a hang only (a dying tree on any machine ends far sooner)


@dataclass(frozen=True)
class Seen:
    """One reading of a process: its start time (pid reuse), parent, state, whether it is dying, CPU ticks."""
    start: str
    ppid: int
    state: str
    dying: bool
    ticks: int


def read(pid: int) -> Seen | None:
    """The process as /proc has it now; None once it is gone (reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/status") as f:
            pending = 0
            for line in f:
                if line.startswith(("SigPnd:", "ShdPnd:")):
                    pending |= int(line.split()[1], 16)
    except (OSError, ValueError, IndexError):
        return None
    state, flags = fields[0], int(fields[6])
    dying = state in ("Z", "X", "x") or bool(flags & PF_EXITING) or bool(pending & SIGKILL_BIT)
    return Seen(fields[19], int(fields[1]), state, dying, int(fields[11]) + int(fields[12]))


def alive(process: tuple) -> bool:
    """process: (pid, start time, ...) as descendants() gives it: that process (not a later one with its
    pid) is still there and not a zombie."""
    seen = read(process[0])
    return seen is not None and seen.start == process[1] and seen.state not in ("Z", "X", "x")


def descendants(pid: int, uids: bool = False) -> set[tuple]:
    """Every live process below pid, as (pid, start time) pairs, or (pid, start time, uid) with uids:
    walked down from pid through each task's list of children (/proc/PID/task/TID/children), so a
    reading costs the tree, not every process of the machine (a test samples a batch's tree every 20 ms
    on a machine the suite shares). The start time tells a process from a later one given its pid."""
    found, todo = set(), [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children") as f:
                    children = [int(child) for child in f.read().split()]
            except OSError:
                continue
            for child in children:
                try:  # its stat only (read() also reads its status: a sample here must stay cheap)
                    with open(f"/proc/{child}/stat") as f:
                        start = f.read().rsplit(")", 1)[1].split()[19]
                    uid = os.stat(f"/proc/{child}").st_uid if uids else None
                except (OSError, IndexError):
                    continue
                found.add((child, start, uid) if uids else (child, start))
                todo.append(child)
    return found


def kill_all(processes) -> None:
    """SIGKILL each of processes ((pid, start time, ...) tuples) that is still the one it was."""
    for process in processes:
        if alive(process):
            try:
                os.kill(process[0], signal.SIGKILL)
            except ProcessLookupError:  # ended between the reading and the kill
                pass


def doomed(pid: int) -> bool:
    """The process is dying, or gone, or one above it (its parents up to the machine's init) is dying."""
    seen = read(pid)
    while seen is not None and not seen.dying:
        if seen.ppid <= 1:
            return False
        seen = read(seen.ppid)  # read after the one below: an end passes down, so none is missed
    return True


def _same(pid: int, start: str | None) -> Seen | None:
    seen = read(pid)
    return seen if seen is not None and (start is None or seen.start == start) else None


def wait_ended(processes, bound: float = BOUND) -> list:
    """Wait until every one of processes is gone or a zombie -> [] then; as soon as one is a survivor
    (the module's docstring) -> the survivors; at the bound (a hang) -> those left. processes: pids, or
    tuples that begin (pid, start time) as tests/test_batch.py and tests/test_adversarial.py keep them,
    or a function that lists them afresh (every process of a uid)."""
    fixed = None if callable(processes) else list(processes)
    suspects: dict = {}  # process -> its CPU ticks when it was first read a survivor while running
    deadline = time.monotonic() + bound
    while True:
        left, survivors = [], []
        for process in (processes() if fixed is None else fixed):
            pid, start = (process[0], process[1]) if isinstance(process, tuple) else (process, None)
            seen = _same(pid, start)
            if seen is None or seen.state in ("Z", "X", "x"):  # gone, or dead and only not reaped yet
                continue
            left.append(process)
            if doomed(pid):
                suspects.pop(process, None)
                continue
            if seen.state not in ("R",) or suspects.get(process, seen.ticks) != seen.ticks:
                survivors.append(process)  # asleep and not dying, or ran on and still not dying
            else:
                suspects[process] = seen.ticks
        if survivors or not left or time.monotonic() > deadline:
            return survivors or left
        time.sleep(0.02)
