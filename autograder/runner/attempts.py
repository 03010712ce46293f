"""A turn in a child, retried when the machine killed it: one part's checks of one visibility run in the
place's child (reset after the part before) or a fresh one (run_checks), the part's stand-ins put in
first (with_dependencies); a child that died of something its own CPU time and memory do not explain
(sandbox/death.py) runs the turn again in a fresh child, MACHINE_RETRIES times at most."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from autograder.runner.check import CheckCall, run_dependent_check
from autograder.runner.diagnosis import TRESPASS
from autograder.runner.place import Limits, Place, SubmissionContext
from autograder.runner.records import CheckResult, Checks, Fixtures, PartRun
from autograder.sandbox import death
from autograder.sandbox.client import SessionDied
from autograder.student import Student, StudentError
from autograder.suites import dependencies, vocabulary

if TYPE_CHECKING:
    from autograder.sandbox.client import PartChild


@dataclass(frozen=True)
class Turn:
    """One part's checks of one visibility, as a child takes them: the part's run (what they add to),
    the checks, the turn's Limits, whether no part follows in this child (last: it is ended, not reset)
    and whether the checks send hidden inputs (hidden: the child is marked)."""
    run: PartRun
    checks: Checks
    limits: Limits
    last: bool = False
    hidden: bool = False


MACHINE_RETRIES = 2  # fresh children for a part whose child the machine killed, before it is not graded
NOT_GRADED = death.NOT_GRADED


def run_checks(place: Place, run: PartRun, checks: Checks, limits: Limits, fixtures: Fixtures,
               last: bool = False, hidden: bool = False) -> None:
    """Some checks of one part, in the place's child (reset after the part before) or a fresh child of
    its session (a new session when it has died); a crash fails the rest of these checks.
    limits: the turn's Limits; last: no part follows in this child (it is ended, not reset); hidden:
    the checks send hidden inputs (the child is marked: whatever is said of it from then on is a fixed
    phrase, see client.PartChild.saw_hidden and student.StudentError). The place keeps the child when
    it can take the next part (else none).

    A child that died of something its own CPU time and memory do not explain (sandbox/death.py)
    runs the checks again in a fresh child, MACHINE_RETRIES times at most, and what that attempt
    said and used is forgotten. When at least one attempt ended on proof that it was the machine's
    (the session's leader gone, an out-of-memory kill outside the part, a CPU it waited for past a
    far wall clock) and the machine kills every attempt, the part is not graded (never charged).
    When every attempt ended unexplained (a SIGKILL no limit of the part explains, a channel the
    child closed itself), the part dies so in every fresh child: that is the code's, and the last
    attempt is charged with what was seen (a real outside kill is not repeated on each attempt)."""
    why, proved = "", False
    turn = Turn(run, checks, limits, last, hidden)
    for attempt in range(MACHINE_RETRIES + 1):
        mark = (len(run.results), run.cpu_seconds, run.output)
        machine, proof = _attempt(place, turn, fixtures)
        if not machine:
            return
        place.child = None  # that child is ended (_attempt keeps only one that may take the next part)
        proved = proved or proof
        if attempt == MACHINE_RETRIES and not proved:  # the same in every fresh child: the code's
            run.problem = run.problem or f"the {run.part} process {machine} ({SAME_EVERY_TIME})"
            run.timed_out = machine == death.MACHINE_UNMEASURED
            return
        del run.results[mark[0]:]
        run.cpu_seconds, run.output = mark[1], mark[2]
        why = machine
    run.not_graded = run.problem = f"{NOT_GRADED} (its process {why}, {MACHINE_RETRIES + 1} times)"
    run.results += [CheckResult(run.part, n, False, run.not_graded, not_graded=True) for n, _ in checks]


SAME_EVERY_TIME = "the same in each fresh process it was run in again: charged to the code"


def _attempt(place: Place, turn: Turn, fixtures: Fixtures) -> tuple[str, bool]:
    """One try at the turn's checks (run_checks), in the place's child or a fresh one -> (why the machine
    may have ended it: '' when it did not, whether that is proved). The place keeps the child only when
    it may take the next part."""
    run, checks, limits, last, hidden = turn.run, turn.checks, turn.limits, turn.last, turn.hidden
    clock = time.monotonic()
    # idle before any hidden input (its visible turns, its import among them): the hidden turn imports the
    # part's module in a child that has seen no hidden input, before marking it (IMPORT_IDLE)
    import_first = hidden and run.visible_idle > IMPORT_IDLE
    if place.child is not None and import_first and place.child.saw_hidden:
        place.end_child()
    if place.child is not None:
        place.child.next_part(limits.timeout, limits.memory_mb)
    else:
        place.fresh_child(limits)
    assert place.child is not None
    import_first = import_first and not place.child.saw_hidden
    place.child.saw_hidden = place.child.saw_hidden or (hidden and not import_first)
    student, found = with_dependencies(place, run.part, limits, import_own=import_first)
    child = place.child
    assert child is not None
    student.charge_to(run.ledger)
    refused = len(run.ledger.refused)
    run.protections = run.protections or child.protections
    if import_first:
        _import(student, run.part)
    child.saw_hidden = child.saw_hidden or hidden  # a child that replaced one the probe ended, too
    with child.idle_measured() as meter:  # metered only where the child has seen no hidden input
        for name, fn in checks:
            if child.died:
                run.results.append(CheckResult(run.part, name, False, f"not run: the {run.part} process {_ended(child)}"))
                continue
            run.results.append(run_dependent_check(CheckCall(run.part, name, fn, student, fixtures), found))
    run.visible_idle += meter.idle() if not child.saw_hidden else 0.0
    run.seconds += time.monotonic() - clock
    run.cpu_seconds += child.spent() if hasattr(child, "spent") else time.monotonic() - clock  # what its limit counts
    run.cpu_seconds += student.answered_seconds  # the grader's time answering its stand-ins' questions
    if len(run.ledger.refused) > refused and not run.problem:
        run.problem = TRESPASS
    end = {**child.close(), "reusable": False} if last or student.substituted else child.finish()
    run.output += end["output"]
    machine = getattr(child, "machine", "")
    place.child = child if end["reusable"] else None
    if child.died and machine:
        return child.died, machine == death.PROOF
    if child.died and child.died != "closed" and not run.problem:
        run.problem = f"the {run.part} process {_ended(child)}"
        run.timed_out = "timed out" in child.died
    return "", False


# Seconds a part's child may idle (neither on a CPU nor waiting for one, by the grader's meter) in its
# visible turns, where it has seen no hidden input, before its hidden turn imports the part's module in a
# child that has seen none either (import_first; the module's import is among the visible turns' calls):
# importing is the student's code and may sleep or wait, and the idle allowance after a hidden input
# (PartChild.IDLE_AFTER_HIDDEN, for the whole turn) is for what the code does once it has one. A module
# that sleeps in forward instead costs a fresh child, and still times out on the first hidden input.
IMPORT_IDLE = 0.5


def _import(student: Student, part: str) -> None:
    """The part's module imported by the grader's own request; what the import raises is left to the
    checks (they import it again, and say so)."""
    try:
        student.import_module(part)
    except (StudentError, SessionDied):
        pass


def _ended(child: PartChild) -> str:
    """How the child ended, as a student may read it: after a hidden input the fixed phrase of
    vocabulary.death (its flags, never its numbers), else the client's words."""
    return vocabulary.death(child) if child.saw_hidden else child.died


def with_dependencies(place: Place, part: str, limits: Limits,
                      import_own: bool = False) -> tuple[Student, dict[str, str]]:
    """The part's Student on the place's child, with the grader's own code in place of each part it
    uses that is not right on its own (suites/dependencies.py) -> (student, {module: verdict}). A probe
    that ran past its time ended the child: the part goes on in a fresh one (the place's).
    import_own: the part's module, with the student's own modules under it, is imported before the
    stand-ins come (the child keeps them: inside/child.substitute), so that a failed check run again on
    the student's own code (check.run_dependent_check) imports nothing after a hidden input (IMPORT_IDLE)."""
    submission, child = place.submission, place.child
    assert child is not None
    student = _student_on(child, submission)
    used = dependencies.uses(student, part) if not child.died else []
    if not used:
        return student, {}
    probed = [module for module in used if module not in submission.known]
    found = dependencies.verdicts(student, part, submission.known, used)
    if child.died or any(found.get(module) == dependencies.LEAVES for module in probed):  # its thread still runs here
        place.end_child()
        child = place.fresh_child(limits)
        student = _student_on(child, submission)
    student.verdicts = dict(found)
    stand_ins = dependencies.substitutes(found)
    if stand_ins and import_own and not child.died and {"wrong", "raises"} & set(found.values()) \
            and not {"hangs", dependencies.LEAVES} & set(found.values()):
        _import(student, part)
    if stand_ins and not child.died:
        try:
            student.substitute(stand_ins)
        except (StudentError, SessionDied):
            pass
    return student, found


def _student_on(child: PartChild, submission: SubmissionContext) -> Student:
    """The adapter the suites use, on this child, for the submission (its demo lines shared: Student.demo_lines)."""
    student = Student(child, submission.attributes, submission.folder, submission.files, submission.cells)
    student.demo_lines = submission.demo_lines
    return student
