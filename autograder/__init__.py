"""Grading package for the Chapter 3 attention exercises.

The data path from a submission to a grade, top-down:
submission.py (stage the files) -> sandbox/ (run student code in an isolated child) ->
runner/ (run the hidden suites' checks, judged in this process) -> rubric.py (points) ->
reports/ (one module per format: table, results JSON, JUnit, Markdown). engine.py assembles
them for every entry point; chapter.py (the chapter manifest) and settings.py (the run's settings)
are what they are configured with. docs/architecture.md walks the path.
"""
import os
import sys


def _forget_working_directory():
    """`python -m autograder` puts the working directory first on sys.path: run from inside a
    submission, its json.py, pathlib.py or torch.py would be imported by the grader itself. Only
    the folder holding this package stays (os and sys are loaded before any of this runs)."""
    home, cwd = os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.getcwd()
    if cwd != home:
        sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != cwd]


if sys.argv[:1] == ["-m"]:  # while `python -m` looks for the package, argv[0] is "-m"
    _forget_working_directory()

from pathlib import Path  # noqa: E402

PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = PACKAGE_DIR.parent


def __getattr__(name):
    """PARTS: the chapter's parts, from its manifest (autograder/chapter.py; read on first use, so
    that the package imports nothing more where the sandbox's child imports it)."""
    if name == "PARTS":
        from autograder.chapter import current

        return current().parts
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
