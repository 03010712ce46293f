"""python -m autograder stubs [--check]"""
from autograder import chapter, stubs
from autograder.cli import UsageError

HELP = (f"regenerate the student stubs in {chapter.current().folders['assignments']} from "
        f"{chapter.current().folders['solutions']} (--check: only report drift)")
ROOT = chapter.current().root
SOLUTIONS = chapter.current().solutions
ASSIGNMENTS = chapter.current().assignments


def add_arguments(parser):
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 listing the stubs that differ from what the solutions make")


def run(args):
    try:
        return check() if args.check else write()
    except ValueError as e:  # malformed markers or a missing hint: the message names the file and line
        raise UsageError(str(e)) from None


def check():
    drifted = stubs.drifted(SOLUTIONS, ASSIGNMENTS)
    for filename in drifted:
        print(f"out of date: {ASSIGNMENTS / filename}")
    if drifted:
        print("run `python -m autograder stubs` to regenerate them")
        return 1
    print(f"stubs up to date: {len(stubs.MODULES)} modules in {ASSIGNMENTS}")
    return 0


def write():
    for path in stubs.generate(SOLUTIONS, ASSIGNMENTS):
        print(f"wrote {path}")
    return 0
