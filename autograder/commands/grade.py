"""python -m autograder grade PATH [--json FILE] [--junit FILE] [--markdown FILE] [--rubric FILE]"""
import sys
from pathlib import Path

from autograder.cli import UsageError

HELP = "grade one submission (a folder of modules, a .zip, or notebooks) and print the score table"


def add_arguments(parser):
    parser.add_argument("path", help="folder of student modules, a .zip, a notebook or a folder of notebooks")
    parser.add_argument("--json", metavar="FILE", help="write Gradescope-style results.json here (for instructors: "
                                                       "every message, the student's own text, the run's secret)")
    parser.add_argument("--junit", metavar="FILE", help="write JUnit XML here (for instructors)")
    parser.add_argument("--markdown", metavar="FILE", help="write the student's Markdown report here")
    parser.add_argument("--rubric", metavar="FILE", default=None, help="grading.yml to use (default: the chapter's)")


def run(args):
    path = Path(args.path)
    if not path.exists():
        raise UsageError(f"{path}: no such file or folder")
    from autograder.commands import open_engine
    from autograder.submission import SubmissionError

    # the reference first (EnvironmentFailed stops here); the fork server imports torch meanwhile.
    # The folders around the submission are out of its sight by the sandbox's mode (docs/sandbox.md)
    with open_engine(args) as engine:
        from autograder import grading, reports  # torch: after the fork server has started (or refused)

        try:
            grade = engine.grade(path)
        except SubmissionError as e:
            raise UsageError(str(e)) from None
    reports.write(grade, args.json, args.junit, args.markdown)  # files first: printing cannot cost them
    reports.emit(reports.table(grade))  # the instructor's table: everything, and the run's secret
    if grade.not_graded:  # the machine kept a part from running: no score stands (runner.NOT_GRADED)
        print(f"error: {grading.not_graded_problem(grade)}", file=sys.stderr)
        return 3
    return 0
