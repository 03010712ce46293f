"""What a batch writes: each student's results/<name>.json, feedback/<name>.md and .html and gradebook row
(store), grades.csv (write_csv), regrades.csv (write_regrades), the run's late rows (judge_lateness) and
the feedback rewritten where a student's grade of record changed (write_feedback); every file through a
temporary one (atomic_write)."""
from __future__ import annotations

import csv
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any, NamedTuple

from autograder import chapter as chapter_mod
from autograder import reports, scratch, text
from autograder.batch.plan import RETRY, Results
from autograder.course import lateness
from autograder.course.gradebook import Gradebook
from autograder.reports import html_feedback
from autograder.reports.records import not_graded_of

REGRADES_COLUMNS = ["run", "at", "student", "before", "after", "parts", "why"]


class Stamp(NamedTuple):
    """What one grading is kept with: the submission's fingerprint (plan.settle's), the grader's, why it
    was graded (None: nothing is added to the history) and the run's number."""
    fingerprint: str
    grader: str
    reason: str | None
    run: int | None


def store(book: Gradebook, out: Path, student: str, stamp: Stamp, results: Results, problem: str) -> None:
    """Write one student's results, feedback and gradebook row. stamp: (submission fingerprint,
    grader fingerprint, why it was graded or None to add nothing to the history, run number).
    Anything that fails here (a disk full, a file the system refuses) is that student's problem:
    recorded as such where it can be, and the batch goes on; no temporary file is left behind."""
    fingerprint, grader, reason, run = stamp
    results.setdefault("extra_data", {})["grader"] = grader  # which grader this result came from
    try:
        atomic_write(out / "results" / f"{student}.json", json.dumps(results, indent=1))
        atomic_write(out / "feedback" / f"{student}.md", reports.feedback(student, results))
        atomic_write(out / "feedback" / f"{student}.html", html_feedback.feedback_html(student, results, problem))
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
    with scratch.replaced(path, encoding=None, newline="") as tmp:
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


def _cell(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def write_regrades(path: Path, rows: list[dict[str, Any]]) -> None:
    """OUT/regrades.csv: run, at, student, before, after, parts ("causal 8 -> 10; mha 20 -> 15"), why: one
    row per student whose score a grading run moved, every run's, oldest first (gradebook.regrades): a
    run that moves nobody adds nothing and removes nothing."""
    with scratch.replaced(path, encoding=None, newline="") as tmp:
        writer = csv.writer(tmp)
        writer.writerow(REGRADES_COLUMNS)
        for row in rows:
            writer.writerow([str(row["run"]), row["at"], text.csv_cell(row["student"]), f"{row['before']:g}",
                             f"{row['after']:g}", text.csv_cell(describe_parts(row["parts"])),
                             text.csv_cell(row["why"])])


def describe_overrides(results: Results) -> str:
    """grades.csv's overrides cell: "mha 15 -> 20 by ta_bob at ...: reason" per overridden part."""
    from autograder.reports.standing import overrides_of

    return "; ".join(f"{part} {o['automatic']:g} -> {o['score']:g} by {o['by']} at {o['at']}: {o['reason']}"
                     for part, o in sorted(overrides_of(results).items()))


def describe_parts(parts: dict[str, tuple[float, float]]) -> str:
    return "; ".join(f"{part} {before:g} -> {after:g}" for part, (before, after) in parts.items())


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
            atomic_write(out / "feedback" / f"{student}.md", reports.feedback(student, results, late.get(student)))
            atomic_write(out / "feedback" / f"{student}.html",
                          html_feedback.feedback_html(student, results, problem, late.get(student)))
            book.set_standing(student, key)
        except (OSError, ValueError) as e:
            print(f"batch: the feedback of {student} could not be rewritten ({type(e).__name__}: {e})", file=sys.stderr)


def judge_lateness(book: Gradebook, late: lateness.LatePolicy | None,
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


def atomic_write(path: Path, content: str) -> None:
    """Write content to path through a partial file in the same folder (scratch.replaced), removed if
    anything fails, swept by the next batch if this one is killed."""
    with scratch.replaced(path) as f:
        f.write(content)
