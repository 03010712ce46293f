"""python -m autograder notebooks [--check] | --extract NOTEBOOKS --out DIR"""
from autograder import submitted_notebooks
from autograder.authoring import notebooks
from autograder.cli import UsageError, chapter_of

HELP = ("regenerate the nbgrader source notebooks in the chapter's source folder from the templates "
        "and its solutions "
        "(--check: only report drift; --extract: write the modules of notebooks' solution cells)")


def add_arguments(parser):
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 listing the notebooks that differ from what the generator makes")
    parser.add_argument("--extract", metavar="NOTEBOOKS",
                        help="a notebook or a folder of notebooks: write the module of each solution cell into --out")
    parser.add_argument("--out", metavar="DIR", help="where --extract writes <module>.py files")


def run(args):
    chapter = chapter_of(args)
    if args.extract:
        if args.check or not args.out:
            raise UsageError("--extract needs --out DIR and goes without --check")
        try:
            written = submitted_notebooks.extract_modules(args.extract, args.out, chapter.parts)
        except (ValueError, OSError) as e:
            raise UsageError(str(e)) from None
        for module in written:
            print(f"wrote {args.out}/{module}.py")
        missing = [name for name in chapter.parts if name not in written]
        if missing:
            print(f"no solution cell for: {', '.join(missing)}")
        return 0
    if args.out:
        raise UsageError("--out goes with --extract")
    try:
        return check(chapter) if args.check else write(chapter)
    except ValueError as e:  # template or solution marker errors name the file and line
        raise UsageError(str(e)) from None


def check(chapter):
    drifted = notebooks.drifted(chapter=chapter)
    for filename in drifted:
        print(f"out of date: {chapter.source / filename}")
    if drifted:
        print("run `python -m autograder notebooks` to regenerate them")
        return 1
    print(f"notebooks up to date: {len(notebooks.templates(chapter.notebook_templates))} notebooks in {chapter.source}")
    return 0


def write(chapter):
    for path in notebooks.generate(chapter=chapter):
        print(f"wrote {path}")
    return 0
