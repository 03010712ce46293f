"""python -m autograder batch DIR --out OUT [--jobs N] [--force] [--due ISO-8601 [--submitted-at TIMES.csv]
[--extensions EXT.csv] [--late-penalty PERCENT] [--late-days N]]"""
import os
import sys
from pathlib import Path

from autograder.cli import UsageError, chapter_of, settings_of
from autograder.course import lateness
from autograder.rubric import RubricError
from autograder.sandbox import container

HELP = "grade every student (subfolder, .zip or notebook folder) of DIR into OUT: results, feedback, grades.csv, gradebook.db"


def add_arguments(parser):
    parser.add_argument("folder", metavar="DIR")
    parser.add_argument("--out", required=True, metavar="OUT")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="parallel workers (default: 2)")
    parser.add_argument("--force", action="store_true", help="regrade submissions that are already in the gradebook")
    parser.add_argument("--rubric", metavar="FILE", default=None)
    late = parser.add_argument_group("due date and late penalty (docs: README, 'Due dates and late work')")
    late.add_argument("--due", metavar="ISO-8601", default=None,
                      help="the due date, e.g. 2026-12-01T23:59:00+01:00 (no offset: UTC); grades.csv then adds "
                           "submitted_at, due, late_days, penalty, final_score and late_note")
    late.add_argument("--submitted-at", metavar="TIMES.csv", default=None,
                      help="student,submitted_at: when each student handed in (an LMS export); wins over nbgrader's "
                           "timestamp.txt and Canvas's LATE marker")
    late.add_argument("--extensions", metavar="EXT.csv", default=None, help="student,due: a student's own due date")
    late.add_argument("--late-penalty", metavar="PERCENT", type=float, default=None,
                      help="percent of the score taken off per started day (24 h) late (default 0)")
    late.add_argument("--late-days", metavar="N", type=int, default=None,
                      help="more than N started days late scores 0 (exactly N days late is still penalised)")


def run(args):
    refused = container.refuse_many(settings_of(args).sandbox.container, "batch")
    if refused:
        raise UsageError(refused)
    folder = Path(args.folder)
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a folder")
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    late = late_policy(args)
    from autograder.batch import run_batch  # here: every command's parser is built from this module (cli.main)

    try:  # the summary (stdout) is printed once grades.csv is written
        run_batch(folder, args.out, jobs=args.jobs, force=args.force, rubric_path=args.rubric, summary=sys.stdout,
                  settings=settings_of(args), late=late, chapter=chapter_of(args))
    except RubricError as e:
        raise UsageError(str(e)) from None
    return 0


def late_policy(args):
    """The lateness.LatePolicy of the options, or None without --due; every mistake is a UsageError
    naming the option, or the file and line, before anything is graded."""
    given = [name for name in ("submitted_at", "extensions", "late_penalty", "late_days")
             if getattr(args, name) is not None]
    if args.due is None:
        if given:
            raise UsageError(f"--{given[0].replace('_', '-')} needs --due (the due date the lateness is counted from)")
        return None
    if args.late_penalty is not None and not lateness.penalty_is_valid(args.late_penalty):
        raise UsageError(f"--late-penalty must be a percent from 0 to 100, not {args.late_penalty:g}")
    if args.late_days is not None and args.late_days < 0:
        raise UsageError(f"--late-days must be 0 or more, not {args.late_days}")
    try:
        return lateness.LatePolicy(
            due=lateness.parse_time(args.due, "--due"), percent_per_day=args.late_penalty or 0.0,
            max_days=args.late_days,
            times=lateness.read_csv_times(Path(args.submitted_at), "submitted_at") if args.submitted_at else {},
            extensions=lateness.read_csv_times(Path(args.extensions), "due") if args.extensions else {})
    except lateness.LateInputError as e:
        raise UsageError(str(e)) from None
