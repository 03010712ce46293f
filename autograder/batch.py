"""Grade a whole class: every subfolder, .zip or notebook folder of DIR is one student.

    python -m autograder batch DIR --out OUT [--jobs N] [--force]
        [--due ISO-8601 [--submitted-at TIMES.csv] [--extensions EXT.csv] [--late-penalty PERCENT] [--late-days N]]

Workers are processes forked from the batch (torch imported once, here) that share one fork
server in the sandbox's room (torch imported once there), each through a door of its own; the parent
alone writes the gradebook (OUT/gradebook.db), the per-student files and OUT/grades.csv.

Nothing a student hands in stops the batch: a submission that cannot be staged is recorded with
its problem (and 0), an exception while grading one is recorded as an internal error (graded
again on the next run), and a worker that dies is replaced: the rest is then graded one at a
time, so a submission that kills its worker again is recorded as such. grades.csv (one row per
student found in DIR, with a `problem` column) is written whatever happens; then a summary.
A rerun grades only what changed: the submission (its fingerprint: `digest`) or the grader (the
rubric, suites, reference or versions: envcheck.grader_fingerprint); every grade is kept in the
gradebook's history, and OUT/regrades.csv lists whose score the latest grading run moved. With a
due date (lateness.LatePolicy) grades.csv adds each student's lateness and final score.
"""
from __future__ import annotations

import csv
import gc
import hashlib
import json
import multiprocessing
import multiprocessing.util
import os
import re
import sqlite3
import statistics
import sys
import tempfile
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from autograder import chapter as chapter_mod
from autograder import envcheck, reports, submission, text
from autograder.course import lateness, regrades
from autograder.course.gradebook import Gradebook
from autograder.engine import Engine
from autograder.reports import class_report, html_feedback, plots
from autograder.reports.records import not_graded_of
from autograder.sandbox import container
from autograder.settings import Settings, from_environment

if TYPE_CHECKING:
    from autograder.sandbox.client import Sandbox

INTERNAL = ("The autograder could not grade this submission because of an internal error; your instructor "
            "can see the details.")
RETRY = "retry:"  # a fingerprint kept with this prefix is graded again on the next run
Results = dict[str, Any]  # one submission's record, as results.json holds it (reports/results_json.py): JSON
# what a worker hands back for one submission (_grade_one): student, results or None, problem, internal detail, pictures
Graded = tuple[str, Results | None, str, str, dict[str, Any]]
MACHINE = "machine:"  # after RETRY: kept so because the machine kept parts from running (counted, NOT_GRADED_RUNS)
OTHER_GRADER = "graded by another grader"  # then what changed: other_grader_reason
REGRADES_COLUMNS = ["run", "at", "student", "before", "after", "parts", "why"]


NAME_LIMIT = 80  # characters of a student's name kept in its file names (results/<name>.json, ...)
SAFE = re.compile(r"[^A-Za-z0-9_.@+-]")


def find_submissions(folder: str | Path) -> list[tuple[str, Path, str]]:
    """[(student name, path, problem)] for each subfolder or .zip in folder, sorted by name.

    A name keeps the characters a file name can safely hold (the others become _) and at most
    NAME_LIMIT of them; a longer one ends in ~ and a hash of its whole name (any bytes), so it
    still names one entry. Two entries that would get the same name (`a b` and `a_b`, `c` and
    `c.zip`) are ambiguous: neither takes that name; each is recorded under the name and a hash of
    its own file name, with the problem, and graded once one of them is renamed."""
    by_name: dict[str, list[Path]] = {}
    for entry in sorted(Path(folder).iterdir()):
        if entry.name.startswith(".") or entry.is_symlink():
            continue
        if entry.is_dir() or entry.suffix == ".zip" and entry.is_file():
            name = SAFE.sub("_", entry.stem if entry.suffix == ".zip" else entry.name)
            if len(name) > NAME_LIMIT:
                name = _hashed(name[:NAME_LIMIT], entry)
            by_name.setdefault(name, []).append(entry)
    found = []
    for name, entries in by_name.items():
        if len(entries) == 1:
            found.append((name, entries[0], ""))
            continue
        for entry in entries:
            others = ", ".join(repr(text.clean(os.fsdecode(e.name))) for e in entries if e != entry)
            found.append((_hashed(name, entry), entry,
                          f"ambiguous name: {text.clean(os.fsdecode(entry.name))!r} and {others} both become "
                          f"{name!r}: rename one of them so that each student has a name of their own"))
    return sorted(found, key=lambda item: item[0])


def _hashed(name: str, entry: Path) -> str:
    """name, ~ and a hash of the entry's file name (any bytes): never a name SAFE leaves as it is."""
    return f"{name}~{hashlib.sha256(os.fsencode(entry.name)).hexdigest()[:10]}"


def digest(path: str | Path) -> str:
    """A fingerprint of what was handed in: regrade only when it changes.

    Bounded like staging: the files staging could read (submission.read_limit) count by name and a
    streamed hash of their bytes; every other file by its name and size only (never read, whatever
    its size); a folder is walked as staging walks it. Never raises: what cannot be read is
    fingerprinted by the error (staging will say what it is)."""
    path = Path(path)
    h = hashlib.sha256()
    try:
        if path.is_dir():
            listing = [(str(rel / name), path / rel / name, size)
                       for rel, files in submission.walk(path) for name, size in sorted(files.items())]
        else:
            listing = [(path.name, path, path.stat().st_size)]
    except (submission.SubmissionError, OSError) as e:
        return hashlib.sha256(f"unreadable: {e}".encode("utf-8", "replace")).hexdigest()
    for name, file, size in listing:
        h.update(name.encode("utf-8", "surrogateescape") + b"\0" + str(size).encode() + b"\0")
        if size <= submission.read_limit(name):
            h.update(_file_hash(file))
    return h.hexdigest()


def _file_hash(path: Path) -> bytes:
    h = hashlib.sha256()
    try:
        with open(path, "rb", opener=lambda p, flags: os.open(p, flags | os.O_NOFOLLOW)) as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    except OSError as e:
        h.update(f"unreadable: {e.errno}".encode())
    return h.digest()


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


def _check_environment(engine: Engine, doors: list[Sandbox]) -> None:
    """The environment check on the batch's fork server (or, where it could not start, on one of its
    own); the workers' engines copy the record into every results.json."""
    engine.start_sandbox(slot=0, sandbox=doors[0] if doors else None)
    try:
        engine.check_environment()
    finally:
        engine.close()  # the batch's server (a door of doors) stays; one of the engine's own is stopped


_worker_engine: Engine | None = None  # in a worker process: its engine (made by _init_worker)


def _init_worker(slot_queue: Any, doors: list[Any], parent: Engine, batch_pid: int) -> None:
    import torch

    from autograder.inside import isolation

    isolation.die_with_parent(batch_pid)  # and its fork server with it, and that one's children
    torch.set_num_threads(1)  # a forked copy of a parent's thread pool can deadlock; one per core anyway
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
    parent then draws or words them as before)."""
    if not plots.available():
        return {}
    try:
        return plots.draw_all(f for figures in html_feedback.figures_by_part(results).values() for _, f in figures)
    except Exception:  # a picture never costs a grade: the parent draws what is missing
        return {}


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
    found, todo, doors = None, [], []
    grader = envcheck.grader_fingerprint(engine.rubric_path, engine.chapter.solutions)
    parts_now = regrades.grader_parts(engine.rubric_path, engine.chapter.solutions)
    try:
        found = find_submissions(folder)
        known = book.graded()
        for student, path, problem in found:
            fingerprint = digest(path)
            reason = None if problem else _why_grade(known.get(student), fingerprint, grader, force)
            if reason == OTHER_GRADER:  # name what changed since the grader of the student's last grade
                reason = other_grader_reason(book.grader_parts(known[student][1]), parts_now)
            if reason:
                todo.append((student, path, fingerprint, reason))
        run = book.start_run(grader)
        book.remember_grader(grader, parts_now)
        doors = start_fork_servers(min(jobs, len(todo)), engine.settings)  # before torch is imported here
        rubric = engine.load_rubric()
        if todo:  # the reference first, once for the batch (EnvironmentFailed: nobody is graded)
            _check_environment(engine, doors)
        for student, path, problem in found:
            if problem:  # recorded, not graded: the problem is the student's to fix (a rename)
                fingerprint = RETRY + digest(path)
                same = known.get(student, ())[:2] == (fingerprint, grader)  # nothing new to keep in the history
                _store(book, out, student, (fingerprint, grader, None if same else "not graded", run),
                       reports.broken_results(rubric, problem), problem)
        # the workers are forked from here: a garbage collection there would walk (and so copy) every
        # object this process holds, torch's included, unless they are set apart first
        gc.freeze()
        try:
            graded = _grade_all(todo, (folder, out, jobs), engine, doors, book, progress, (grader, run))
        finally:
            gc.unfreeze()  # a caller that goes on (the ci command, tests) collects as before
    finally:
        stop_fork_servers(doors)
        students = None if found is None else [student for student, _, _ in found]
        late_rows = _lateness(book, late, found) if found is not None else {}
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
        summary.write(summary_text(book, folder, out, students, graded, list(known), reasons, late_rows, strays,
                                   moves))
    book.close()
    return count


def rewrite_outputs(out: str | Path, chapter: chapter_mod.Chapter | None = None) -> list[str]:
    """After a change made outside a batch run (an override set or removed): grades.csv, regrades.csv,
    report.html and the feedback whose grade of record changed, rewritten from the gradebook for the
    students grades.csv lists (the last run's class), the last run's late rows rescored on the grade of
    record (their policy and times as that run judged them) -> the students of grades.csv.
    chapter: whose parts grades.csv has columns for (None: this repository's)."""
    out = Path(out)
    book = Gradebook(out / "gradebook.db")
    try:
        graded = set(book.students())
        with open(out / "grades.csv", newline="", encoding="utf-8") as f:
            listed = [row[0] for row in list(csv.reader(f))[1:] if row]
        students = [s for s in graded if s in listed or text.csv_cell(s) in listed]
        stored = book.lateness()
        late_rows = {}
        if stored:
            scores = {s: float(r.get("score", 0)) for s, r, _ in book.effective_records()}
            late_rows = {s: lateness.Late.from_row(row).rescored(scores.get(s, row["final_score"]))
                         for s, row in stored.items()}
            book.set_lateness(late_rows)
        write_csv(book, out / "grades.csv", students, late_rows if stored else None,
                  parts=(chapter or chapter_mod.current()).parts)
        write_regrades(out / "regrades.csv", book.regrades())
        write_feedback(book, out, students, late_rows)
        class_report.write_class_report(out, book.effective_records(), late_rows, book.regrades())
        return students
    finally:
        book.close()


def other_grader_reason(before: dict[str, Any] | None, now: dict[str, Any]) -> str:
    """Why a student graded by another grader is regraded, naming what changed (regrades.changes):
    "graded by another grader: points of mha.book_example 4 -> 5; torch 2.12.0 -> 2.13.0"."""
    said = regrades.changes(before, now)
    if not said:
        said = ["what changed was not recorded (a grade from before the grader's parts were kept)"] if before is None \
            else ["the rubric's text or the suites' snapshots changed, not its points, files or versions"]
    return f"{OTHER_GRADER}: {'; '.join(said)}"


def write_feedback(book: Gradebook, out: Path, students: list[str] | None, late: dict[str, lateness.Late]) -> None:
    """Rewrite feedback/<student>.md and .html of each student of students whose grade of record (overrides,
    late policy: reports.standing) differs from what their feedback last said; a student's file that cannot
    be written is said on stderr and left as it was (the batch goes on)."""
    from autograder.reports.standing import standing_key

    said = book.standings()
    wanted = None if students is None else set(students)
    for student, results, problem in book.effective_records():
        if wanted is not None and student not in wanted or not_graded_of(results):
            continue
        key = standing_key(results, late.get(student))
        if said.get(student, "[]") == key:
            continue
        try:
            _atomic_write(out / "feedback" / f"{student}.md", reports.feedback(student, results, late.get(student)))
            _atomic_write(out / "feedback" / f"{student}.html",
                          html_feedback.feedback_html(student, results, problem, late.get(student)))
            book.set_standing(student, key)
        except (OSError, ValueError) as e:
            print(f"batch: the feedback of {student} could not be rewritten ({type(e).__name__}: {e})", file=sys.stderr)


def settle(book: Gradebook, student: str, fingerprint: str, results: Results, problem: str,
           internal: str) -> tuple[str, str]:
    """How one grading is kept -> (fingerprint to record, problem). A failure of the grader
    (internal) is kept as RETRY, graded again on the next run; so is a grade the machine kept from
    running (runner.NOT_GRADED), NOT_GRADED_RUNS runs at most for the same submission: then it is
    graded as it stands (charged_after_not_graded), and no run after regrades it."""
    if internal:  # not the student's doing: kept for the instructor, graded again on the next run
        return RETRY + fingerprint, f"{problem} ({internal})"
    if not_graded_of(results):  # the grader's structured record (issue 37.3), never the problem's text
        runs = book.not_graded_runs(student, fingerprint) + 1
        if runs < NOT_GRADED_RUNS:
            return RETRY + MACHINE + fingerprint, problem
        return fingerprint, charged_after_not_graded(results, runs)
    return fingerprint, problem


NOT_GRADED_RUNS = 3  # runs a submission may stay "not graded" (the machine's doing) before it is graded as it stands


def charged_after_not_graded(results: Results, runs: int) -> str:
    """A submission no run could grade in full (runs of them): graded now as it stands, the parts the
    machine kept from running scored as failed (the code's, as a part that dies in every fresh child
    is), with a note for the instructor -> the problem to record. results is changed in place: its
    score stands (extra_data.not_graded becomes extra_data.charged_after_not_graded)."""
    extra = results.setdefault("extra_data", {})
    parts = extra.pop("not_graded", {}) or {}
    extra["charged_after_not_graded"] = parts
    note = (f"graded as it stands after {runs} runs in which parts were not graded ({', '.join(parts) or 'parts'}: "
            f"scored as failed); regrade with --force once the machine is quiet")
    results["output"] = f"Graded: {note}"
    return note


def _why_grade(previous: tuple[str, str, float, dict[str, float]] | None, fingerprint: str, grader: str, force: bool) -> str | None:
    """Why this submission is graded in this run (None: it is up to date). previous: the gradebook's
    (digest, grader, ...) for the student, or None."""
    if previous is None:
        return "first grade"
    if force:
        return "regraded with --force"
    if previous[0] != fingerprint:
        return "graded again: its last grading did not finish" if previous[0].startswith(RETRY) else \
            "the submission changed"
    if previous[1] != grader:
        return OTHER_GRADER
    return None


def _lateness(book: Gradebook, late: lateness.LatePolicy | None,
              found: list[tuple[str, Path, str]]) -> dict[str, lateness.Late]:
    """{student: lateness.Late} for every student of found with a grade in the gradebook (finished or
    not: lateness never waits for the machine; grades.csv leaves the final score of a grade the machine
    kept from running empty, like its score), stored
    as the run's late rows ({} without a policy: the last run's rows are cleared, so export follows
    grades.csv)."""
    rows: dict[str, lateness.Late] = {}
    if late is not None:  # finished or not: a grade graded again next run is late all the same (its final
        # score waits for it); overrides included: the late policy applies to the grade of record
        scores = {student: float(results.get("score", 0)) for student, results, _ in book.effective_records()}
        for student, path, _ in found:
            if student in scores:
                rows[student] = late.judge(student, scores[student], lateness.collected_time(path))
    book.set_lateness(rows)
    return rows


def _grade_all(todo: list[tuple[str, Path, str, str]], where: tuple[str | Path, Path, int], engine: Engine,
               doors: list[Sandbox], book: Gradebook, progress: TextIO | None, run: tuple[str, int | None]) -> list[str]:
    """Grade todo [(student, path, fingerprint, reason)] in worker processes -> the students graded now.
    where: (the class folder, the output folder, the number of workers); doors: the batch's fork
    server's doors (start_fork_servers), emptied when a worker dies; run: (grader fingerprint, run
    number) for the gradebook.

    A pool that breaks (a worker died) is replaced by one worker grading one submission at a time;
    there the submission being graded when the worker dies is recorded with that problem."""
    folder, out, jobs = where
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
        _store(book, out, student, (fingerprint, run[0], reason, run[1]), results, problem)
        graded.append(student)
        _progress(progress, len(graded), total, started, student)

    one_at_a_time = False
    while pending:
        current: str | None = None
        try:
            with _pool(1 if one_at_a_time else jobs, engine, doors) as pool:
                if one_at_a_time:
                    pool.submit(_ready).result()
                    for student, (path, _, _) in list(pending.items()):
                        current = student
                        finish(*pool.submit(_grade_one, student, str(path)).result())
                else:
                    futures = [pool.submit(_grade_one, s, str(p)) for s, (p, _, _) in pending.items()]
                    plots.warm_up()  # the workers are forked: matplotlib loads here while they grade
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
    slots = ctx.Queue()
    for slot in range(jobs):
        slots.put(slot)
    return ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init_worker,
                               initargs=(slots, list(doors), engine, os.getpid()))


def _store(book: Gradebook, out: Path, student: str, stamp: tuple[str, str, str | None, int | None],
           results: Results, problem: str) -> None:
    """Write one student's results, feedback and gradebook row. stamp: (submission fingerprint,
    grader fingerprint, why it was graded or None to add nothing to the history, run number).
    Anything that fails here (a disk full, a file the system refuses) is that student's problem:
    recorded as such where it can be, and the batch goes on; no temporary file is left behind."""
    fingerprint, grader, reason, run = stamp
    results.setdefault("extra_data", {})["grader"] = grader  # which grader this result came from
    try:
        _atomic_write(out / "results" / f"{student}.json", json.dumps(results, indent=1))
        _atomic_write(out / "feedback" / f"{student}.md", reports.feedback(student, results))
        _atomic_write(out / "feedback" / f"{student}.html", html_feedback.feedback_html(student, results, problem))
        book.record(student, fingerprint, results, problem, grader, reason, run)
        book.set_standing(student, "[]")  # this feedback says the score only: write_feedback adds the grade of record
    except (OSError, ValueError, sqlite3.Error) as e:
        failed = f"its results could not be stored ({text.excerpt(f'{type(e).__name__}: {e}', 200)})"
        try:
            book.record(student, RETRY + fingerprint, results, failed, grader, reason or "not stored", run)
        except (OSError, ValueError, sqlite3.Error):
            pass  # the gradebook itself refuses: the student is missing from grades.csv, graded on the next run


def write_csv(book: Gradebook, path: Path, students: list[str] | None = None, late: dict[str, lateness.Late] | None = None,
              parts: tuple[str, ...] | None = None) -> None:
    """grades.csv: student, score, max_score, one column per part, problem (why a submission could
    not be graded; empty when it was); one row per student of `students` (default: the gradebook's).
    With late ({student: lateness.Late}, a run with a due date) the columns lateness.COLUMNS and
    late_note follow: `score` stays what the code earned, `final_score` is after the late policy.
    parts: the chapter's (its manifest's; None: this repository's)."""
    columns = list(chapter_mod.current().parts if parts is None else parts)
    problems, kept = book.problems(), book.not_graded()
    wanted = None if students is None else set(students)
    overrides = book.overrides()
    effective = {s: r for s, r, _ in book.effective_records()} if overrides else {}
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, newline="") as tmp:
        writer = csv.writer(tmp)
        writer.writerow(["student", "score", "max_score", *columns, "problem"]
                        + ([*lateness.COLUMNS, "late_note"] if late is not None else [])
                        + (["overrides"] if overrides else []))
        for student, graded_score, graded_max, by_part in book.rows():
            score: float | None = graded_score
            max_score: float | None = graded_max
            if wanted is None or student in wanted:
                if student in overrides:  # a person's score stands for those parts (the column says whose)
                    record = effective[student]
                    score, by_part = record["score"], {p: v["score"] for p, v in record["parts"].items()}
                problem = problems.get(student, "")
                ungraded = set(kept.get(student, ()))
                if ungraded:  # no score stands, not even 0 (never a lower score): the grader's structured record
                    score = max_score = None
                row = [text.csv_cell(student), _cell(score), _cell(max_score),
                       *(_cell(None if p in ungraded else by_part.get(p, 0)) for p in columns), text.csv_cell(problem)]
                if late is not None and student in late:
                    cells = late[student].cells()
                    if score is None:  # no score stands yet: no final score either (its lateness does)
                        cells[lateness.COLUMNS.index("final_score")] = ""
                    row += cells + [text.csv_cell(late[student].note)]
                elif late is not None:
                    row += [""] * (len(lateness.COLUMNS) + 1)
                if overrides:
                    row.append(text.csv_cell(describe_overrides(effective.get(student, {}))))
                writer.writerow(row)
    os.replace(tmp.name, path)


def _cell(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def write_regrades(path: Path, rows: list[dict[str, Any]]) -> None:
    """OUT/regrades.csv: run, at, student, before, after, parts ("causal 8 -> 10; mha 20 -> 15"), why: one
    row per student whose score a grading run moved, every run's, oldest first (gradebook.regrades): a
    run that moves nobody adds nothing and removes nothing."""
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, newline="") as tmp:
        writer = csv.writer(tmp)
        writer.writerow(REGRADES_COLUMNS)
        for row in rows:
            writer.writerow([str(row["run"]), row["at"], text.csv_cell(row["student"]), f"{row['before']:g}",
                             f"{row['after']:g}", text.csv_cell(describe_parts(row["parts"])),
                             text.csv_cell(row["why"])])
    os.replace(tmp.name, path)


def describe_overrides(results: Results) -> str:
    """grades.csv's overrides cell: "mha 15 -> 20 by ta_bob at ...: reason" per overridden part."""
    from autograder.reports.standing import overrides_of

    return "; ".join(f"{part} {o['automatic']:g} -> {o['score']:g} by {o['by']} at {o['at']}: {o['reason']}"
                     for part, o in sorted(overrides_of(results).items()))


def describe_parts(parts: dict[str, tuple[float, float]]) -> str:
    return "; ".join(f"{part} {before:g} -> {after:g}" for part, (before, after) in parts.items())


def summary_text(book: Gradebook, folder: str | Path, out: str | Path, students: list[str], graded: list[str],
                 known: list[str], reasons: dict[str, str] | None = None, late: dict[str, lateness.Late] | None = None,
                 strays: list[str] | tuple[str, ...] = (),
                 moves: list[tuple[str, float, float, dict[str, tuple[float, float]]]] | None = None) -> str:
    """What the batch did, for the instructor: graded now, up to date, who was regraded because the
    grader changed, the submissions not graded with the reason, the score spread, lateness (and the
    names of TIMES.csv or EXT.csv, `strays`, that match no submission), and who is in the gradebook
    but no longer in folder."""
    effective = book.effective_records()
    rows = {student: (float(r.get("score", 0)), float(r.get("max_score", 0))) for student, r, _ in effective}
    problems, kept = book.problems(), book.not_graded()
    present = [s for s in students if s in rows]
    lines = [f"batch: {len(students)} submission(s) in {folder}"]
    if graded:
        lines.append(f"  graded now: {len(graded)}; up to date: {len(students) - len(graded)}")
    else:
        lines.append(f"  nothing to grade: {len(students)} up to date (unchanged since they were graded)")
    regraded = sorted(s for s in graded if (reasons or {}).get(s, "").startswith(OTHER_GRADER))
    if regraded:
        why = sorted({(reasons or {})[s].removeprefix(OTHER_GRADER).lstrip(": ") for s in regraded})
        lines.append(f"  regraded, {OTHER_GRADER} ({len(regraded)}): {', '.join(regraded)}")
        lines += [f"    what changed: {w}" for w in why]
    moves = (book.moves() if graded else []) if moves is None else moves
    if moves:
        lines.append(f"  scores moved ({len(moves)}): " + ", ".join(f"{s} {b:g} -> {a:g}" for s, b, a, _ in moves)
                     + " (regrades.csv)")
    broken = [(s, problems[s]) for s in present if problems.get(s) and s not in kept]
    if broken:
        lines.append(f"  not graded, scored 0 ({len(broken)}):")
        lines += [f"    {s}: {text.excerpt(problem, 240)}" for s, problem in broken]
    overloaded = [(s, problems.get(s, "")) for s in present if s in kept]
    if overloaded:  # the machine's doing (runner.NOT_GRADED): no score stands, graded again on the next run
        lines.append(f"  not graded, no score ({len(overloaded)}):")
        lines += [f"    {s}: {text.excerpt(problem, 240)}" for s, problem in overloaded]
    present = [s for s in present if s not in kept]
    if present:
        scores = [rows[s][0] for s in present]
        top = max(rows[s][1] for s in present)
        what = "scores"
        if late:  # the grade of record: after the late policy (grades.csv keeps both)
            scores, what = [late[s].final_score if s in late else rows[s][0] for s in present], \
                "final scores, after the late policy"
        lines.append(f"  {what} (of {top:g}): min {min(scores):g}, median {statistics.median(scores):g}, "
                     f"max {max(scores):g}")
    overridden = {s: o for s, o in book.overrides().items() if s in students}
    if overridden:
        lines.append(f"  scores changed by a person, standing over the grader's ({len(overridden)}): " + ", ".join(
            f"{s} {part} {o['score']:g} (the grader's: {_automatic(effective, s, part)})"
            for s, parts in sorted(overridden.items()) for part, o in sorted(parts.items())))
    if late:
        lines += _late_summary(late)
    if strays:  # a name the instructor gave that matches no submission: said, never dropped silently
        lines.append(f"  in --submitted-at/--extensions but not in {folder}: {', '.join(strays)}")
    removed = sorted(set(known) - set(students))
    if removed:
        lines.append(f"  in the gradebook but no longer in {folder} (left out of grades.csv): {', '.join(removed)}")
    lines.append(f"  grades: {Path(out) / 'grades.csv'}; feedback: {Path(out) / 'feedback'}; "
                 f"gradebook: {Path(out) / 'gradebook.db'}")
    return "\n".join(lines) + "\n"


def _automatic(effective: list[tuple[str, Results, str]], student: str, part: str) -> str:
    """The grader's own current score of an overridden part, as the summary shows it."""
    for who, results, _ in effective:
        if who == student:
            o = ((results.get("extra_data") or {}).get("overrides") or {}).get(part)
            return f"{o['automatic']:g}" if o else "?"
    return "?"


def _late_summary(late: dict[str, lateness.Late]) -> list[str]:
    charged = sorted(s for s, row in late.items() if row.late_days)
    unknown = sorted(s for s, row in late.items() if row.late_days is None)

    def cost(row: lateness.Late) -> str:
        return "past the cutoff: final 0" if row.cutoff else f"-{row.penalty:g}%: final {row.final_score:g}"

    lines = [f"  late ({len(charged)}): " + (", ".join(f"{s} {late[s].late_days} day(s) {cost(late[s])}"
                                                    for s in charged) or "nobody")]
    if unknown:
        lines.append(f"  no submission time known, not charged ({len(unknown)}): {', '.join(unknown)}")
    return lines


def _atomic_write(path: Path, content: str) -> None:
    """Write content to path through a temporary file in the same folder, removed if anything fails."""
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, delete=False, prefix=".tmp-") as tmp:
        try:
            tmp.write(content)
            tmp.close()
            os.replace(tmp.name, path)
        except BaseException:
            tmp.close()
            os.unlink(tmp.name)
            raise


def _progress(stream: TextIO | None, done: int, total: int, started: float, last: str) -> None:
    if not stream:
        return
    elapsed = time.monotonic() - started
    eta = (elapsed / done * (total - done)) if done else 0
    width = 30
    bar = "#" * (width * done // max(total, 1))
    stream.write(f"\r[{bar:<{width}}] {done}/{total} eta {int(eta) // 60}:{int(eta) % 60:02d} {last[:30]:<30}")
    stream.flush()
