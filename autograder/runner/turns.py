"""Every check of one staged submission, in the order a child takes them (run_submission): one turn per
part and visibility, visible checks first and hidden ones last, the pictures taken between them; then
what the part's results say together (import_failure, diagnosis) and the pictures given to their checks."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from autograder import import_failure
from autograder.runner.attempts import run_checks
from autograder.runner.diagnosis import TRESPASS, charge_trespass, part_diagnosis
from autograder.runner.pictures import attach_figures, take_pictures
from autograder.runner.place import Limits, Place, SubmissionContext
from autograder.runner.records import CheckResult, Checks, Figure, Fixtures, PartRun
from autograder.student import source_attributes

if TYPE_CHECKING:
    from autograder.rubric import Part, Rubric
    from autograder.sandbox.client import Sandbox
    from autograder.submission import Staged


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
        pictures = take_pictures(place, runs, rubric, fixtures, staged, keep=False)
    place.close()
    for run in runs.values():
        visible = {n for n, check in rubric.parts[run.part].checks.items() if check.visibility == "visible"}
        import_failure.explain(run, staged.folder, visible, staged.cells)  # a module that does not import: one problem
        note = import_failure.demo_note(context.demo_lines, run.part, staged.folder, staged.cells)
        run.notes += [note] if note else []
        part_diagnosis(run, {n for n, check in rubric.parts[run.part].checks.items()
                             if check.diagnosis == "withheld"})
    attach_figures(runs, rubric, pictures)
    for run in runs.values():
        charge_trespass(run)
    return runs


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
