"""python -m autograder history OUT [--student NAME]

Every grade the batch in OUT ever recorded, oldest first, from its gradebook's history table:
when, why it was graded (first grade, the submission changed, graded by another grader, --force,
...), the score and each part's, and short fingerprints of the submission and of the grader. The
answer to "why did my grade change": a grader fingerprint that changed between two rows means the
rubric, the hidden suites, the reference or the versions changed; a submission fingerprint that
changed means the student handed in something else; the reason of a regrade names what changed (which
checks' points, which suites' files, which versions), and an override by hand has rows of its own
(who, the part, the scores, why). The gradebook is opened read-only.
"""
import sqlite3
from pathlib import Path

from autograder.cli import UsageError
from autograder.course.gradebook import Gradebook

HELP = "every grade a batch's gradebook recorded for a student (or everyone), oldest first, with why it changed"


def add_arguments(parser):
    parser.add_argument("out", metavar="OUT", help="the batch's output folder (its gradebook.db)")
    parser.add_argument("--student", metavar="NAME", default=None, help="one student (default: everyone)")


def run(args):
    path = Path(args.out) / "gradebook.db"
    if not path.is_file():
        raise UsageError(f"{path}: no gradebook (run `python -m autograder batch DIR --out {args.out}` first)")
    try:
        book = Gradebook.read_only(path)
        rows = book.history(args.student)
        book.close()
    except sqlite3.Error as e:
        raise UsageError(f"{path}: cannot be read as a gradebook ({e})") from None
    if not rows:
        raise UsageError(f"{path}: no grade recorded" + (f" for {args.student!r}" if args.student else ""))
    print(history_text(rows))
    return 0


def history_text(rows):
    """One line per grade; the parts that moved since the student's previous grade on the next line (a
    grade by the grader is compared with the grader's previous grade; an override set or removed, a row
    without a run, with the row before it)."""
    lines, previous, graded = [], {}, {}
    for row in rows:
        lines.append(f"{row['graded_at']}  {row['student']}  {row['score']:g} / {row['max_score']:g}  "
                     f"{row['reason']}  (submission {row['digest'].removeprefix('retry:').removeprefix('machine:')[:10]}, "
                     f"grader {row['grader'][:10] or 'unknown'})"
                     + (f"  problem: {row['problem']}" if row['problem'] else ""))
        before = (previous if row["run"] is None else graded).get(row["student"])
        if before is not None:
            moved = [f"{part} {before.get(part, 0):g} -> {score:g}" for part, score in row["parts"].items()
                     if before.get(part, 0) != score]
            if moved:
                lines.append("    moved: " + "; ".join(moved))
        previous[row["student"]] = row["parts"]
        if row["run"] is not None:
            graded[row["student"]] = row["parts"]
    return "\n".join(lines)
