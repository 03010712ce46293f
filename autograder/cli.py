"""`python -m autograder COMMAND ...`: each command lives in autograder/commands/<name>.py.

A command module defines HELP (one line), add_arguments(parser) and run(args) -> exit status.
"""
import argparse
import importlib
import sys
from dataclasses import replace

from autograder import chapter as chapter_mod, settings as settings_mod
from autograder.chapter import Chapter
from autograder.envcheck import EnvironmentFailed
from autograder.sandbox.client import SandboxUnavailable, check_device
from autograder.settings import SEED_ENV, Settings  # noqa: F401 (SEED_ENV: the variable's name, for callers)

COMMANDS = ["grade", "batch", "selftest", "stubs", "release", "ci", "gradescope", "notebooks", "book-check", "history",
            "export", "override"]
GRADING = ("grade", "batch", "selftest", "ci", "gradescope")  # the commands that run student code


class UsageError(Exception):
    """Bad input to the grader itself (arguments, rubric, paths): exit status 2 with a message."""


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m autograder", description="Chapter 3 autograder")
    sub = parser.add_subparsers(dest="command", required=True)
    modules = {}
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"autograder.commands.{name.replace('-', '_')}")
        except ModuleNotFoundError as e:
            if e.name == f"autograder.commands.{name.replace('-', '_')}":
                continue  # command not built yet
            raise
        modules[name] = module
        command = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(command)
        command.add_argument("--chapter", metavar="FILE", default=None,
                             help="the chapter manifest (chapter.yml) to work on (default: this repository's)")
        if name in GRADING:
            _add_sandbox_arguments(command)
    args = parser.parse_args(argv)
    try:
        args.chapter = chapter_of(args)  # the chapter, resolved once here and passed down from here on
        if args.command in GRADING:
            args.settings = settings_from(args)
        return modules[args.command].run(args) or 0
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except SandboxUnavailable as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except EnvironmentFailed as e:
        print(f"error: {e}", file=sys.stderr)
        return 3


def _add_sandbox_arguments(parser):
    parser.add_argument("--unsafe-no-sandbox", action="store_true",
                        help="run student code even where it cannot be isolated (warned on every run and "
                             "recorded in every result); only for code you trust")
    parser.add_argument("--container", action="store_true",
                        help="each submission runs in a throw-away container of its own (Gradescope, a Docker "
                             "runner): where the kernel refuses namespaces to root, grade in container mode "
                             "(docs/sandbox.md) instead of refusing; elsewhere the full sandbox is used")
    parser.add_argument("--seed", type=int, default=None,
                        help="the secret behind the unseen inputs, as recorded by an earlier run (instructors "
                             "only): regrade with exactly the same inputs; default: a fresh secret per run")
    parser.add_argument("--device", choices=("cpu", "cuda"), default=None,
                        help="where the student's modules run (default cpu); with cuda they run on the GPU "
                             "inside the sandbox, and the checks' own reference math stays on the CPU")


def settings_from(args) -> Settings:
    """The run's settings: the environment's (settings.from_environment), overridden by the flags; the
    run's secret drawn once here when neither gives one. The engine hands them to every worker."""
    settings = settings_mod.from_environment()
    if args.unsafe_no_sandbox:
        settings = settings.with_sandbox(unsafe=True)
    if args.container:
        settings = settings.with_sandbox(container=True)
    try:
        settings = settings.with_sandbox(device=check_device(args.device or settings.sandbox.device))
    except ValueError as e:
        raise UsageError(str(e)) from None
    return (replace(settings, seed=args.seed) if args.seed is not None else settings).with_secret()


def chapter_of(args) -> Chapter:
    """The chapter a command works on: --chapter's manifest (a path or the Chapter main() resolved),
    else this repository's (chapter.current()); a manifest that cannot be read: UsageError."""
    given = getattr(args, "chapter", None)
    if isinstance(given, Chapter):
        return given
    try:
        return chapter_mod.load(given) if given else chapter_mod.current()
    except chapter_mod.ManifestError as e:
        raise UsageError(str(e)) from None


def rubric_of(args) -> str:
    """--rubric, else the chapter's grading.yml."""
    return str(getattr(args, "rubric", None) or chapter_of(args).rubric)


def settings_of(args) -> Settings:
    """The settings main() made for a grading command (a caller that built args itself: the environment's)."""
    return getattr(args, "settings", None) or settings_mod.from_environment()
