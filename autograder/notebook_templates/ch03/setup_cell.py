# Read-only setup: run this cell first (Kernel > Restart & Run All runs everything in order).
# BOOK holds the numbers the book prints for the examples the tests use; `check` holds the
# assertions of the test cells; `publish` runs below each solution cell and makes that cell's
# code importable under the module's name, so `from causal import CausalAttention` works in a
# later cell just as it does between the .py files of the assignment.
import math
import sys
import types

import numpy as np
import torch

BOOK = {}  # the generator writes the book's values here

CHAPTER_MODULES = ("simple_attention", "self_attention_v1", "self_attention_v2", "weight_transfer",
                   "causal", "mha", "exercises", "numpy_attention")

book = {name: value if isinstance(value, int) else torch.tensor(value) for name, value in BOOK.items()}
book["batch"] = torch.stack((book["inputs"], book["inputs"]))


class NotPublishedYet:
    """Import hook: a chapter module comes from its solution cell, never from a stray .py file."""

    def find_spec(self, name, path=None, target=None):
        if name in CHAPTER_MODULES and name not in sys.modules:
            raise ModuleNotFoundError(f"{name} is not defined yet: run its solution cell and the "
                                      "read-only cell below that one first", name=name)
        return None


for _name in CHAPTER_MODULES:
    sys.modules.pop(_name, None)
sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "NotPublishedYet"]
sys.meta_path.insert(0, NotPublishedYet())


def publish(module_name, names):
    """Put the notebook's definitions of `names` into a fresh module `module_name` in sys.modules."""
    module = types.ModuleType(module_name, f"{module_name}, as defined in this notebook")
    user_ns = globals()
    for name in names:
        if name in user_ns:
            setattr(module, name, user_ns[name])
        else:
            print(f"note: {name} is not defined, so {module_name}.{name} is missing")
    sys.modules[module_name] = module


DIAGNOSES = "the public tests' diagnoses (assignments/ch03/tests/_diagnose.py) are written here"


class Check:
    """Assertions whose messages say what was computed, what was expected and what came back."""

    @staticmethod
    def tensor(got, what):
        if not isinstance(got, torch.Tensor):
            raise AssertionError(f"{what} should return a torch.Tensor, got {type(got).__name__}")
        return got.detach()

    def shape(self, got, expected, what):
        got = self.tensor(got, what)
        assert tuple(got.shape) == tuple(expected), f"{what}: expected shape {tuple(expected)}, got {tuple(got.shape)}"

    def close(self, got, expected, what, mistakes=None):
        """got matches expected to 1e-4 (the book prints 4 decimals); a wrong got that matches one of
        mistakes() (a list of (wrong output, explanation), see the diagnoses above) is named as that mistake."""
        self.shape(got, expected.shape, what)
        got = self.tensor(got, what).to(expected.dtype)
        if same(got, expected):
            return
        try:
            why = which_mistake(got, expected, mistakes()) if mistakes is not None else ""
        except Exception:  # a module too far from the specification to recompute: no diagnosis
            why = ""
        if why:
            raise AssertionError(f"{what} is wrong: {why}")
        largest = (got - expected).abs().max().item()
        raise AssertionError(f"{what}: expected\n{expected}\ngot\n{got}\n(largest difference {largest:.4g}, "
                             f"tolerance {TOLERANCE:g})")

    @staticmethod
    def no_problem(problem, what):
        """Fail with '<what>: <problem>' when a diagnosis found a problem."""
        if problem:
            raise AssertionError(f"{what}: {problem}")

    @staticmethod
    def array_close(got, expected, what):
        """The NumPy version of close: got must be an ndarray matching expected to 1e-4."""
        if not isinstance(got, np.ndarray):
            raise AssertionError(f"{what} should return a numpy array, got {type(got).__name__}")
        expected = np.asarray(expected)
        assert got.shape == expected.shape, f"{what}: expected shape {expected.shape}, got {got.shape}"
        np.testing.assert_allclose(got, expected, atol=1e-4, rtol=0,
                                   err_msg=f"{what}: expected\n{expected}\ngot\n{got}")


check = Check()
