"""How long a part's child has been idle by its own choice after a hidden input (IdleMeter): the
bound on the one channel time gives a child that has seen one (docs/sandbox.md, "What a student may see")."""
from __future__ import annotations

import time
from typing import Any, Protocol

from autograder.sandbox import procfs


class Metered(Protocol):
    """What the meter reads of a part's child (part_child.PartChild, which imports this module)."""
    host_pid: int  # 0 until read from its pidfd
    pidfd: Any  # an int; None once the child has ended

    def spent(self) -> float: ...


class IdleMeter:
    """How long a part's child has been idle by its own choice since its first call after a hidden
    input: the wall time its calls took (not the grader's own time between them, where it answers
    stand-ins and judges replies), less

    - the session's CPU time (Part.spent),
    - the time the child's threads were runnable but waiting for a CPU (their schedstat run delay:
      a busy machine is not the child's idleness),
    - the time the grader's own thread spent on a CPU or waiting for one during the calls (its
      schedstat): a reply the grader was too busy to notice at once, or its own reading of the
      child's counters, is the machine's time, never the child's sleep.

    Read while a call waits, and after a call only once another half second of calls has passed, so
    a quick reply costs no read of /proc."""

    CHECK_EVERY = 0.5

    def __init__(self, part: Metered, budget: float) -> None:
        self.part, self.budget = part, budget
        # (session CPU, the child's run delay) at the first call after a hidden input
        self.base: tuple[float, float] | None = None
        self.wall, self.checked = 0.0, 0.0
        self.started: float | None = None
        self.grader = 0.0  # the grader thread's CPU + run delay within calls
        self.grader_at: float | None = None

    def call_begins(self) -> IdleMeter:
        if self.base is None:
            self.base = (self.part.spent(), self._delay())
        self.started = time.monotonic()
        self.grader_at = procfs.own_schedule()
        return self

    def call_ends(self) -> None:
        if self.started is not None:
            self.wall += time.monotonic() - self.started
            self.grader += self._grader_now()
            self.started = self.grader_at = None

    def _grader_now(self) -> float:
        """The grader thread's CPU + run delay since the current call began."""
        now = procfs.own_schedule()
        return max(0.0, now - self.grader_at) if now is not None and self.grader_at is not None else 0.0

    def over(self, waiting: bool) -> bool:
        """Whether the child has been idle for more than the budget (after a call: checked only every
        CHECK_EVERY seconds of calls)."""
        if self.budget == float("inf") or not waiting and self.wall - self.checked < self.CHECK_EVERY:
            return False  # a meter that only measures (PartChild.idle_measured) reads nothing until asked
        self.checked = self.wall
        return self.idle() > self.budget

    def idle(self) -> float:
        """Seconds the child has been idle by its own choice in the calls metered so far."""
        if self.base is None:
            return 0.0
        wall = self.wall + (time.monotonic() - self.started if self.started is not None else 0.0)
        grader = self.grader + (self._grader_now() if self.started is not None else 0.0)
        cpu, delay = self.base
        return wall - (self.part.spent() - cpu) - (self._delay() - delay) - grader

    def _delay(self) -> float:
        """Seconds the child's threads have been runnable but waiting for a CPU, all together."""
        part = self.part
        part.host_pid = part.host_pid or (procfs.host_pid(part.pidfd) if part.pidfd is not None else 0)
        return procfs.run_delay(part.host_pid)
