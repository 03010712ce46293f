"""What running the checks produces: one check's verdict (CheckResult) and one part's run (PartRun),
and the names the runner's modules give a check, a suite and the fixtures."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from autograder import stand_ins

Check = Callable[..., object]  # a suite's test_<name>(student, ...): what it returns is not read
Checks = list[tuple[str, Check]]  # (check name, function), in the order they run
Fixtures = dict[str, Any]  # fixture name -> its factory (and "secret", "key": plain values)
Figure = dict[str, Any]  # suites/figures.py's picture: JSON-ready data for the reports


@dataclass
class CheckResult:
    """One check's verdict. `message` is the grader's own words for the student (the misconception,
    never a hidden input, seed or expected value); `detail` is for the instructor only (values on
    hidden inputs); `student_text` is a cleaned excerpt of what the student's code raised, which a
    student may see only for a check whose inputs were visible ones."""
    part: str
    name: str
    passed: bool
    message: str = ""
    detail: str = ""
    student_text: str = ""
    figure: Figure | None = None  # the student's and the expected weights on public inputs (suites/figures.py)
    cause: str = ""      # the misconception its message names (expect.Mismatch.cause), if any
    unexplained: bool = False  # its values are wrong and it could name no cause (part_diagnosis may)
    not_graded: bool = False   # the machine, not the code, kept it from running (NOT_GRADED)
    raised: bool = False       # it failed because the code raised (not on a judgement of its values)


@dataclass
class PartRun:
    part: str
    results: list[CheckResult] = field(default_factory=list)
    seconds: float = 0.0
    cpu_seconds: float = 0.0    # the child's CPU time: what the part's time limit counts (not the machine's load)
    output: str = ""            # what the student's code printed (capped)
    protections: list[str] = field(default_factory=list)
    problem: str = ""           # set when the part's process died or could not start
    timed_out: bool = False     # the part used up its time limit: its later checks are not run
    diagnosis: str = ""         # the cause that explains most of its failed checks (part_diagnosis)
    not_graded: str = ""        # why the part was not graded (NOT_GRADED): it is scored by nobody
    notes: list[str] = field(default_factory=list)  # for the student, costing nothing (demo lines skipped at import)
    visible_idle: float = 0.0   # seconds its child idled by its own choice before any hidden input (attempts.IMPORT_IDLE)
    # what answering its children's stand-in questions cost the grader, and the questions refused because
    # the child was not given that class (stand_ins.py: the part is charged, the instructor told)
    ledger: stand_ins.Ledger = field(default_factory=lambda: stand_ins.Ledger())
