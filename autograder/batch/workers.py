"""The workers and their pool: one fork server for the batch with a door per worker (start_fork_servers),
the environment check on it (check_environment), worker processes forked from here, each grading with
an engine of its own (Engine.for_worker) and drawing its grades' pictures (_grade_one), and the parent
keeping each grade as it comes (grade_all); a pool that breaks is replaced by one worker grading one
submission at a time."""
from __future__ import annotations

import multiprocessing
import multiprocessing.util
import os
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from autograder import reports, text
from autograder.batch.outputs import Stamp, store
from autograder.batch.plan import Results, Todo, settle
from autograder.course.gradebook import Gradebook
from autograder.engine import Engine, one_thread
from autograder.reports import html_feedback, plots
from autograder.settings import Settings

if TYPE_CHECKING:
    from autograder.sandbox.client import Sandbox

INTERNAL = ("The autograder could not grade this submission because of an internal error; your instructor "
            "can see the details.")
# what a worker hands back for one submission (_grade_one): student, results or None, problem, internal detail, pictures
Graded = tuple[str, Results | None, str, str, dict[str, Any]]


def start_fork_servers(count: int, settings: Settings) -> list[Sandbox]:
    """The batch's fork server, started now, before this process imports torch (both start-ups
    overlap), and a door of its own for each of count workers -> [door per slot] (slot 0: the
    server's owner): torch is imported once in the room for the whole batch. Where it cannot start:
    [] (each worker starts, and reports, its own)."""
    from autograder.sandbox.client import Sandbox

    doors: list[Sandbox] = []
    if count < 1:
        return doors
    try:
        doors.append(Sandbox(slot=0, settings=settings.sandbox))
        for slot in range(1, count):
            doors.append(doors[0].attach(slot))
    except Exception:  # the workers will try again and say why
        stop_fork_servers(doors)
    return doors


def stop_fork_servers(doors: list[Sandbox]) -> None:
    while doors:  # the attached doors first, the server's owner (slot 0) last
        doors.pop().close()


def check_environment(engine: Engine, doors: list[Sandbox]) -> None:
    """The environment check on the batch's fork server (or, where it could not start, on one of its
    own); the workers' engines copy the record into every results.json."""
    engine.start_sandbox(slot=0, sandbox=doors[0] if doors else None)
    try:
        engine.check_environment()
    finally:
        engine.close()  # the batch's server (a door of doors) stays; one of the engine's own is stopped


_worker_engine: Engine | None = None  # in a worker process: its engine (made by _init_worker)


def _init_worker(slot_queue: Any, doors: list[Any], parent: Engine, batch_pid: int) -> None:
    from autograder.inside import isolation

    isolation.die_with_parent(batch_pid)  # and its fork server with it, and that one's children
    one_thread()  # before anything computes: a forked copy of a parent's thread pool can deadlock
    global _worker_engine
    slot = slot_queue.get()
    engine = parent.for_worker(doors[slot] if slot < len(doors) else None, slot)
    assert engine.sandbox is not None
    multiprocessing.util.Finalize(None, engine.sandbox.close, exitpriority=10)  # run as the worker exits
    _worker_engine = engine


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
        assert _worker_engine is not None, "_init_worker runs first in every worker"
        grade = _worker_engine.grade(path)
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


def _pool(jobs: int, engine: Engine, doors: list[Sandbox]) -> ProcessPoolExecutor:
    """jobs workers forked from here (the initializer's arguments are inherited, not pickled: the
    doors' sockets and the engine go as they are), each taking a slot and its door."""
    ctx = multiprocessing.get_context("fork")
    slots = ctx.SimpleQueue()  # written at once: no feeder thread left running here when the workers fork
    for slot in range(jobs):
        slots.put(slot)
    return ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init_worker,
                               initargs=(slots, list(doors), engine, os.getpid()))


def _progress(stream: TextIO | None, done: int, total: int, started: float, last: str) -> None:
    if not stream:
        return
    elapsed = time.monotonic() - started
    eta = (elapsed / done * (total - done)) if done else 0
    width = 30
    bar = "#" * (width * done // max(total, 1))
    stream.write(f"\r[{bar:<{width}}] {done}/{total} eta {int(eta) // 60}:{int(eta) % 60:02d} {last[:30]:<30}")
    stream.flush()
