"""Why a part's child ended before answering: only a cause measured here is ever charged.

A child ends early because of its own code (it used up its part's CPU time, it slept or waited
past the wall clock, its processes together held more memory than the part's limit and the
kernel's out-of-memory killer ended it inside the part's control group) or because of the
machine (the host's out-of-memory killer, an operator's or another program's kill, a session
leader that died, a machine so busy that the child spent its wall clock waiting for a CPU).

Each part starts a Gauge: the out-of-memory kills its control group has seen so far and the
child's own scheduler counters (/proc/<pid>/schedstat: time on a CPU, time runnable but waiting
for one). When the child dies, the readings say which cause it was:

- a SIGKILL is charged as memory only when the group's out-of-memory kill counter grew during the
  part (cgroup v2 memory.events, v1 memory.oom_control); any other SIGKILL the grader did not send
  is the machine's;
- a wall-clock timeout is charged ("code that waits or sleeps") only when the child spent most of
  the part neither on a CPU nor waiting for one; a child that was runnable and got no CPU was
  kept waiting by the machine;
- a CPU-time timeout is charged where the child's CPU time could be read (its group's, or its
  /proc entry), never when the wall clock had to stand in for it.

A death that is the machine's is not the student's: the runner runs the part again in a fresh
child and, if the machine stays overloaded, says the part was not graded (runner.py).
"""
import os
from dataclasses import dataclass
from typing import Optional

NOT_GRADED = "not graded: the machine was overloaded"  # a part the machine kept from running (runner.py)
OOM_FILES = ("memory.events", "memory.oom_control")  # cgroup v2, v1: both have an "oom_kill N" line
ASLEEP_SHARE = 0.5  # of the wall clock: a child off the CPU and not waiting for one this long waited on its own


def oom_kills(group) -> Optional[int]:
    """The out-of-memory kills the kernel made inside the group so far (None where unreadable)."""
    if group is None:
        return None
    for folder in group.folders:
        for name in OOM_FILES:
            try:
                with open(os.path.join(folder, name)) as f:
                    for line in f:
                        key, _, value = line.partition(" ")
                        if key == "oom_kill":
                            return int(value)
            except (OSError, ValueError):
                continue
    return None


def schedule(host_pid: int) -> Optional[tuple]:
    """(seconds on a CPU, seconds runnable but waiting for one) of a process so far, or None."""
    if host_pid <= 0:
        return None
    try:
        with open(f"/proc/{host_pid}/schedstat") as f:
            on_cpu, waiting = f.read().split()[:2]
        return int(on_cpu) / 1e9, int(waiting) / 1e9
    except (OSError, ValueError):
        return None


@dataclass
class Gauge:
    """Readings at the start of a part, to compare with when it ends."""
    oom_kills: Optional[int]
    schedule: Optional[tuple]

    @classmethod
    def start(cls, group, host_pid: int) -> "Gauge":
        return cls(oom_kills(group), schedule(host_pid))

    def oom_killed(self, group) -> bool:
        """The kernel's out-of-memory killer acted inside the part's group since the part began."""
        now = oom_kills(group)
        return now is not None and self.oom_kills is not None and now > self.oom_kills

    def asleep(self, host_pid: int, wall: float) -> Optional[bool]:
        """Over `wall` seconds since the part began, was the child mostly neither on a CPU nor
        waiting for one (it slept, or waited for something of its own)? None where unmeasured.
        Read before the child is killed."""
        now = schedule(host_pid)
        if now is None or self.schedule is None or wall <= 0:
            return None
        busy = (now[0] - self.schedule[0]) + (now[1] - self.schedule[1])
        return wall - busy >= ASLEEP_SHARE * wall


MACHINE_KILLED = ("was killed (SIGKILL) by something outside the part: neither its memory nor its time "
                  "explains it (the machine's out-of-memory killer or another process)")
MACHINE_WAITED = ("ran out of wall-clock time while it was waiting for a CPU: the machine was too busy to run it")
MACHINE_UNMEASURED = ("ran out of time, and its own CPU time could not be measured here: the machine's, not "
                      "the code's")
