"""python -m autograder selftest [--jobs N] [--only ID ...] [--list] [--chapter FILE]"""
import sys
import time

from autograder.cli import UsageError, chapter_of, settings_of

HELP = "grade the suites' corpus of mutants (bugs) and variants (correct alternatives); print the kill rate"


def add_arguments(parser):
    parser.add_argument("--jobs", type=int, default=1, metavar="N", help="grade N entries at a time (N processes)")
    parser.add_argument("--only", action="append", default=[], metavar="ID",
                        help="grade only the entries whose id contains ID (repeatable)")
    parser.add_argument("--all-parts", action="store_true",
                        help="grade every part of every entry (by default, only the parts whose process can import "
                             "an edited module: the others run the solutions' code)")
    parser.add_argument("--list", action="store_true", help="list the corpus and exit")


def run(args):
    from autograder import selftest

    manifest = chapter_of(args)  # --chapter, else this repository's
    try:
        entries = selftest.corpus(manifest.parts)
        if args.only:
            entries = [e for e in entries if any(text in e.id for text in args.only)]
            if not entries:
                raise UsageError(f"no corpus entry matches {', '.join(args.only)}")
        if args.list:
            for e in entries:
                target = f" -> {e.part} ({e.message!r})" if e.kind == "mutant" else ""
                print(f"{e.kind:8} {e.id}{target}: {e.why}")
            return 0
        if args.jobs < 1:
            raise UsageError("--jobs must be at least 1")
        started = time.monotonic()
        outcomes = selftest.run_all(entries, jobs=args.jobs, progress=_print, all_parts=args.all_parts,
                                    settings=settings_of(args), manifest=manifest)
    except selftest.CorpusError as e:
        raise UsageError(str(e)) from None
    result = selftest.summary(outcomes)
    print()
    if result["mutants"]:
        print(f"kill rate: {result['killed']}/{result['mutants']} mutants caught in the right part with the right "
              f"message ({result['kill_rate']:.0%})")
    if result["variants"]:
        print(f"variants: {result['variants_full_marks']}/{result['variants']} kept full marks")
    print(f"{len(outcomes)} submissions graded in {time.monotonic() - started:.1f} s")
    return 0 if result["ok"] else 1


def _print(outcome):
    if outcome.kind == "mutant":
        status = "killed  " if outcome.ok else "SURVIVED"
    else:
        status = "full    " if outcome.ok else "LOST    "
    print(f"{status} {outcome.kind:7} {outcome.id:45} {outcome.seconds:5.1f}s  {outcome.detail}", flush=True)
    sys.stdout.flush()
