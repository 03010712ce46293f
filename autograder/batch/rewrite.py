"""The outputs rewritten from the gradebook after a change made outside a batch run (`override`)."""
from __future__ import annotations

import csv
from pathlib import Path

from autograder import chapter as chapter_mod
from autograder import text
from autograder.batch.outputs import write_csv, write_feedback, write_regrades
from autograder.course import lateness
from autograder.course.gradebook import Gradebook
from autograder.reports import class_report


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
