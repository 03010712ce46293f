"""One batch run, top-down (run_batch): the class folder's plan (plan.py: who, by fingerprints), the
fork servers and the environment check (workers.py), the grading in worker processes, kept as each
grade comes (workers.grade_all -> plan.settle, outputs.store), then the class's files (outputs.py:
grades.csv, regrades.csv, the feedback of every changed grade of record; reports/class_report.py) and
the summary (summary.py)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from autograder import chapter as chapter_mod
from autograder import envcheck, reports
from autograder.batch.outputs import Stamp, judge_lateness, store, write_csv, write_feedback, write_regrades
from autograder.batch.plan import RETRY, Todo, digest, find_submissions, to_grade
from autograder.batch.summary import Outcome, summary_text
from autograder.batch.workers import Grading, check_environment, grade_all
from autograder.course import lateness, regrades
from autograder.course.gradebook import Gradebook
from autograder.engine import Engine
from autograder.pool import frozen, start_fork_servers, stop_fork_servers
from autograder.reports import class_report, plots
from autograder.sandbox import container
from autograder.settings import Settings, from_environment

if TYPE_CHECKING:
    from autograder.sandbox.client import Sandbox


def run_batch(folder: str | Path, out: str | Path, jobs: int = 2, force: bool = False,
              rubric_path: str | Path | None = None, progress: TextIO | None = sys.stderr,
              summary: TextIO | None = None, settings: Settings | None = None,
              late: lateness.LatePolicy | None = None, chapter: chapter_mod.Chapter | None = None) -> int:
    """Grade every submission of folder into out -> the number of submissions in the gradebook.
    chapter: the chapter graded (the command's; None: this repository's).

    progress: a stream for the progress bar (drawn only on a terminal); summary: a stream for the
    end-of-batch summary (after grades.csv is written); settings: the run's (default: the environment's);
    late: the due date and late policy (lateness.LatePolicy), or None (no lateness columns, nothing charged)."""
    from autograder.sandbox.client import SandboxUnavailable

    settings = settings or from_environment()  # what Engine would take: CH03_CONTAINER=1 is refused too
    refused = container.refuse_many(settings.sandbox.container, "batch")
    if refused:  # before any folder, gradebook or process exists
        raise SandboxUnavailable(refused)
    out = Path(out)
    for sub in ("results", "feedback"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    engine = Engine(settings, rubric_path, chapter)
    progress = progress if progress is not None and progress.isatty() else None
    book = Gradebook(out / "gradebook.db")
    found: list[tuple[str, Path, str]] | None = None
    todo: list[Todo] = []
    doors: list[Sandbox] = []
    grader = envcheck.grader_fingerprint(engine.rubric_path, engine.chapter.solutions)
    parts_now = regrades.grader_parts(engine.rubric_path, engine.chapter.solutions)
    try:
        found = find_submissions(folder)
        known = book.graded()
        todo = to_grade(book, known, found, grader, parts_now, force)
        run = book.start_run(grader)
        book.remember_grader(grader, parts_now)
        doors = start_fork_servers(min(jobs, len(todo)), engine.settings)  # before torch is imported here
        rubric = engine.load_rubric()
        if todo:  # the reference first, once for the batch (EnvironmentFailed: nobody is graded)
            check_environment(engine, doors)
        for student, path, problem in found:
            if problem:  # recorded, not graded: the problem is the student's to fix (a rename)
                fingerprint = RETRY + digest(path)
                same = known.get(student, ())[:2] == (fingerprint, grader)  # nothing new to keep in the history
                store(book, out, student, Stamp(fingerprint, grader, None if same else "not graded", run),
                      reports.broken_results(rubric, problem), problem)
        # the workers are forked from here: what they use is imported first (matplotlib for their
        # pictures: grade_all), and what this process holds is set apart from the collector (pool.frozen)
        plots.warm_up()
        with frozen():
            graded = grade_all(todo, jobs, Grading(engine, book, out, grader, run, doors, progress))
    finally:
        stop_fork_servers(doors)
        students = None if found is None else [student for student, _, _ in found]
        late_rows = judge_lateness(book, late, found) if found is not None else {}
        write_csv(book, out / "grades.csv", students, late_rows if late else None, parts=engine.chapter.parts)
    reasons = {student: reason for student, _, _, reason in todo}
    moves = book.moves(run) if graded else []
    book.add_regrades(run, moves, reasons)  # appended: earlier runs' moves stay
    write_regrades(out / "regrades.csv", book.regrades())
    write_feedback(book, out, students, late_rows)  # the grade of record in each student's feedback
    class_report.write_class_report(out, book.effective_records(), late_rows, book.regrades())
    count = book.count()
    if summary:
        strays = sorted((set(late.times) | set(late.extensions)) - set(students)) if late else []
        summary.write(summary_text(book, folder, out, Outcome(students, graded, list(known), reasons, late_rows,
                                                              strays, moves)))
    book.close()
    return count
