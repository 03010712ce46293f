"""python -m autograder stubs [--check]"""
from pathlib import Path

from autograder import stubs

HELP = "regenerate the student stubs in assignments/ch03 from solutions/ch03 (--check: only report drift)"
ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions" / "ch03"
ASSIGNMENTS = ROOT / "assignments" / "ch03"


def add_arguments(parser):
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 listing the stubs that differ from what the solutions make")


def run(args):
    if args.check:
        drifted = stubs.drifted(SOLUTIONS, ASSIGNMENTS)
        for filename in drifted:
            print(f"out of date: {ASSIGNMENTS.relative_to(ROOT) / filename}")
        if drifted:
            print("run `python -m autograder stubs` to regenerate them")
            return 1
        print(f"stubs up to date: {len(stubs.MODULES)} modules in {ASSIGNMENTS.relative_to(ROOT)}")
        return 0
    for path in stubs.generate(SOLUTIONS, ASSIGNMENTS):
        print(f"wrote {path.relative_to(ROOT)}")
    return 0
