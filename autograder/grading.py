"""From a submission to a grade: stage -> run each part's checks in the sandbox -> score.

    result = grade_submission("path/to/folder", rubric, suites, sandbox)

The returned Grade holds one ScoredCheck per rubric check, part totals, the sandbox's
protections and anything staging had to say (the records: scores.py, under these names here too);
autograder/reports/ turns it into tables and files.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autograder import chapter as chapter_mod
from autograder import rubric as rubric_mod
from autograder import runner, scratch
from autograder.rubric import Rubric
from autograder.scores import Grade, PartScore, ScoredCheck
from autograder.submission import stage

if TYPE_CHECKING:
    from autograder.chapter import Chapter

__all__ = ["GATED", "NOT_GRADED_MESSAGE", "Grade", "PartScore", "ScoredCheck", "gated", "grade_submission",
           "load_rubric", "not_graded_problem", "score_part", "tampering_in"]

NOT_GRADED_MESSAGE = ("This submission was not graded: the machine that graded it was overloaded (its processes were "
                      "killed or kept waiting by something other than your code), so no score was recorded. This is "
                      "not about your code; it will be graded again.")


def not_graded_problem(grade: Grade) -> str:
    """The instructor's one line for a grade with parts the machine kept from being graded ('' when none)."""
    found = grade.not_graded
    return f"{runner.NOT_GRADED} (parts: {', '.join(found)}): graded again on the next run" if found else ""


def __getattr__(name: str) -> Any:
    """RUBRIC_PATH: this repository's grading.yml (chapter.current()), read on first use, for tools
    and tests; the grader's own path takes the rubric from the Chapter it was given."""
    if name == "RUBRIC_PATH":
        return chapter_mod.current().rubric
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_rubric(path: str | Path | None = None, chapter: Chapter | None = None) -> tuple[Rubric, dict[str, list[Any]]]:
    """The rubric at path (default: the chapter's) checked against the suites of the chapter's parts
    (runner.discover). chapter: the Engine's; None: this repository's (chapter.current())."""
    chapter = chapter or chapter_mod.current()
    suites = runner.discover(chapter.parts)
    path = chapter.rubric if path is None else path
    return rubric_mod.load(path, {part: [name for name, _ in checks] for part, checks in suites.items()}), suites


def grade_submission(path: str | Path, rubric: Rubric, suites: dict[str, list[Any]], sandbox: Any,
                     fixtures: dict[str, Any] | None = None, parts: list[str] | None = None, seed: int | None = None,
                     figures: bool = True, environment_check: dict[str, Any] | None = None,
                     chapter: Chapter | None = None, cells: dict[str, tuple[str, int]] | None = None) -> Grade:
    """Grade the submission at path; parts (names) limits grading to those parts of the rubric.

    seed: the run's secret (secret.draw_secret() when None); kept in grade.seed, for instructors only.
    figures: draw the pictures of failed weight checks (runner.take_pictures, before any hidden input); False where nobody sees them.
    environment_check: envcheck.ensure's record for this sandbox (engine.Engine passes it), kept in the grade.
    chapter: the chapter graded (the Engine's; None: this repository's): its parts are what staging looks for.
    cells: {module: (notebook, cell number)} for modules a caller took from notebooks before (nbgrader's
    preprocessor writes them as .py files): their errors name the cell (Staged.cells), as staging's own would.
    """
    from autograder import source_reading, stand_ins

    chapter = chapter or chapter_mod.current()
    key = os.path.basename(os.path.normpath(str(path)))
    fixtures = fixtures or runner.default_fixtures(seed, key)
    with scratch.folder("staged") as tmp:  # named after this process: swept if it is killed (scratch.sweep)
        staged = stage(path, tmp, chapter.parts)
        staged.cells.update({module: cell for module, cell in (cells or {}).items() if module in staged.found})
        # the submission by its name: reports never show the grader's own paths
        grade = Grade(staged.source, notes=list(staged.notes), seed=fixtures.get("secret"),
                      environment_check=environment_check, chapter=chapter.id)
        # each module's source parsed once for this submission; the stand-ins are the chapter's reference
        with source_reading.per_submission(), stand_ins.reference(chapter.solutions):
            grade.tampering = tampering_in(staged.folder)
            runs = runner.run_submission(sandbox, staged, rubric, suites, fixtures, parts, key=str(path),
                                         figures=figures)
        for part_name, run in runs.items():
            grade.protections = grade.protections or run.protections
            grade.tampering += [f"{part_name}: {said}" for said in dict.fromkeys(run.ledger.refused)][:20]
            if run.output:
                grade.output[part_name] = run.output
            score_part(grade, rubric.parts[part_name], run)
            grade.notes += [f"{part_name}: {note}" for note in run.notes]
    return grade


def tampering_in(folder: str | Path) -> list[str]:
    """What the submission's source writes that reaches into the grader (dispatch modes, frames,
    builtins, the counting machinery, the grader's modules), read here (source_reading.py): for
    the instructor, in results.json's extra_data and the batch's report; it costs no point by itself."""
    from autograder import source_reading

    sources = {}
    for path in sorted(Path(folder).glob("*.py"))[:source_reading.MAX_MODULES]:
        try:
            sources[path.stem] = source_reading.module_text(path)
        except OSError:
            continue
    return source_reading.tampering(sources)


def score_part(grade: Grade, part: rubric_mod.Part, run: runner.PartRun) -> None:
    by_name = {r.name: r for r in run.results}
    group_share = {name: points / len(members) for name, (points, members) in part.groups.items()}
    total = 0.0
    for check in part.checks.values():
        # a rubric cut down to some checks (tests, tools) gates only on the checks it ran
        required = [by_name[r] for r in check.requires if r in by_name]
        result = gated(by_name[check.name], required)
        voided_by = tuple(r.name for r in required if not r.passed) if result is not by_name[check.name] else ()
        worth = group_share[check.group] if check.group else check.points
        earned = worth if result.passed else 0.0
        if result.passed and result.message:  # a passed check's note (suites.expect.Note) for the student
            named = f"{part.name} / {check.name}" if check.visibility == "visible" else part.name  # hidden: unnamed
            grade.notes.append(f"{named}: {result.message}")
        total += earned
        grade.checks.append(ScoredCheck(part.name, check.name, result.passed, round(earned, 4),
                                        round(worth, 4), check.visibility, result.message,
                                        result.detail, result.student_text, check.diagnosis, figure=result.figure,
                                        voided_by=voided_by, cause=result.cause, unexplained=result.unexplained,
                                        not_graded=result.not_graded))
    grade.parts[part.name] = PartScore(round(total, 4), round(part.max_score, 4), problem=run.problem,
                                       seconds=round(run.seconds, 3), diagnosis=run.diagnosis, not_graded=run.not_graded)


GATED = ("passes here, but the same code fails the checks on inputs only the grader knows: this check earns its "
         "points only together with them (the book's printed values alone, or what the code says of itself, "
         "are worth nothing)")


def gated(result: runner.CheckResult, required: list[runner.CheckResult]) -> runner.CheckResult:
    """A passed check whose grading.yml `requires` lists a check that failed counts as failed, with a
    fixed message (the required checks' own messages say what is wrong)."""
    if not result.passed or all(r.passed for r in required):
        return result
    return runner.CheckResult(result.part, result.name, False, GATED, detail="required: " + ", ".join(
        r.name for r in required if not r.passed), figure=result.figure,
        not_graded=any(r.not_graded for r in required))
