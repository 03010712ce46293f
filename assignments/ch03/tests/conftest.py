"""Shared setup for the public chapter 3 tests.

--submission=DIR   test the modules in DIR (default: assignments/ch03, the folder above this one);
                   with a space instead of '=', name the tests folder too: `pytest tests --submission DIR`
-m causal          run only the tests of one module (see MODULES for the markers)

Modules are imported by their plain names (`causal`, `mha`, ...) from the submission folder,
fresh, so that a module of the same name imported earlier from somewhere else never stands in.
A test that reaches code raising NotImplementedError fails with "not implemented yet: <what>", one that
reaches code raising another error with that error and the line of the submission that raised it (no
traceback of the tests or of torch); a wrong result that matches a common mistake is named as that
mistake (_diagnose.py), in one message.

grader_versions.json (beside this file, written by the course's release) holds the Python, torch
and NumPy versions the grader uses: the header of every run shows them, and a warning (never a
failure) says when yours differ in their major or minor version.
"""
import importlib
import json
import platform
import sys
import traceback
from pathlib import Path

import numpy as np
import pytest
import torch

from _diagnose import Check

HERE = Path(__file__).resolve().parent
# the chapter's modules (its manifest's copy, written by `python -m autograder stubs`)
MODULES = json.loads((HERE / "chapter.json").read_text(encoding="utf-8"))["parts"]


def pytest_addoption(parser):
    try:
        parser.addoption("--submission", metavar="DIR", default=None,
                         help="folder with the chapter 3 modules to test (default: assignments/ch03)")
    except ValueError:  # already added by a conftest loaded before this one; the option is the same
        pass


def pytest_configure(config):
    for name in MODULES:
        config.addinivalue_line("markers", f"{name}: the tests of {name}.py")
    folder = config.getoption("submission")
    if folder and not Path(folder).is_dir():
        raise pytest.UsageError(f"--submission {folder}: no such folder")


def grader_versions():
    """{python, torch, numpy} the grader uses, or {} when this folder has no grader_versions.json."""
    try:
        found = json.loads((HERE / "grader_versions.json").read_text())
    except (OSError, ValueError):
        return {}
    return {k: str(found[k]) for k in ("python", "torch", "numpy") if isinstance(found, dict) and k in found}


def local_versions():
    import numpy

    return {"python": platform.python_version(), "torch": torch.__version__, "numpy": numpy.__version__}


def _major_minor(version):
    return tuple(version.split("+")[0].split(".")[:2])


def version_differences():
    """'Python 3.10.2 here, 3.11.7 on the grader; ...' for each that differs in major.minor ('' if none)."""
    grader, here = grader_versions(), local_versions()
    names = {"python": "Python", "torch": "torch", "numpy": "NumPy"}
    found = [f"{names[k]} is {here[k]} here, {grader[k]} on the grader" for k in names
             if k in grader and _major_minor(grader[k]) != _major_minor(here[k])]
    return "; ".join(found)


def version_warning():
    """The warning shown at the start of a run where the versions differ ('' when they do not)."""
    found = version_differences()
    if not found:
        return ""
    return (f"warning: your {found}. Tests that pass here can still differ on the grader in the last digits of "
            "floating-point results (the checks allow small tolerances), in default dtypes and in what an "
            "operation accepts or warns about; the grader's run is the one that counts.")


def pytest_report_header(config):
    grader = grader_versions()
    if not grader:
        return None
    here = local_versions()
    line = ", ".join(f"{k} {here[k]}" for k in ("python", "torch", "numpy"))
    their = ", ".join(f"{k} {grader[k]}" for k in ("python", "torch", "numpy") if k in grader)
    return [f"chapter 3: this machine has {line}; the grader has {their}"]


def pytest_sessionstart(session):
    """The version warning, before any test runs (also with -q, which hides the header); never a failure."""
    message = version_warning()
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if message and reporter is not None:
        reporter.write_line(message, yellow=True)


def submission_folder(config):
    """The folder of the modules under test: --submission, else the folder above this one."""
    folder = config.getoption("submission")
    return Path(folder).resolve() if folder else HERE.parent


@pytest.fixture(scope="session")
def submission_dir(pytestconfig):
    return submission_folder(pytestconfig)


@pytest.fixture
def load(submission_dir):
    """load("causal") -> the module causal.py of the submission folder."""

    def load_module(name):
        module = sys.modules.get(name)
        if module is None or Path(getattr(module, "__file__", None) or ".").parent != submission_dir:
            # a stale copy of any chapter module could be imported by another (mha imports causal)
            for stale in MODULES:
                sys.modules.pop(stale, None)
            if str(submission_dir) in sys.path:
                sys.path.remove(str(submission_dir))
            sys.path.insert(0, str(submission_dir))
            if not (submission_dir / f"{name}.py").is_file():
                pytest.fail(f"{name}.py is missing from {submission_dir}", pytrace=False)
            # what a module runs when imported (a demo line of the book's, torch.manual_seed(123) and a forward)
            # must not move the random numbers a test drew its weights from after seeding: the generators'
            # states are put back after the import
            generators = (torch.get_rng_state(), np.random.get_state())
            try:
                return importlib.import_module(name)
            except Exception as e:  # any import error is the student's to see, in one line
                problem = f"{type(e).__name__}: {e}"
            finally:
                torch.set_rng_state(generators[0])
                np.random.set_state(generators[1])
            pytest.fail(f"{name}.py could not be imported: {problem}", pytrace=False)
        return module

    return load_module


@pytest.fixture(scope="session")
def book():
    """The book's printed values: name -> tensor (ints stay ints); also 'inputs' and 'batch'."""
    raw = json.loads((HERE / "book_examples.json").read_text())
    values = {name: entry["value"] if isinstance(entry["value"], int) else torch.tensor(entry["value"])
              for name, entry in raw["values"].items()}
    values["inputs"] = torch.tensor(raw["inputs"])
    values["batch"] = torch.stack((values["inputs"], values["inputs"]))
    return values


class PytestCheck(Check):
    """_diagnose.Check, failing as pytest failures: the message without a traceback."""

    @staticmethod
    def fail(message):
        __tracebackhide__ = True
        raise pytest.fail.Exception(message, pytrace=False) from None  # no chained error shown


@pytest.fixture
def check():
    return PytestCheck()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    try:
        return (yield)
    except NotImplementedError as e:
        frame = traceback.extract_tb(e.__traceback__)[-1]
        missing = str(e) or f"{Path(frame.filename).name}, line {frame.lineno}, in {frame.name}"
        message = f"not implemented yet: {missing}"
    except AssertionError:  # a test's own assert: pytest's message, as ever
        raise
    except Exception as e:  # raised in the student's code: the error and the student's line that raised it
        message = raised_in_submission(e, item.config)
    pytest.fail(message, pytrace=False)  # out of the except block: no chained error shown


def raised_in_submission(error, config):
    """'TypeError: ...' and where in the submission's modules it was raised (the last such line); the
    test's own frames and the libraries' are left out (no fixture values, no torch internals)."""
    folder = submission_folder(config)
    said = f"{type(error).__name__}: {error}"
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        path = Path(frame.filename).resolve()
        if path.parent == folder:
            return f"{said}\n  raised in {path.name}, line {frame.lineno}, in {frame.name}: {(frame.line or '').strip()}"
    return said
