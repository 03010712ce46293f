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
  part that dies so in every fresh child is charged with what was seen (runner/attempts.run_checks).

A part's child cannot make its own death look like the machine's: it cannot lower or reset its
limits (setrlimit is refused by the system-call filter and prlimit64 may only read, so the CPU
limit's SIGKILL, set above the SIGXCPU one, is the grader's number), cannot lower its own
scheduling priority (setpriority, sched_setscheduler and kin are refused), and holds no memory
its address-space limit does not see (memfd_create, System V shared memory and message queues are
refused: inside/syscalls.py).
"""
import os
import select
import signal
import time
from dataclasses import dataclass
from typing import Any

from autograder import text
from autograder.inside import protocol
from autograder.sandbox import procfs

NOT_GRADED = "not graded: the machine was overloaded"  # a part the machine kept from running (runner/attempts.py)
OOM_FILES = ("memory.events", "memory.oom_control")  # cgroup v2, v1: both have an "oom_kill N" line
VMSTAT = "/proc/vmstat"
ASLEEP_SHARE = 0.5  # of the wall clock: a child off the CPU and not waiting for one this long waited on its own


def oom_kills(group) -> int | None:
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


def machine_oom_kills() -> int | None:
    """The out-of-memory kills of the whole machine so far (every group's and the host's), or None."""
    try:
        with open(VMSTAT) as f:
            for line in f:
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def schedule(host_pid: int) -> tuple | None:
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
        got = procfs.schedstat(f"/proc/{host_pid}/task/{thread}/schedstat")
        if got:
            total[0] += got[0]
            total[1] += got[1]
            read = True
    return (total[0], total[1]) if read else None



def tree_busy(pid: int) -> float | None:
    """Seconds the process and every process below it have spent on a CPU or waiting for one (their
    schedstat, summed; a process started after pid counts whole, its schedstat beginning at 0); None
    where none of them could be read."""
    total, read, todo, seen = 0.0, False, [pid], set()
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        got = schedule(current)
        if got is not None:
            total, read = total + got[0] + got[1], True
        below = procfs.threads_and_children(current)
        if below is not None:
            todo += below[1]
    return total if read else None


def kept_busy(pid: int, wall: float) -> bool:
    """Over the `wall` seconds since pid started, were it and the processes below it mostly on a CPU or
    waiting for one (the machine slow, their work going on), not asleep on their own? False where
    unmeasured."""
    busy = tree_busy(pid)
    return busy is not None and wall > 0 and wall - busy < ASLEEP_SHARE * wall

@dataclass
class Gauge:
    """Readings at the start of a part, to compare with when it ends. grader: the grading thread's own
    CPU time plus run delay (procfs.own_schedule), read in the thread that judges the part."""
    oom_kills: int | None
    schedule: tuple | None
    machine_ooms: int | None = None
    grader: float | None = None

    @classmethod
    def start(cls, group, host_pid: int) -> "Gauge":
        return cls(oom_kills(group), schedule(host_pid), machine_oom_kills(), procfs.own_schedule())

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

    def asleep(self, host_pid: int, wall: float) -> bool | None:
        """Over `wall` seconds since the part began, was the child mostly neither on a CPU nor
        waiting for one (it slept, or waited for something of its own)? None where unmeasured.
        Read before the child is killed, in the thread that started the gauge.

        The grading thread's own CPU time and run delay since then are not the child's sleep either:
        a child waits for the grader to answer its stand-ins' questions and to send its next request,
        and on a busy machine the grader is slow to do both (as the idle meter after a hidden input
        counts it: idle.py). Measured 2026-11-28: a SelfAttention_v2 that raises, graded under load in
        a batch beside a student keeping 62 processes busy, had weight_transfer charged "timed out
        after 25.9 s of waiting" while its child waited on the grader's stand-ins (2 points lost)."""
        now = schedule(host_pid)
        if now is None or self.schedule is None or wall <= 0:
            return None
        busy = (now[0] - self.schedule[0]) + (now[1] - self.schedule[1])
        grader = procfs.own_schedule()
        if grader is not None and self.grader is not None:
            busy += max(0.0, grader - self.grader)
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


# ------------------------------------------------------------ the verdict on one child

def judge(child: Any, error: BaseException) -> None:
    """Why the child ended before answering -> child.died (the words) and child.machine: "" (the
    code's, charged), PROOF (the machine's, proved) or SUSPECT (unexplained: run
    again, and charged when it ends so in every fresh child). See the module's docstring."""
    if isinstance(error, protocol.Deadline) and not child.cpu_out:  # before the kill: slept, or waited for a CPU?
        child.asleep = child.gauge.asleep(child.host_pid, time.monotonic() - child.started)
    # alive: not yet reaped and not on its way out (a process being killed has closed its files, so
    # its channel reads as closed, a moment before its pidfd says it ended: the kernel's PF_EXITING
    # flag, read here, tells which without waiting on the clock)
    alive = child.pidfd is not None and not select.select([child.pidfd], [], [], 0)[0] \
        and not procfs.exiting(child.host_pid or procfs.host_pid(child.pidfd))
    child.kill()
    child.grader_killed = alive  # remembered: its SIGKILL below is the grader's, sent for `error`
    spent = child.spent() if child.cpu_start is not None else None
    end = child._collect_end()
    code = end.get("exitcode")
    killed = code == -signal.SIGKILL
    if isinstance(error, protocol.Deadline) and child.idle_out:  # only after a hidden input: fixed words
        child.died = (f"timed out: it waited or slept for more than {child.IDLE_AFTER_HIDDEN:g} s after an input only "
                     f"the grader knows (look for code that waits or sleeps)")
    elif isinstance(error, protocol.Deadline):
        child.died = deadline_cause(child)
    elif code is None:  # the leader did not answer: no process of the part can reach it
        child.machine, child.died = PROOF, LEADER_GONE
    elif child.grader_killed and isinstance(error, protocol.ProtocolError) and "closed" in str(error):
        # the child was alive and its channel closed: it closed it itself (the kill was the grader's)
        child.machine, child.died = SUSPECT, CLOSED_CHANNEL
    elif isinstance(error, RecursionError) or isinstance(error, protocol.ProtocolError) and "closed" not in str(error):
        said = "" if child.saw_hidden else f" ({text.excerpt(error, 200)})"
        child.died = f"sent back something that is not an answer{said}"
    elif killed and child.gpu_killed:  # how much it held is the child's choice
        child.died = ("was killed (SIGKILL): it held more GPU memory than the part's limit" if child.saw_hidden
                     else f"was killed (SIGKILL): it {child.gpu_killed}")
    elif killed and child.gauge.oom_killed(child.group):
        child.died = (f"was killed by the kernel (SIGKILL): its processes together used more memory than the "
                     f"part's limit ({child.memory_mb:g} MB)")
    elif code in (-signal.SIGKILL, -signal.SIGXCPU) and spent is not None and spent >= child.timeout:
        child.cpu_out = True  # the kernel's CPU-time limit (set above the grader's): its own CPU time
        child.died = deadline_cause(child)
    elif killed and child.gauge.oom_elsewhere(child.group):  # proof, unless a hidden input was seen
        child.machine, child.died = (SUSPECT if child.saw_hidden else PROOF), OOM_ELSEWHERE
    elif killed:  # not by us, not by any out-of-memory killer: it could have been its own doing
        child.machine, child.died = SUSPECT, UNEXPLAINED_KILL
    elif code < 0:
        child.died = "was killed by a signal" if child.saw_hidden else f"was killed by signal {_signal_name(-code)}"
    else:
        status = "" if child.saw_hidden else f" with status {code}"
        child.died = f"exited{status} before returning (sys.exit/os._exit in the code?)"

def deadline_cause(child: Any) -> str:
    """The words for a deadline, charged only where measured (py): the CPU-time limit (its CPU
    time was read), the wall clock while it slept or waited of its own doing; else the machine's."""
    if child.cpu_out and child.cpu_start is not None:
        return (f"timed out after {child.timeout:g} s of CPU time (the part's time limit): look for a loop that "
                f"never ends")
    if not child.cpu_out and child.asleep:
        return (f"timed out after {child.deadline - child.started:g} s of waiting (the part's wall-clock limit): "
                f"look for code that waits or sleeps")
    if child.cpu_out or child.asleep is None:  # unmeasured: the child may have caused it
        child.machine = SUSPECT
        return MACHINE_UNMEASURED
    child.machine = PROOF  # measured runnable, past the far wall clock (_await_reply)
    return MACHINE_WAITED



def _signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:  # a real-time signal has no name of its own
        return f"number {number}"

