"""python -m autograder export OUT --format canvas|moodle --roster ROSTER.csv --assignment NAME --out FILE.csv

Writes the final scores of the batch in OUT (its gradebook.db: after the late policy of its last
run) as a file the LMS's gradebook import reads (lms_export.py: the columns and how to map them).
One row per roster student; a roster student with no grade gets an empty cell, never 0; students
of the gradebook missing from the roster are named on stderr and left out.
"""
import csv
import sqlite3
import sys
from pathlib import Path

from autograder import scratch
from autograder.cli import UsageError
from autograder.course import lms_export
from autograder.course.gradebook import Gradebook

HELP = "write a batch's final scores for Canvas's or Moodle's gradebook import (one row per roster student)"


def add_arguments(parser):
    parser.add_argument("out", metavar="OUT", help="the batch's output folder (its gradebook.db)")
    parser.add_argument("--format", choices=sorted(lms_export.FORMATS), required=True)
    parser.add_argument("--roster", metavar="ROSTER.csv", required=True,
                        help="student,name,id,sis_user_id,sis_login_id,section (and email for Moodle); student is "
                             "the name batch gives (grades.csv)")
    parser.add_argument("--assignment", metavar="NAME", required=True, help="the grade column's heading in the LMS")
    parser.add_argument("--out", dest="file", metavar="FILE.csv", required=True)


def run(args):
    path = Path(args.out) / "gradebook.db"
    if not path.is_file():
        raise UsageError(f"{path}: no gradebook (run `python -m autograder batch DIR --out {args.out}` first)")
    if not args.assignment.strip():
        raise UsageError("--assignment must name the grade column")
    needed, rows_of = lms_export.FORMATS[args.format]
    try:
        roster = lms_export.read_roster(Path(args.roster), needed)
        book = Gradebook.read_only(path)
        try:
            grades = lms_export.final_grades(book)
        finally:
            book.close()
        header, rows = rows_of(roster, grades, args.assignment.strip())
    except lms_export.ExportError as e:
        raise UsageError(str(e) if str(e).startswith(str(args.roster)) else f"{args.roster}, {e}") from None
    except sqlite3.Error as e:
        raise UsageError(f"{path}: cannot be read as a gradebook ({e})") from None
    _write(Path(args.file), header, rows)
    listed = {r.student for r in roster}
    absent = [r.student for r in roster if grades.get(r.student) is None]
    strays = sorted(set(grades) - listed)
    print(f"{args.file}: {len(rows)} roster student(s), {len(rows) - len(absent)} with a grade ({args.format})")
    if absent:
        print(f"  no grade (empty cell): {', '.join(absent)}")
    if strays:
        print(f"warning: in the gradebook but not in {args.roster} (left out): {', '.join(strays)}", file=sys.stderr)
    return 0


def _write(path, header, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with scratch.replaced(path, newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
