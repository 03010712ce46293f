"""Why a part's child ended before answering: the machine's only on proof the grader owns.

A child ends early because of its own code (it used up its part's CPU time, it slept or waited
past the wall clock, its processes together held more memory than the part's limit and the
kernel's out-of-memory killer ended it inside the part's control group) or because of the
machine (the host's out-of-memory killer, an operator's or another program's kill, a session
leader that died, a machine so busy that the child spent its wall clock waiting for a CPU).

Each part starts a Gauge: the out-of-memory kills its control group has seen so far, the
machine's own count of out-of-memory kills (/proc/vmstat oom_kill: every group's and the host's)
and the child's own scheduler counters (/proc/<pid>/schedstat: time on a CPU, time runnable but
waiting for one). When the child dies, the readings say which cause it was, in three kinds:

- charged at once: its CPU-time limit (its CPU time was read), its memory (the group's
  out-of-memory kill counter grew during the part), a wall clock it spent mostly asleep, an exit,
  any signal but SIGKILL, a reply that is not an answer;
- the machine's, on proof (PROOF): the session's leader gone (no process of the part can reach
  it: PID 1 of its own namespace, deaf to signals sent from inside), an out-of-memory kill outside
  the part's group during the part (the machine's counter grew more than the group's) before any
  hidden input, or a child kept waiting for a CPU (runnable, measured) past a far wall clock. The
  part runs again in a fresh child, and is "not graded" when the machine keeps it from running;
- unexplained (SUSPECT): any other SIGKILL, a child that closed its own channel to the grader
  (the grader's kill that followed is remembered as the grader's, never "from outside"), time
  that could not be measured, an out-of-memory kill outside the group after a hidden input (on a
  small machine the part's own allowed memory can be what ran it out). The child could have caused
  each itself: the part runs again in a fresh child (a real outside kill is not repeated), and a
  part that dies so in every fresh child is charged with what was seen (runner.run_checks).

A part's child cannot make its own death look like the machine's: it cannot lower or reset its
limits (setrlimit is refused by the system-call filter and prlimit64 may only read, so the CPU
limit's SIGKILL, set above the SIGXCPU one, is the grader's number), cannot lower its own
scheduling priority (setpriority, sched_setscheduler and kin are refused), and holds no memory
its address-space limit does not see (memfd_create, System V shared memory and message queues are
refused: inside/syscalls.py).
"""
import os
from dataclasses import dataclass
from typing import Optional

NOT_GRADED = "not graded: the machine was overloaded"  # a part the machine kept from running (runner.py)
OOM_FILES = ("memory.events", "memory.oom_control")  # cgroup v2, v1: both have an "oom_kill N" line
VMSTAT = "/proc/vmstat"
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


def machine_oom_kills() -> Optional[int]:
    """The out-of-memory kills of the whole machine so far (every group's and the host's), or None."""
    try:
        with open(VMSTAT) as f:
            for line in f:
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def schedule(host_pid: int) -> Optional[tuple]:
    """(seconds on a CPU, seconds runnable but waiting for one) of a process so far, all its threads
    together (a main thread blocked on a helper that waits for a CPU is kept waiting too), or None."""
    if host_pid <= 0:
        return None
    try:
        threads = os.listdir(f"/proc/{host_pid}/task")
    except OSError:
        threads = []
    total, read = [0.0, 0.0], False
    for thread in threads:
        try:
            with open(f"/proc/{host_pid}/task/{thread}/schedstat") as f:
                on_cpu, waiting = f.read().split()[:2]
            total[0] += int(on_cpu) / 1e9
            total[1] += int(waiting) / 1e9
            read = True
        except (OSError, ValueError):
            continue
    return (total[0], total[1]) if read else None


@dataclass
class Gauge:
    """Readings at the start of a part, to compare with when it ends."""
    oom_kills: Optional[int]
    schedule: Optional[tuple]
    machine_ooms: Optional[int] = None

    @classmethod
    def start(cls, group, host_pid: int) -> "Gauge":
        return cls(oom_kills(group), schedule(host_pid), machine_oom_kills())

    def oom_elsewhere(self, group) -> bool:
        """The kernel's out-of-memory killer acted outside the part's group (the host's, or a group
        above it) since the part began: the machine's count grew by more than the group's."""
        now = machine_oom_kills()
        if now is None or self.machine_ooms is None or now <= self.machine_ooms:
            return False
        own_now, own_then = oom_kills(group), self.oom_kills
        own = own_now - own_then if own_now is not None and own_then is not None else 0
        return now - self.machine_ooms > own

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


PROOF, SUSPECT = "proof", "suspect"  # PartChild.machine: the machine's on proof, or unexplained
UNEXPLAINED_KILL = ("was killed (SIGKILL) and no limit of the part explains it (neither its memory nor its time): "
                    "look for code that ends its own process")
OOM_ELSEWHERE = "was killed (SIGKILL) by the machine's out-of-memory killer, outside the part's own memory"
CLOSED_CHANNEL = "closed its connection to the grader before answering (look for code that closes files it did not open)"
LEADER_GONE = "ended with its sandbox session: the session's leader, out of the part's reach, was gone"
MACHINE_WAITED = ("ran out of wall-clock time while it was waiting for a CPU: the machine was too busy to run it")
MACHINE_UNMEASURED = ("ran out of time, and its own CPU time could not be measured here: the machine's, not "
                      "the code's")
