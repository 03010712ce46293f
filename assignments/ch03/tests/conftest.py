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

import numpy as np
import pytest
import torch

from _diagnose import TOLERANCE, same, which_mistake

HERE = Path(__file__).resolve().parent
MODULES = ["simple_attention", "self_attention_v1", "self_attention_v2", "weight_transfer",
           "causal", "mha", "exercises", "numpy_attention"]


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


class Check:
    """Assertions whose messages say what was computed, what was expected and what came back."""

    @staticmethod
    def tensor(got, what):
        __tracebackhide__ = True
        if not isinstance(got, torch.Tensor):
            pytest.fail(f"{what} should return a torch.Tensor, got {type(got).__name__}", pytrace=False)
        return got.detach()

    def shape(self, got, expected, what):
        __tracebackhide__ = True
        got = self.tensor(got, what)
        if tuple(got.shape) != tuple(expected):
            pytest.fail(f"{what}: expected shape {tuple(expected)}, got {tuple(got.shape)}", pytrace=False)

    def close(self, got, expected, what, mistakes=None):
        """got matches expected to 1e-4 (the book prints 4 decimals).

        mistakes: a function returning [(wrong output, explanation)] (see _diagnose.py); when got
        differs from expected but matches one of them, the message is that explanation.
        """
        __tracebackhide__ = True
        self.shape(got, expected.shape, what)
        got = self.tensor(got, what).to(expected.dtype)
        if same(got, expected):
            return
        why = self.diagnosis(got, expected, mistakes)
        if why:
            pytest.fail(f"{what} is wrong: {why}", pytrace=False)
        largest = (got - expected).abs().max().item()
        pytest.fail(f"{what}: expected\n{expected}\ngot\n{got}\n(largest difference {largest:.4g}, "
                    f"tolerance {TOLERANCE:g})", pytrace=False)

    @staticmethod
    def no_problem(problem, what):
        """Fail with '<what>: <problem>' when a diagnosis (see _diagnose.py) found a problem."""
        if problem:
            pytest.fail(f"{what}: {problem}", pytrace=False)

    @staticmethod
    def diagnosis(got, expected, mistakes):
        """The explanation of the known mistake got matches, or '' (also when the mistakes cannot be computed)."""
        if mistakes is None:
            return ""
        try:
            return which_mistake(got, expected, mistakes())
        except Exception:  # a module too far from the specification to recompute: no diagnosis
            return ""

    @staticmethod
    def array_close(got, expected, what):
        """The NumPy version of close: got must be an ndarray matching expected to 1e-4."""
        __tracebackhide__ = True
        if not isinstance(got, np.ndarray):
            pytest.fail(f"{what} should return a numpy array, got {type(got).__name__}", pytrace=False)
        expected = np.asarray(expected)
        assert got.shape == expected.shape, f"{what}: expected shape {expected.shape}, got {got.shape}"
        np.testing.assert_allclose(got, expected, atol=1e-4, rtol=0,
                                   err_msg=f"{what}: expected\n{expected}\ngot\n{got}")


@pytest.fixture
def check():
    return Check()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    try:
        return (yield)
    except NotImplementedError as e:
        frame = traceback.extract_tb(e.__traceback__)[-1]
        missing = str(e) or f"{Path(frame.filename).name}, line {frame.lineno}, in {frame.name}"
    pytest.fail(f"not implemented yet: {missing}", pytrace=False)
