"""python -m autograder book-check [FOLDER]"""
from pathlib import Path

from autograder.cli import UsageError, chapter_of

HELP = "check a folder of modules (default: the chapter's reference solutions) against the values the book prints"


def add_arguments(parser):
    parser.add_argument("folder", nargs="?", metavar="FOLDER", default=None,
                        help="modules to check, imported into this process: only code you trust "
                             "(default: the chapter's solutions folder)")


def run(args):
    from autograder.authoring import book_check

    manifest = chapter_of(args)
    folder = Path(args.folder) if args.folder else manifest.solutions
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a folder")
    results = book_check.check(folder, manifest=manifest)
    said = set()
    for name, ok, problem in results:
        if ok or problem in said:
            continue
        if problem == "differs from the book":
            print(f"{name}: differs from the book")
        else:  # one reason for many values (a module that does not import): said once
            said.add(problem)
            print(problem[:500])
    matched = sum(ok for _, ok, _ in results)
    print(f"book values: {matched}/{len(results)} match")
    return 0 if matched == len(results) else 1
