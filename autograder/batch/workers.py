"""The workers and their pool: the environment check on the batch's one fork server, which has a door
per worker (check_environment; pool.start_fork_servers), worker processes forked from here (pool.fork_pool),
each grading with an engine of its own (Engine.for_worker) and drawing its grades' pictures (_grade_one), and the parent
keeping each grade as it comes (grade_all); a pool that breaks is replaced by one worker grading one
submission at a time."""
from __future__ import annotations

import sys
import time
import traceback
from concurrent.futures import as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from autograder import reports, text
from autograder.batch.outputs import Stamp, store
from autograder.batch.plan import Results, Todo, settle
from autograder.course.gradebook import Gradebook
from autograder.engine import Engine
from autograder.pool import fork_pool as _pool
from autograder.pool import stop_fork_servers, worker_engine
from autograder.reports import html_feedback, plots

if TYPE_CHECKING:
    from autograder.sandbox.client import Sandbox

INTERNAL = ("The autograder could not grade this submission because of an internal error; your instructor "
            "can see the details.")
# what a worker hands back for one submission (_grade_one): student, results or None, problem, internal detail, pictures
Graded = tuple[str, Results | None, str, str, dict[str, Any]]


def check_environment(engine: Engine, doors: list[Sandbox]) -> None:
    """The environment check on the batch's fork server (or, where it could not start, on one of its
    own); the workers' engines copy the record into every results.json."""
    engine.start_sandbox(slot=0, sandbox=doors[0] if doors else None)
    try:
        engine.check_environment()
    finally:
        engine.close()  # the batch's server (a door of doors) stays; one of the engine's own is stopped


def _ready() -> bool:
    """A task that only proves a worker started (its initializer ran)."""
    return True


def _grade_one(student: str, path: str) -> Graded:
    """-> (student, results or None, problem, internal detail, pictures): never raises for a submission.
    pictures: the PNGs of the results' figures, drawn here, where the grade is made (plots.draw_all),
    for the parent to write (plots.remember), not to draw one student after the other."""
    from autograder import grading
    from autograder.submission import SubmissionError

    try:
        grade = worker_engine().grade(path)
        results = reports.results_json(grade)
        # the machine kept a part from running: recorded as not graded, graded again on the next run
        return student, results, grading.not_graded_problem(grade), "", _pictures(results)
    except SubmissionError as e:
        return student, None, text.clean(str(e)), "", {}
    except Exception as e:  # a failure of the grader on this submission: recorded; the others go on
        print(f"batch: grading {student} failed:", file=sys.stderr)
        traceback.print_exc()
        return student, None, INTERNAL, text.excerpt(f"{type(e).__name__}: {e}"), {}


def _pictures(results: Results) -> dict[str, Any]:
    """The pictures of every figure the feedback of results shows ({} where none can be drawn here: the
    parent then draws or words them as before). Only a failed weight check carries a figure: a record
    with none asks nothing of matplotlib here."""
    try:
        figures = [f for found in html_feedback.figures_by_part(results).values() for _, f in found]
        return plots.draw_all(figures) if figures and plots.available() else {}
    except Exception:  # a picture never costs a grade: the parent draws what is missing
        return {}


@dataclass
class Grading:
    """What the grading of a run's submissions is done and kept with: the engine (whose rubric and
    environment check make the record of a submission it could not grade), the gradebook and the output
    folder, the grader's fingerprint and the run's number (every grade's Stamp), the batch's fork
    server's doors (start_fork_servers; emptied when a worker dies) and the progress bar's stream (None:
    no bar)."""
    engine: Engine
    book: Gradebook
    out: Path
    grader: str
    run: int | None
    doors: list[Sandbox]
    progress: TextIO | None = None


def grade_all(todo: list[Todo], jobs: int, grading: Grading) -> list[str]:
    """Grade todo (plan.Todo: student, path, fingerprint, reason) in jobs worker processes -> the
    students graded now, each kept as it comes (plan.settle, outputs.store).

    A pool that breaks (a worker died) is replaced by one worker grading one submission at a time;
    there the submission being graded when the worker dies is recorded with that problem."""
    engine, book, out, doors, progress = grading.engine, grading.book, grading.out, grading.doors, grading.progress
    total, started = len(todo), time.monotonic()
    graded: list[str] = []
    pending = {s: (p, f, r) for s, p, f, r in todo}
    _progress(progress, 0, total, started, "")

    def finish(student: str, results: Results | None, problem: str, internal: str,
               pictures: dict[str, Any] | None = None) -> None:
        plots.remember(pictures or {})  # drawn in the worker: written here, not drawn again
        path, fingerprint, reason = pending.pop(student)
        if results is None:
            results = reports.broken_results(engine.rubric, problem)
            results["environment_check"] = reports.environment_check(engine.environment_check)
        fingerprint, problem = settle(book, student, fingerprint, results, problem, internal)
        store(book, out, student, Stamp(fingerprint, grading.grader, reason, grading.run), results, problem)
        graded.append(student)
        _progress(progress, len(graded), total, started, student)

    # matplotlib's drawing modules, imported once here before the workers are forked: each inherits them
    # (a worker that draws a picture imported them again, about 0.3 s of CPU each), and the parent needs
    # them anyway for the class's histogram (reports/class_report.py)
    plots.warm_up()
    one_at_a_time = False
    while pending:
        current: str | None = None
        try:
            # no more workers than submissions: a worker beyond the batch's doors starts a fork server
            # of its own (start_fork_servers made min(jobs, submissions) doors), a second torch import
            with _pool(1 if one_at_a_time else min(jobs, len(pending)), engine, doors) as pool:
                if one_at_a_time:
                    pool.submit(_ready).result()
                    for student, (path, _, _) in list(pending.items()):
                        current = student
                        finish(*pool.submit(_grade_one, student, str(path)).result())
                else:
                    futures = [pool.submit(_grade_one, s, str(p)) for s, (p, _, _) in pending.items()]
                    for future in as_completed(futures):
                        finish(*future.result())
        except BrokenProcessPool as e:
            stop_fork_servers(doors)  # a worker died: the next workers start fork servers of their own
            if one_at_a_time and current is None:
                raise RuntimeError(f"the grading workers cannot start ({e})") from None
            if current is not None:  # the worker died on this submission alone: recorded, the batch goes on
                finish(current, None, INTERNAL, "its worker process died while grading it")
            one_at_a_time = True
    if progress:
        print(file=progress)
    return graded


def _progress(stream: TextIO | None, done: int, total: int, started: float, last: str) -> None:
    if not stream:
        return
    elapsed = time.monotonic() - started
    eta = (elapsed / done * (total - done)) if done else 0
    width = 30
    bar = "#" * (width * done // max(total, 1))
    stream.write(f"\r[{bar:<{width}}] {done}/{total} eta {int(eta) // 60}:{int(eta) % 60:02d} {last[:30]:<30}")
    stream.flush()
