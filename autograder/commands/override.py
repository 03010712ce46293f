"""python -m autograder override OUT --student NAME --part PART --score X --reason "..." [--by NAME]
python -m autograder override OUT --student NAME --part PART --remove [--reason "..."] [--by NAME]
python -m autograder override OUT [--student NAME]          (list the overrides that stand)

A person's score for one part of one student (a TA's hand on the grade): stored in OUT's gradebook
(its own table, with who, when, why and the grader's score it replaced), added to the history, and
standing over every rerun and regrade until removed (a regrade that changes the grader's score keeps
the person's and records both). grades.csv (an `overrides` column), report.html ("Scores changed by
hand"), the student's feedback (a person changed that part, and why), `history` and `export` show it;
they are rewritten here at once (batch.rewrite_outputs).
"""
import getpass
import math
import sqlite3
from pathlib import Path

from autograder.cli import UsageError
from autograder.course.gradebook import Gradebook

HELP = "set (or --remove) a person's score for one part of one student, with a reason; it survives every regrade"


def add_arguments(parser):
    parser.add_argument("out", metavar="OUT", help="the batch's output folder (its gradebook.db)")
    parser.add_argument("--student", metavar="NAME", default=None, help="the student (grades.csv's student)")
    parser.add_argument("--part", metavar="PART", default=None, help="the part (a column of grades.csv)")
    parser.add_argument("--score", metavar="X", type=float, default=None, help="the part's score, 0 to its points")
    parser.add_argument("--reason", metavar="TEXT", default="", help="why (the student's feedback shows it)")
    parser.add_argument("--by", metavar="NAME", default=None, help="who (default: the user running this)")
    parser.add_argument("--remove", action="store_true", help="remove the override: the grader's score counts again")


def run(args):
    from autograder import batch

    path = Path(args.out) / "gradebook.db"
    if not path.is_file():
        raise UsageError(f"{path}: no gradebook (run `python -m autograder batch DIR --out {args.out}` first)")
    if args.part is None:  # list what stands
        book = Gradebook.read_only(path)
        found = book.overrides(args.student)
        book.close()
        for student, parts in found.items():
            for part, o in parts.items():
                print(f"{student}  {part}  {o['automatic']:g} -> {o['score']:g}  by {o['by']} at {o['at']}: {o['reason']}")
        if not found:
            print("no override stands" + (f" for {args.student!r}" if args.student else ""))
        return 0
    if args.student is None:
        raise UsageError("--part needs --student")
    by = (args.by or _user()).strip()
    if not by:
        raise UsageError("--by must name who changed the score")
    book = Gradebook(path)
    try:
        if args.remove:
            if args.score is not None:
                raise UsageError("--remove takes no --score")
            book.remove_override(args.student, args.part, by, args.reason)
            said = f"{args.student} {args.part}: override removed by {by}; the grader's score counts again"
        else:
            if args.score is None or not math.isfinite(args.score):
                raise UsageError("give --score X (or --remove)")
            if not args.reason.strip():
                raise UsageError("give --reason: the student's feedback says why a person changed the score")
            automatic = book.set_override(args.student, args.part, args.score, args.reason, by)
            said = f"{args.student} {args.part}: {automatic:g} -> {args.score:g} by {by} (stands over every regrade)"
    except ValueError as e:
        raise UsageError(f"{path}: {e}") from None
    except sqlite3.Error as e:
        raise UsageError(f"{path}: cannot be written as a gradebook ({e})") from None
    finally:
        book.close()
    batch.rewrite_outputs(args.out)
    print(said)
    print(f"  rewritten: {Path(args.out) / 'grades.csv'}, {Path(args.out) / 'report.html'}, "
          f"{Path(args.out) / 'feedback' / args.student}.md and .html")
    return 0


def _user():
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
