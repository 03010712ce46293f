"""Run the hidden suites on one staged submission, part by part, each part in its own child.

A check is a function `test_<name>(student, ...)` in autograder/suites/test_<part>.py. It reaches
the student's code only through `student` (student.py: remote calls into the sandboxed child)
and judges the plain data that comes back here, raising AssertionError with a message written
for the student. Fixtures a check can ask for by parameter name: `student`, `book` (the book's
printed values), `rng` (a seeded torch.Generator for fresh inputs).
"""
import importlib
import inspect
import time
import traceback
from dataclasses import dataclass, field

import torch

from autograder import PARTS
from autograder.sandbox.client import SessionDied
from autograder.student import Student, StudentError


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


@dataclass
class PartRun:
    part: str
    results: list = field(default_factory=list)
    seconds: float = 0.0
    output: str = ""            # what the student's code printed (capped)
    protections: list = field(default_factory=list)
    problem: str = ""           # set when the part's process died or could not start


def discover(parts=PARTS):
    """part -> [(check name, function)] in the order they are written."""
    suites = {}
    for part in parts:
        module = importlib.import_module(f"autograder.suites.test_{part}")
        checks = [(name[5:], fn) for name, fn in vars(module).items()
                  if name.startswith("test_") and inspect.isfunction(fn) and fn.__module__ == module.__name__]
        suites[part] = sorted(checks, key=lambda item: item[1].__code__.co_firstlineno)
    return suites


def run_part(sandbox, submission, part, checks, limits, fixtures, missing=""):
    """All checks of one part in one fresh child; a crash fails the rest of this part only."""
    run = PartRun(part)
    started = time.monotonic()
    if missing:
        run.problem = missing
        run.results = [CheckResult(part, name, False, missing) for name, _ in checks]
        return run
    session = sandbox.open(submission, limits.timeout, limits.memory_mb)
    run.protections = session.protections
    student = Student(session)
    for name, fn in checks:
        if session.died:
            run.results.append(CheckResult(part, name, False, f"not run: the {part} process {session.died}"))
            continue
        run.results.append(run_check(part, name, fn, student, fixtures))
    end = session.close()
    run.output = end.get("output", "")
    run.problem = f"the {part} process {session.died}" if session.died else ""
    run.seconds = time.monotonic() - started
    return run


def run_check(part, name, fn, student, fixtures):
    try:
        kwargs = {p: student if p == "student" else fixtures[p]() for p in inspect.signature(fn).parameters}
        fn(**kwargs)
        return CheckResult(part, name, True)
    except AssertionError as e:
        return CheckResult(part, name, False, str(e) or "check failed", detail=str(getattr(e, "detail", "")),
                           student_text=str(getattr(e, "student_text", "")))
    except StudentError as e:
        return CheckResult(part, name, False, e.explain(), student_text=e.student_text())
    except SessionDied as e:
        return CheckResult(part, name, False, f"the {part} process {e}")
    except Exception as e:  # a bug in the check itself: fail loudly, never silently pass
        where = traceback.extract_tb(e.__traceback__)[-1]
        return CheckResult(part, name, False,
                           f"grader error in check {name} ({type(e).__name__}: {e}; {where.filename}:{where.lineno})")


def default_fixtures():
    """Fixture factories, called afresh for every check that names them."""
    from autograder.suites import book

    values = book.values()
    return {"book": lambda: values, "rng": lambda: torch.Generator().manual_seed(20240603)}
