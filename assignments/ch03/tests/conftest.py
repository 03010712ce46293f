"""Shared setup for the public chapter 3 tests.

--submission=DIR   test the modules in DIR (default: assignments/ch03, the folder above this one);
                   with a space instead of '=', name the tests folder too: `pytest tests --submission DIR`
-m causal          run only the tests of one module (see MODULES for the markers)

Modules are imported by their plain names (`causal`, `mha`, ...) from the submission folder,
fresh, so that a module of the same name imported earlier from somewhere else never stands in.
A test that reaches code raising NotImplementedError fails with "not implemented yet: <what>"; a wrong
result that matches a common mistake is named as that mistake (_diagnose.py), in one message.
"""
import importlib
import json
import sys
import traceback
from pathlib import Path

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


@pytest.fixture(scope="session")
def submission_dir(pytestconfig):
    folder = pytestconfig.getoption("submission")
    return Path(folder).resolve() if folder else HERE.parent


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
            try:
                return importlib.import_module(name)
            except Exception as e:  # any import error is the student's to see, in one line
                problem = f"{type(e).__name__}: {e}"
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
    pytest.fail(f"not implemented yet: {missing}", pytrace=False)
