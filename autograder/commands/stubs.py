"""python -m autograder stubs [--check]"""
from autograder.authoring import stubs
from autograder.cli import UsageError, chapter_of

HELP = ("regenerate the student stubs in the chapter's assignments folder from its solutions "
        "(--check: only report drift)")


def add_arguments(parser):
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 listing the stubs that differ from what the solutions make")


def run(args):
    try:
        return check(chapter_of(args)) if args.check else write(chapter_of(args))
    except ValueError as e:  # malformed markers or a missing hint: the message names the file and line
        raise UsageError(str(e)) from None


def check(chapter):
    drifted = stubs.drifted(chapter.solutions, chapter.assignments, chapter)
    for filename in drifted:
        print(f"out of date: {chapter.assignments / filename}")
    if drifted:
        print("run `python -m autograder stubs` to regenerate them")
        return 1
    print(f"stubs up to date: {len(chapter.parts)} modules in {chapter.assignments}")
    return 0


def write(chapter):
    for path in stubs.generate(chapter.solutions, chapter.assignments, chapter):
        print(f"wrote {path}")
    return 0
