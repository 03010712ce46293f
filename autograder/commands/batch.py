"""python -m autograder batch DIR --out OUT [--jobs N] [--force]"""
import os
import sys
from pathlib import Path

from autograder.batch import run_batch
from autograder.cli import UsageError, settings_of
from autograder.rubric import RubricError

HELP = "grade every student (subfolder, .zip or notebook folder) of DIR into OUT: results, feedback, grades.csv, gradebook.db"


def add_arguments(parser):
    parser.add_argument("folder", metavar="DIR")
    parser.add_argument("--out", required=True, metavar="OUT")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="parallel workers (default: 2)")
    parser.add_argument("--force", action="store_true", help="regrade submissions that are already in the gradebook")
    parser.add_argument("--rubric", metavar="FILE", default=None)


def run(args):
    folder = Path(args.folder)
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a folder")
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    try:  # the summary (stdout) is printed once grades.csv is written
        run_batch(folder, args.out, jobs=args.jobs, force=args.force, rubric_path=args.rubric, summary=sys.stdout,
                  settings=settings_of(args))
    except RubricError as e:
        raise UsageError(str(e)) from None
    return 0
