"""Run the hidden suites on one staged submission, part by part, in one sandboxed child (visible checks first).

A check is a function `test_<name>(student, ...)` in autograder/suites/test_<part>.py. It reaches
the student's code only through `student` (student.py: remote calls into the sandboxed child)
and judges the plain data that comes back here, raising AssertionError with a message written
for the student. Fixtures a check can ask for by parameter name: `student`, `book` (the book's
printed values), `rng` (a seeded torch.Generator for fresh inputs).

The path, top-down (each module names what it is):
    turns.py      run_submission: the submission's turns (a part's checks of one visibility), visible
                  first, hidden last, the pictures between them; run_part (one part, no rubric)
    attempts.py   run_checks: a turn in the place's child, retried in a fresh one when the machine
                  killed it (MACHINE_RETRIES; NOT_GRADED); with_dependencies puts the stand-ins in
    place.py      Place (the sandbox's door, the session, the child that takes the next turn),
                  SubmissionContext, Limits: the child's lifecycle
    check.py      run_check: one check's verdict (CheckCall), again with keywords or the student's own code
    diagnosis.py  part_diagnosis (the cause most failed checks name), charge_trespass
    pictures.py   take_pictures (before any hidden input), attach_figures
    discovery.py  discover (the checks of the chapter's parts), default_fixtures
    records.py    CheckResult, PartRun: what a run produces
"""
from autograder.runner.attempts import MACHINE_RETRIES, NOT_GRADED, SAME_EVERY_TIME, Turn, run_checks, with_dependencies
from autograder.runner.check import CheckCall, run_check, run_dependent_check, with_keywords
from autograder.runner.diagnosis import TRESPASS, charge_trespass, part_diagnosis
from autograder.runner.discovery import default_fixtures, discover, fixture
from autograder.runner.pictures import FIGURE_SECONDS, attach_figures, picture_parts, take_pictures
from autograder.runner.place import Limits, Place, SubmissionContext
from autograder.runner.records import Check, CheckResult, Checks, Figure, Fixtures, PartRun
from autograder.runner.turns import VISIBILITY_ORDER, run_part, run_submission

__all__ = [
    "FIGURE_SECONDS", "MACHINE_RETRIES", "NOT_GRADED", "SAME_EVERY_TIME", "TRESPASS", "VISIBILITY_ORDER", "Check",
    "CheckCall", "CheckResult", "Checks", "Figure", "Fixtures", "Limits", "PartRun", "Place", "SubmissionContext",
    "Turn", "attach_figures", "charge_trespass", "default_fixtures", "discover", "fixture", "part_diagnosis",
    "picture_parts", "run_check", "run_checks", "run_dependent_check", "run_part", "run_submission",
    "take_pictures", "with_dependencies", "with_keywords",
]
