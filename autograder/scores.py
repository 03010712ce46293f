"""A grade's typed records: one ScoredCheck per rubric check, one PartScore per part, the Grade that
holds them (grading.grade_submission makes them; reports/ reads them, by attribute). Nothing here
imports the grading machinery (the runner, the stand-ins, torch): the reports, a batch's parent
process and the course records read grades without it, and a batch starts its fork servers before
it imports torch (batch/run.py)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ScoredCheck:
    part: str
    name: str
    passed: bool
    score: float
    max_score: float
    visibility: str
    message: str           # the grader's diagnosis (see runner.CheckResult)
    detail: str = ""       # instructor only
    student_text: str = ""  # what the student's code raised, cleaned; never shown for hidden checks
    diagnosis: str = "shown"  # grading.yml's `diagnosis`: "withheld" keeps a hidden check's message from students
    figure: dict[str, Any] | None = None  # the student's and the expected weights on the book's example (suites/figures.py)
    voided_by: tuple[str, ...] = ()  # the failed checks its grading.yml `requires` names: it passed, but earns nothing
    cause: str = ""           # the misconception its message names (runner.CheckResult.cause): what reports fold by
    unexplained: bool = False  # wrong numbers, no cause named: the part's diagnosis is the likely one
    not_graded: bool = False  # the machine kept it from running (runner.NOT_GRADED): nobody's score


@dataclass
class PartScore:
    """One part's total (results.json's `parts`, with extra_data's problems, seconds and diagnoses)."""
    score: float
    max_score: float
    problem: str = ""     # what stopped the part (runner.PartRun.problem): said once, for all its checks
    seconds: float = 0.0  # the part's wall time
    diagnosis: str = ""   # the cause most failed checks name (runner.part_diagnosis)
    not_graded: str = ""  # why the machine kept it from being graded (runner.NOT_GRADED); "" when graded


@dataclass
class Grade:
    submission: str
    checks: list[ScoredCheck] = field(default_factory=list)
    parts: dict[str, PartScore] = field(default_factory=dict)
    protections: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    output: dict[str, str] = field(default_factory=dict)  # part -> what the student's code printed
    seed: int | None = None                       # the run's secret behind the unseen inputs (instructors only)
    environment_check: dict[str, Any] | None = None  # envcheck.ensure's record: the reference graded here first
    tampering: list[str] = field(default_factory=list)  # reaches into the grader its source writes (instructors only)
    chapter: str = ""                             # the chapter's id (chapter.yml): junit's suite name

    @property
    def score(self) -> float:
        return round(sum(p.score for p in self.parts.values()), 4)

    @property
    def not_graded(self) -> dict[str, str]:
        """{part: why} for the parts the machine kept from being graded (runner.NOT_GRADED): a grade with
        any is no grade at all, in every channel (never a lower score)."""
        return {part: p.not_graded for part, p in self.parts.items() if p.not_graded}

    @property
    def max_score(self) -> float:
        return round(sum(p.max_score for p in self.parts.values()), 4)
