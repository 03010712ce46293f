"""Run the hidden suites on one staged submission, part by part, in one sandboxed child (visible checks first).

A check is a function `test_<name>(student, ...)` in autograder/suites/test_<part>.py. It reaches
the student's code only through `student` (student.py: remote calls into the sandboxed child)
and judges the plain data that comes back here, raising AssertionError with a message written
for the student. Fixtures a check can ask for by parameter name: `student`, `book` (the book's
printed values), `rng` (a seeded torch.Generator for fresh inputs).
"""
from __future__ import annotations

import importlib
import inspect
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from autograder import import_failure, stand_ins
from autograder.sandbox import death
from autograder.sandbox.client import SessionDied
from autograder.secret import check_seed, draw_secret
from autograder.student import Student, StudentError, source_attributes
from autograder.suites import dependencies, expect, vocabulary

if TYPE_CHECKING:
    from autograder.rubric import Part, Rubric
    from autograder.sandbox.client import PartChild, Sandbox, Session
    from autograder.submission import Staged

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
    # what answering its children's stand-in questions cost the grader, and the questions refused because
    # the child was not given that class (stand_ins.py: the part is charged, the instructor told)
    ledger: stand_ins.Ledger = field(default_factory=lambda: stand_ins.Ledger())


@dataclass
class SubmissionContext:
    """What the runner needs of a staged submission while it runs its parts."""
    folder: str | Path
    key: str | None          # the submission's key (its uid in the sandbox); None: its folder
    attributes: frozenset[str]  # the names its modules define (student.source_attributes)
    known: dict[str, str] = field(default_factory=dict)  # its verdicts on the parts other parts use (suites/dependencies.py)
    files: frozenset[str] | None = None  # the graded chapter's module files (None: this repository's chapter's)
    cells: dict[str, tuple[str, int]] = field(default_factory=dict)  # its modules' notebook cells (Staged.cells)


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


def discover(parts: tuple[str, ...] | list[str] | None = None) -> dict[str, Checks]:
    """part -> [(check name, function)] in the order they are written, for the chapter's parts (the
    Engine's chapter, through grading.load_rubric; None: this repository's, chapter.current())."""
    if parts is None:
        from autograder import chapter

        parts = chapter.current().parts
    suites: dict[str, Checks] = {}
    for part in parts:
        module = importlib.import_module(f"autograder.suites.test_{part}")
        checks: Checks = [(name[5:], fn) for name, fn in vars(module).items()
                  if name.startswith("test_") and inspect.isfunction(fn) and fn.__module__ == module.__name__]
        suites[part] = sorted(checks, key=lambda item: item[1].__code__.co_firstlineno)
    return suites


VISIBILITY_ORDER = ("visible", "after_due_date", "hidden")


def run_submission(sandbox: Sandbox, staged: Staged, rubric: Rubric, suites: dict[str, Checks], fixtures: Fixtures,
                   parts: list[str] | None = None, key: str | None = None, figures: bool = True) -> dict[str, PartRun]:
    """Every check of a staged submission -> {part: PartRun}.

    The checks run in one sandboxed session, one visibility after the other (visible, then
    after_due_date, then hidden), part by part, taking turns in one child: a child sees a hidden
    input only after every check a student may see has run, so no text a student may see was
    produced by code that had seen a hidden input. After each part the child forgets it
    (inside/part_reset.py) and is replaced by a fresh one when anything of the part is left
    over, when the part crashed, hung or ran out of memory (costing that part only), or when the
    session died. A part's time limit is shared by its visibilities: once a part has timed out,
    its later checks are not run.
    """
    runs = {name: PartRun(name) for name in rubric.parts if parts is None or name in parts}
    context = SubmissionContext(staged.folder, key, source_attributes(staged.folder),
                                files=frozenset(f"{name}.py" for name in rubric.parts), cells=dict(staged.cells))
    turns: list[tuple[PartRun, Part, Checks]] = []  # (run, part, its checks of one visibility), in the order they run
    for visibility in VISIBILITY_ORDER:
        for name, run in runs.items():
            part = rubric.parts[name]
            checks = [(n, fn) for n, fn in suites[name] if n in part.checks and part.checks[n].visibility == visibility]
            if checks:
                turns.append((run, part, checks))
    place = Place(sandbox, context)
    pictures: dict[str, Figure | None] | None = None if figures else {}
    for at, (run, part, checks) in enumerate(turns):
        hidden = any(part.checks[n].visibility == "hidden" for n, _ in checks)
        if hidden and pictures is None:  # the pictures are taken before any hidden input exists
            place.end_child()
            pictures = take_pictures(place, runs, rubric, fixtures, staged)
        missing = staged.missing(run.part)
        if missing or run.timed_out or run.not_graded or run.problem == TRESPASS:
            reason = missing or run.not_graded or f"not run: {run.problem}"
            run.problem = run.problem or missing
            run.results += [CheckResult(run.part, n, False, reason, not_graded=bool(run.not_graded)) for n, _ in checks]
            continue
        ahead = {r.part: p.timeout - r.cpu_seconds for r, p, _ in turns[at:] if not r.timed_out}
        limits = Limits(part.timeout - run.cpu_seconds, part.memory_mb, sum(ahead.values()))
        run_checks(place, run, checks, limits, fixtures, last=at == len(turns) - 1, hidden=hidden)
    place.end_child()
    if pictures is None:  # no hidden turn: the pictures after every check, still before any hidden input
        pictures = take_pictures(place, runs, rubric, fixtures, staged)
    place.close()
    for run in runs.values():
        visible = {n for n, check in rubric.parts[run.part].checks.items() if check.visibility == "visible"}
        import_failure.explain(run, staged.folder, visible, staged.cells)  # a module that does not import: one problem
        part_diagnosis(run, {n for n, check in rubric.parts[run.part].checks.items()
                             if check.diagnosis == "withheld"})
    attach_figures(runs, rubric, pictures)
    for run in runs.values():
        charge_trespass(run)
    return runs


TRESPASS = ("it asked the grader to compute with the grader's own classes, which the grader had not given "
            "this part: the part earns no points")


def charge_trespass(run: PartRun) -> None:
    """A part whose child asked about a class the grader had not given it (stand_ins.NotGiven): every
    check of the part fails with TRESPASS, whatever it answered (it may have passed on the grader's
    own work); the questions are listed for the instructor (grading: Grade.tampering)."""
    if not run.ledger.refused:
        return
    run.problem = TRESPASS
    for result in run.results:
        if not result.not_graded:
            result.passed, result.message, result.cause, result.figure = False, TRESPASS, "", None
            result.student_text, result.unexplained = "", False


def part_diagnosis(run: PartRun, withheld: set[str] | frozenset[str] = frozenset()) -> None:
    """One bug, one explanation: the cause named by most of the part's failed checks is the part's
    diagnosis (causes named equally often are all given, as possibilities); a failed check that could
    name none (its numbers are just wrong) is told that cause as the likely one. A cause that is only
    one of several mistakes with the same numbers (expect.SEVERAL) counts where no check names one
    cause alone: a softmax over dim 0 named by the weights' checks explains the context vectors'
    "the softmax over dim 0, or the weights transposed". withheld: the checks whose diagnosis
    grading.yml withholds; a diagnosis only they name is the instructor's (class report), never
    told to a check a student reads."""
    causes = [result.cause for result in run.results if not result.passed and result.cause]
    single = [cause for cause in causes if not cause.startswith(expect.SEVERAL)]
    counts: dict[str, int] = {}
    for cause in single or causes:
        counts[cause] = counts.get(cause, 0) + 1
    top = [cause for cause, n in counts.items() if n == max(counts.values(), default=0)]
    run.diagnosis = top[0] if len(top) == 1 else ("one of: " + "; or ".join(top[:3]) if top else "")
    said = {result.cause for result in run.results if not result.passed and result.name not in withheld}
    shown = all(cause in said for cause in top)  # each cause it names, a check a student reads names too
    for result in run.results:
        if run.diagnosis and shown and result.unexplained and not result.passed:
            result.message += f" (most likely the cause named by this part's other failed checks: {run.diagnosis})"


FIGURE_SECONDS = 10  # at most, for all of a submission's pictures: a picture never costs a part its time or points


def picture_parts(runs: dict[str, PartRun], rubric: Rubric, staged: Staged | None = None) -> list[str]:
    """The parts a picture may be drawn for: a probe, a check about attention weights whose diagnosis
    students may read, the module there, no crash or time-out so far."""
    from autograder.suites import figures

    found = []
    for name, run in runs.items():
        checks = rubric.parts[name].checks
        shown = [n for n in figures.FIGURE_CHECKS.get(name, ())
                 if n in checks and checks[n].diagnosis != "withheld"]
        if shown and name in figures.PROBES and not run.problem and not (staged and staged.missing(name)):
            found.append(name)
    return found


def take_pictures(place: Place, runs: dict[str, PartRun], rubric: Rubric, fixtures: Fixtures,
                  staged: Staged | None = None) -> dict[str, Figure | None]:
    """Each part's probe (suites/figures.py) on the book's example, in a fresh child of the place's
    session (one for every probe, another only after a probe ended it), BEFORE the grader has sent any
    hidden input anywhere (issue 37.7: a picture drawn after the hidden checks could carry what they
    left, in container mode under /tmp for a later session of the same uid) -> {part: figure or None}.
    A probe that draws nothing (right weights, a crash) gives None. The probes' time, output and any
    crash count for nothing; together they get FIGURE_SECONDS. The place is left without a child."""
    from autograder.suites import figures

    pictures: dict[str, Figure | None] = {}
    names = picture_parts(runs, rubric, staged)
    if not names:
        return pictures
    place.end_child()
    deadline = time.monotonic() + FIGURE_SECONDS
    memory_mb = max(rubric.parts[name].memory_mb for name in names)
    for name in names:
        left = deadline - time.monotonic()
        if left < 1:
            break
        if place.child is None or place.child.died:
            place.end_child()
            try:
                place.fresh_child(Limits(left, memory_mb, left))
            except Exception:  # a sandbox that fails now costs the pictures only
                place.child = None
                break
        assert place.child is not None
        if not place.child.died:
            pictures[name] = figures.take(figures.PROBES[name], Student(place.child), fixtures["book"]())
    place.end_child()
    return pictures


def attach_figures(runs: dict[str, PartRun], rubric: Rubric, pictures: dict[str, Figure | None]) -> None:
    """Each part's picture (take_pictures) goes to the first failed check about attention weights (a
    visible one first; never one whose diagnosis grading.yml withholds, nor a part that crashed)."""
    from autograder.suites import figures

    for name, run in runs.items():
        checks = rubric.parts[name].checks
        failed = [r for r in run.results if not r.passed and r.name in figures.FIGURE_CHECKS.get(name, ())
                  and checks[r.name].diagnosis != "withheld"]
        if failed and pictures.get(name) and not run.problem:
            min(failed, key=lambda r: checks[r.name].visibility != "visible").figure = pictures[name]


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
    for attempt in range(MACHINE_RETRIES + 1):
        mark = (len(run.results), run.cpu_seconds, run.output)
        machine, proof = _attempt(place, run, checks, limits, fixtures, last, hidden)
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


def _attempt(place: Place, run: PartRun, checks: Checks, limits: Limits, fixtures: Fixtures,
             last: bool, hidden: bool) -> tuple[str, bool]:
    """One try at the checks (run_checks), in the place's child or a fresh one -> (why the machine may
    have ended it: '' when it did not, whether that is proved). The place keeps the child only when it
    may take the next part."""
    clock = time.monotonic()
    if place.child is not None:
        place.child.next_part(limits.timeout, limits.memory_mb)
    else:
        place.fresh_child(limits)
    assert place.child is not None
    place.child.saw_hidden = place.child.saw_hidden or hidden
    student, found = with_dependencies(place, run.part, limits)
    child = place.child
    assert child is not None
    student.charge_to(run.ledger)
    refused = len(run.ledger.refused)
    run.protections = run.protections or child.protections
    child.saw_hidden = child.saw_hidden or hidden  # a child that replaced one the probe ended, too
    for name, fn in checks:
        if child.died:
            run.results.append(CheckResult(run.part, name, False, f"not run: the {run.part} process {_ended(child)}"))
            continue
        run.results.append(run_dependent_check(run.part, name, fn, student, fixtures, found))
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


def _ended(child: PartChild) -> str:
    """How the child ended, as a student may read it: after a hidden input the fixed phrase of
    vocabulary.death (its flags, never its numbers), else the client's words."""
    return vocabulary.death(child) if child.saw_hidden else child.died


def with_dependencies(place: Place, part: str, limits: Limits) -> tuple[Student, dict[str, str]]:
    """The part's Student on the place's child, with the grader's own code in place of each part it
    uses that is not right on its own (suites/dependencies.py) -> (student, {module: verdict}). A probe
    that ran past its time ended the child: the part goes on in a fresh one (the place's)."""
    submission, child = place.submission, place.child
    assert child is not None
    student = Student(child, submission.attributes, submission.folder, submission.files, submission.cells)
    if part not in dependencies.DEPENDS or child.died:
        return student, {}
    found = dependencies.verdicts(student, part, submission.known)
    if child.died:
        place.end_child()
        child = place.fresh_child(limits)
        student = Student(child, submission.attributes, submission.folder, submission.files, submission.cells)
    stand_ins = dependencies.substitutes(found)
    if stand_ins and not child.died:
        try:
            student.substitute(stand_ins)
        except (StudentError, SessionDied):
            pass
    return student, found


def run_dependent_check(part: str, name: str, fn: Check, student: Student, fixtures: Fixtures,
                        found: dict[str, str]) -> CheckResult:
    """One check; where the grader's code stands in for a part found wrong or raising (not hanging),
    a failed check is run again with the student's own code, which may be written for it (a transfer
    that writes sa_v1.W_q where v1 names its matrix so; exercises that import mha's class under the
    name the student's mha gives it): the better verdict counts. When both fail and only the stand-in
    run raised (the student's module imports a name the grader's stand-in lacks), the student's own
    run's diagnosis is the one shown: it is about their code."""
    result = run_check(part, name, fn, student, fixtures)
    if result.passed or not student.substituted or not {"wrong", "raises"} & set(found.values()):
        return result
    try:
        student.substitute(())
        own = run_check(part, name, fn, student, fixtures)
        student.substitute(dependencies.substitutes(found))
    except (StudentError, SessionDied):
        return result
    return own if own.passed or (result.raised and not own.raised) else result


def run_part(sandbox: Sandbox, submission: str, part: str, checks: Checks, limits: Any,
             fixtures: Fixtures, missing: str = "") -> PartRun:
    """All given checks of one part in one fresh session (tests and tools that need no rubric)."""
    run = PartRun(part)
    if missing:
        run.problem = missing
        run.results = [CheckResult(part, name, False, missing) for name, _ in checks]
        return run
    place = Place(sandbox, SubmissionContext(submission, None, source_attributes(submission)))
    run_checks(place, run, checks, Limits(limits.timeout, limits.memory_mb, limits.timeout), fixtures)
    place.close()
    return run


def run_check(part: str, name: str, fn: Check, student: Student, fixtures: Fixtures) -> CheckResult:
    hidden = bool(getattr(student, "saw_hidden", False))
    result = _run_check(part, name, fn, student, fixtures, hidden)
    # a reordered constructor: its parameter names are read from the source by the grader, before any input
    if not result.passed and not result.not_graded and getattr(student, "reordered", None) and student.reordered():
        result = with_keywords(part, name, fn, student, fixtures, result, hidden)
    return result


def with_keywords(part: str, name: str, fn: Check, student: Student, fixtures: Fixtures,
                  result: CheckResult, hidden: bool = False) -> CheckResult:
    """A failed check on a submission whose class takes the contract's parameter names in another order
    (read from its source; the positional call raised, or built something else): run again calling those
    classes with keywords, so that the rest of the class is still diagnosed. The order is still the
    mistake (the book's positional calls break): the check stays failed. Passing with keywords, its
    cause is the order (one item however many checks it fails, issue 34 item 4); failing with keywords,
    its cause is the next mistake the keywords reach, and it says both."""
    student.keywords = True
    try:
        again = _run_check(part, name, fn, student, fixtures, hidden)
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


def _run_check(part: str, name: str, fn: Check, student: Student, fixtures: Fixtures,
               hidden: bool = False) -> CheckResult:
    """One check -> CheckResult. hidden: the child has seen a hidden input, so what a student reads of
    it comes from the fixed vocabulary (suites/vocabulary.py), chosen by the grader; the formatted
    message goes to the instructor's detail."""
    try:
        kwargs = {p: student if p == "student" else _fixture(fixtures, p, part, name)
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


def _fixture(fixtures: Fixtures, parameter: str, part: str, name: str) -> Any:
    if parameter in ("seed", "rng"):
        return fixtures[parameter]((part, name))
    return fixtures[parameter]()


def default_fixtures(secret: int | None = None, key: str = "") -> Fixtures:
    """Fixture factories, called afresh for every check that names them: `book` (the book's printed
    values), and `seed` / `rng` (an int and a torch.Generator for the check's unseen inputs, drawn
    from the run's secret, the submission and the check's name: a table of answers captured in one
    run is worth nothing in the next)."""
    from autograder.suites import book

    values = book.values()
    if secret is None:  # the run's secret: the engine passes its own; else the environment's, or a fresh draw
        from autograder.settings import from_environment

        secret = from_environment().seed
        secret = draw_secret() if secret is None else secret
    secret = int(secret)
    fixtures: Fixtures = {"book": lambda: values, "secret": secret, "key": key}
    fixtures["seed"] = lambda check=("", ""): check_seed(secret, key, *check)
    fixtures["rng"] = lambda check=("", ""): torch.Generator().manual_seed(check_seed(secret, key, *check))
    return fixtures
