"""One check's verdict: a check (a function of suites/test_<part>.py) called on a Student, whatever it
raises turned into a CheckResult (run_check); a reordered constructor tried again with keywords
(with_keywords); a check where the grader's code stands in for a part tried again on the student's own
code (run_dependent_check)."""
from __future__ import annotations

import inspect
import os
import traceback
from dataclasses import dataclass

from autograder.runner.discovery import fixture
from autograder.runner.records import Check, CheckResult, Fixtures
from autograder.sandbox.client import SessionDied
from autograder.student import Student, StudentError
from autograder.suites import dependencies, expect, vocabulary


@dataclass(frozen=True)
class CheckCall:
    """One check as it is called: its part, name and function, the Student it reaches the code
    through and the fixtures it may ask for (discovery.default_fixtures)."""
    part: str
    name: str
    fn: Check
    student: Student
    fixtures: Fixtures


def run_dependent_check(call: CheckCall, found: dict[str, str]) -> CheckResult:
    """One check; where the grader's code stands in for a part found wrong or raising (not hanging),
    a failed check is run again with the student's own code, which may be written for it (a transfer
    that writes sa_v1.W_q where v1 names its matrix so; exercises that import mha's class under the
    name the student's mha gives it): the better verdict counts. When both fail and only the stand-in
    run raised (the student's module imports a name the grader's stand-in lacks), the student's own
    run's diagnosis is the one shown: it is about their code."""
    student = call.student
    result = run_check(call.part, call.name, call.fn, student, call.fixtures)
    if result.passed or not student.substituted or not {"wrong", "raises"} & set(found.values()):
        return result
    try:
        student.substitute(())
        own = run_check(call.part, call.name, call.fn, student, call.fixtures)
        student.substitute(dependencies.substitutes(found))
    except (StudentError, SessionDied):
        return result
    return own if own.passed or (result.raised and not own.raised) else result


def run_check(part: str, name: str, fn: Check, student: Student, fixtures: Fixtures) -> CheckResult:
    call = CheckCall(part, name, fn, student, fixtures)
    hidden = bool(getattr(student, "saw_hidden", False))
    result = _run_check(call, hidden)
    # a reordered constructor: its parameter names are read from the source by the grader, before any input
    if not result.passed and not result.not_graded and getattr(student, "reordered", None) and student.reordered():
        result = with_keywords(call, result, hidden)
    return result


def with_keywords(call: CheckCall, result: CheckResult, hidden: bool = False) -> CheckResult:
    """A failed check on a submission whose class takes the contract's parameter names in another order
    (read from its source; the positional call raised, or built something else): run again calling those
    classes with keywords, so that the rest of the class is still diagnosed. The order is still the
    mistake (the book's positional calls break): the check stays failed. Passing with keywords, its
    cause is the order (one item however many checks it fails, issue 34 item 4); failing with keywords,
    its cause is the next mistake the keywords reach, and it says both."""
    part, name, student = call.part, call.name, call.student
    student.keywords = True
    try:
        again = _run_check(call, hidden)
    except SessionDied:
        return result
    finally:
        student.keywords = False
    if again.raised and not again.passed:
        return result
    order = "; ".join(f"{cls}.__init__ takes ({', '.join(names)}) where the specification is "
                      f"({', '.join(contract)})" for (_, cls), (names, contract) in student.reordered().items())
    order = f"{order}, so a call in the specified order breaks: keep the specified order"
    if again.passed:
        return CheckResult(part, name, False, f"{result.message}: {order}; called with keywords it passes this check",
                           detail=result.detail, student_text=result.student_text, cause=order, raised=True)
    return CheckResult(part, name, False, f"{result.message}: {order}; called with keywords: {again.message}",
                       detail=again.detail, student_text=result.student_text, cause=again.cause,
                       unexplained=again.unexplained, figure=again.figure, raised=True)


def _run_check(call: CheckCall, hidden: bool = False) -> CheckResult:
    """One check -> CheckResult. hidden: the child has seen a hidden input, so what a student reads of
    it comes from the fixed vocabulary (suites/vocabulary.py), chosen by the grader; the formatted
    message goes to the instructor's detail."""
    part, name, fn, student, fixtures = call.part, call.name, call.fn, call.student, call.fixtures
    try:
        kwargs = {p: student if p == "student" else fixture(fixtures, p, part, name)
                  for p in inspect.signature(fn).parameters}
        fn(**kwargs)
        return CheckResult(part, name, True)
    except expect.Note as e:  # passed, with something to tell the student
        return CheckResult(part, name, True, vocabulary.note_after_hidden(str(e)) if hidden else str(e))
    except AssertionError as e:
        message, detail = str(e) or "check failed", str(getattr(e, "detail", ""))
        cause, unexplained = str(getattr(e, "cause", "")), getattr(e, "unexplained", False) is True
        if hidden:
            detail = "; ".join(filter(None, (message, detail)))
            message, cause = vocabulary.after_hidden(e)
        return CheckResult(part, name, False, message, detail=detail,
                           student_text=str(getattr(e, "student_text", "")), cause=cause, unexplained=unexplained)
    except StudentError as e:
        if hidden:
            # an unfinished function named from the grader's own request (StudentError.called), so that its
            # visible and hidden checks are one item; anything else the child raised: the fixed phrase
            said = (e.explain() if e.called else vocabulary.NOT_IMPLEMENTED) if e.not_implemented else vocabulary.RAISED
            return CheckResult(part, name, False, said, detail=e.explain(), student_text=e.student_text(), raised=True)
        return CheckResult(part, name, False, e.explain(), student_text=e.student_text(), raised=True)
    except SessionDied as e:
        if hidden:
            return CheckResult(part, name, False, f"the {part} process {vocabulary.death(student.session)}",
                               detail=f"the {part} process {e}")
        return CheckResult(part, name, False, f"the {part} process {e}")
    except Exception as e:  # a bug in the check itself: fail loudly, never silently pass
        where = traceback.extract_tb(e.__traceback__)[-1]
        said = (f"grader error in check {name} ({type(e).__name__}: {e}; "
                f"{os.path.basename(where.filename)}:{where.lineno})")  # no grader paths in messages
        if hidden:  # its text may hold what the child answered: the instructor's
            return CheckResult(part, name, False, f"grader error in check {name}", detail=said)
        return CheckResult(part, name, False, said)
