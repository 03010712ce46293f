"""The child's lifecycle: where one submission's checks run (Place: the sandbox's door, its session and
the child that takes the next turn), what the runner needs of the submission (SubmissionContext) and a
turn's limits (Limits)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autograder.sandbox.client import PartChild, Sandbox, Session


@dataclass
class SubmissionContext:
    """What the runner needs of a staged submission while it runs its parts."""
    folder: str | Path
    key: str | None          # the submission's key (its uid in the sandbox); None: its folder
    attributes: frozenset[str]  # the names its modules define (student.source_attributes)
    known: dict[str, str] = field(default_factory=dict)  # its verdicts on the parts other parts use (suites/dependencies.py)
    files: frozenset[str] | None = None  # the graded chapter's module files (None: this repository's chapter's)
    cells: dict[str, tuple[str, int]] = field(default_factory=dict)  # its modules' notebook cells (Staged.cells)
    # (module, line, exception class) of the top-level demo statements its children skipped at import (Student.demo_lines)
    demo_lines: set[tuple[str, int, str]] = field(default_factory=set)


@dataclass
class Place:
    """Where one submission's checks run: the sandbox's door, the submission, its session (one leader)
    and the child that takes the next turn (None: a fresh one is started when needed). The runner's
    steps change session and child here instead of handing them back and forth."""
    sandbox: Sandbox
    submission: SubmissionContext
    session: Session | None = None
    child: PartChild | None = None

    def fresh_child(self, limits: Limits) -> PartChild:
        """A new child of the session (of a new session when it has died), which becomes the place's."""
        for attempt in (1, 2):
            if self.session is None or self.session.died:
                if self.session is not None:
                    self.session.close()
                self.session = self.sandbox.session(self.submission.folder, self.submission.key)
            child = self.session.part(limits.timeout, limits.memory_mb, limits.budget)
            if not (child.died and self.session.died) or attempt == 2:
                break
        self.child = child
        return child

    def end_child(self) -> None:
        """End the current child (whatever it is doing)."""
        if self.child is not None:
            self.child.close()
            self.child = None

    def close(self) -> None:
        """End the child and the session."""
        self.end_child()
        if self.session is not None:
            self.session.close()
            self.session = None


@dataclass(frozen=True)
class Limits:
    """A turn's limits: seconds of CPU time and MiB of memory for the part, and the seconds the
    child may take in all (the parts still to come in it)."""
    timeout: float
    memory_mb: int
    budget: float
