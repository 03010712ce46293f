"""Grades for an LMS's gradebook import, from a batch's gradebook (the `export` command).

    roster = read_roster(Path("roster.csv"))                 # student,name,id,sis_user_id,sis_login_id,section[,email]
    grades = final_grades(Gradebook.read_only(out / "gradebook.db"))
    header, rows = canvas_rows(roster, grades, "Chapter 3")  # or moodle_rows(...)

The grade is the final score: after the late policy of the batch's last run when it had a due
date (gradebook.lateness), else the score. One row per roster student, in roster order; a roster
student with no grade (not in the class, or whose grading did not finish) gets an empty cell,
never 0. Every text cell goes through text.csv_cell (no spreadsheet evaluates it).

Canvas (Grades > Import): `Student,ID,SIS User ID,SIS Login ID,Section,<assignment>`; Canvas matches
a row to its student by ID, SIS User ID or SIS Login ID, and the last column to the assignment of
that name (write it as Canvas's own export heads it, `Chapter 3 (12345)`, to update an existing
assignment). Moodle (Grades > Import > CSV file): `Email address,<assignment>`; map "Email
address" to the user's email address and `<assignment>` to the grade item.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from autograder import text
from autograder.course.csv_files import read_header_and_rows
from autograder.course.gradebook import Gradebook
from autograder.course.lateness import Late

CANVAS_ROSTER = ("student", "name", "id", "sis_user_id", "sis_login_id", "section")
MOODLE_ROSTER = ("student", "email")
CANVAS_IDS = ("id", "sis_user_id", "sis_login_id")  # Canvas matches a row by any one of them
EMAIL = re.compile(r"[^@\s,;]+@[^@\s,;]+")
RETRY = "retry:"  # batch.RETRY: a grade kept with this prefix did not finish (graded again on the next run)


class ExportError(ValueError):
    """A roster that cannot be used: str() names the file and the line."""


@dataclass(frozen=True)
class RosterRow:
    student: str
    cells: dict[str, str]  # column (lower case) -> text
    line: int


def read_roster(path: Path, needed: tuple[str, ...]) -> list[RosterRow]:
    """The roster's rows, in file order; a missing column, an empty or repeated student is an
    ExportError naming the file and line."""
    header, rows = read_header_and_rows(path, needed, ExportError, joiner=", ")
    roster: list[RosterRow] = []
    lines: dict[str, int] = {}
    for number, row in enumerate(rows, start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) > len(header):
            raise ExportError(f"{path}, line {number}: {len(row)} cells for {len(header)} columns (a comma in a "
                              f"name must be inside double quotes)")
        cells = {name: (row[i].strip() if i < len(row) else "") for i, name in enumerate(header)}
        student = cells["student"]
        if not student:
            raise ExportError(f"{path}, line {number}: no student name (the name `batch` gives: grades.csv's student)")
        if student in lines:
            raise ExportError(f"{path}, line {number}: {student!r} is also on line {lines[student]}")
        lines[student] = number
        roster.append(RosterRow(student, cells, number))
    return roster


def final_grades(book: Gradebook) -> dict[str, float | None]:
    """{student: final score} of the gradebook: the score with any override by hand (gradebook.overrides),
    after the last run's late policy where it had one; None where the grading did not finish (an empty
    cell, never 0)."""
    late = book.lateness()
    effective = {student: float(results.get("score", 0)) for student, results, _ in book.effective_records()}
    grades: dict[str, float | None] = {}
    for student, (digest, _, score, _) in book.graded().items():
        if digest.startswith(RETRY):  # the grader failed on it, or an ambiguous name: not a grade
            grades[student] = None
        elif student in late:  # the late policy on the grade of record (an override after the run included)
            grades[student] = Late.from_row(late[student]).rescored(effective.get(student, score)).final_score
        else:
            grades[student] = effective.get(student, score)
    return grades


def _grade(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def canvas_rows(roster: list[RosterRow], grades: dict[str, float | None], assignment: str) -> tuple[list[str], list[list[str]]]:
    """Canvas's import rows; a roster row with none of id, sis_user_id, sis_login_id is an ExportError naming
    its line: Canvas finds a student by one of them and would skip (or mismatch) a row without any."""
    for r in roster:
        if not any(r.cells[c] for c in CANVAS_IDS):
            raise ExportError(f"line {r.line}: {r.student!r} has no id, sis_user_id or sis_login_id (Canvas finds its "
                              f"students by one of them: copy them from Canvas's own gradebook export, Grades > Export)")
    header = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", text.csv_cell(assignment)]
    rows = [[text.csv_cell(r.cells[c]) for c in CANVAS_ROSTER[1:]] + [_grade(grades.get(r.student))] for r in roster]
    return header, rows


def moodle_rows(roster: list[RosterRow], grades: dict[str, float | None], assignment: str) -> tuple[list[str], list[list[str]]]:
    header = ["Email address", text.csv_cell(assignment)]
    for r in roster:
        email = r.cells["email"]
        if not email or not EMAIL.fullmatch(email):
            what = "no email" if not email else f"{text.excerpt(email, 80)!r} as email, which is not an email address"
            raise ExportError(f"line {r.line}: {r.student!r} has {what} (Moodle's import finds its students by the "
                              f"email address of their Moodle account: copy it from Moodle's participants or "
                              f"grader report export)")
    return header, [[text.csv_cell(r.cells["email"]), _grade(grades.get(r.student))] for r in roster]


FORMATS = {"canvas": (CANVAS_ROSTER, canvas_rows), "moodle": (MOODLE_ROSTER, moodle_rows)}
