"""The CPU time of a whole session where no control group counts it (no root, nothing delegated).

A part's child and every process it started count: the ones it has reaped (in its own stat's
children's times), the ones still running, zombies, and orphans, which come to the session's leader
(PID 1 of the session's namespace, or a child subreaper in container mode), whose children's times
hold those it reaped. So a helper that burns CPU while the child waits is counted, reaped or not.
Read from /proc/<pid>/stat (fields utime, stime, cutime, cstime); the processes below the leader are
found by their parent pid, again every RESCAN seconds (a process started in between is counted from
the next scan on).
"""
from __future__ import annotations

import os
import time

RESCAN = 0.25
TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, list[int]] | None:
    """(parent pid, [utime, stime, cutime, cstime]) of pid, None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[1]), [int(v) for v in fields[11:15]]
    except (OSError, ValueError, IndexError):
        return None


def descendants(root: int) -> set[int]:
    """Every process below root (children, theirs, ...), from one pass over /proc."""
    parents: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            found = _stat(int(name))
            if found is not None:
                parents.setdefault(found[0], []).append(int(name))
    below, todo = set(), [root]
    while todo:
        for child in parents.get(todo.pop(), ()):
            if child not in below:
                below.add(child)
                todo.append(child)
    return below


class SessionClock:
    """CPU seconds of everything below one leader (not the leader's own work)."""

    def __init__(self, leader: int):
        self.leader, self.scanned = leader, 0.0
        self.members: set[int] = set()

    def seconds(self) -> float | None:
        now = time.monotonic()
        if now - self.scanned >= RESCAN:
            self.members, self.scanned = descendants(self.leader), now
        leader = _stat(self.leader)
        if leader is None:
            return None
        total = leader[1][2] + leader[1][3]  # what the leader reaped: earlier children, orphans
        for pid in self.members:
            found = _stat(pid)
            if found is not None:
                total += sum(found[1])
        return total / TICK
