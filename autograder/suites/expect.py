"""Assertions that explain themselves to a student.

A failed check raises Mismatch (an AssertionError): its message is the grader's diagnosis in its own
words (the misconception), which any student may see, hidden checks included; what only an
instructor should see (the hidden case, how far off, expected against got) goes to `detail`; what
the student's own code raised goes to `student_text`. For hidden checks (reveal=False) nothing here
puts an input, a seed, an expected value or a measured number into the message.
"""
import numpy as np
import torch

from autograder.causes import SEVERAL  # noqa: F401  (how a cause naming several possible mistakes begins)
from autograder.student import RemoteObject


class Mismatch(AssertionError):
    """A failed check. message: the diagnosis, safe for any student; detail: instructor only;
    student_text: the student's exception text (the runner decides where it may be shown)."""

    def __init__(self, message, detail="", student_text="", cause="", kind="", hint=""):
        super().__init__(message)
        self.detail = detail
        self.student_text = student_text
        self.cause = cause  # the misconception named (misconceptions.py), in the grader's words: the part's diagnosis
        self.unexplained = False  # wrong numbers, no cause named (close()): the part's diagnosis may name one
        # what kind of failure the grader's helper saw (vocabulary.KINDS) and the check's hint: after a
        # hidden input the student reads these fixed words, never the formatted message
        self.kind, self.hint = kind, hint


class Note(Exception):
    """Not a failure: a check that has judged everything and passed raises Note(message) to tell the
    student something worth knowing (the runner records the check as passed, with the message)."""


def fail(message, detail="", error=None, cause="", kind="", hint=""):
    """Raise Mismatch; error: a StudentError whose text goes to student_text, never to the message;
    cause: the misconception the message names, when it names one (runner.part_diagnosis); kind, hint:
    what a student reads instead after a hidden input (suites/vocabulary.py)."""
    raise Mismatch(message, detail, error.student_text() if error is not None else "", cause, kind, hint)


def as_tensor(value, what):
    if isinstance(value, RemoteObject):
        fail(f"{what} should return a tensor, but returned a {value.type_name} object", kind="type")
    if isinstance(value, np.ndarray):
        return torch.from_numpy(value)
    if not isinstance(value, torch.Tensor):
        fail(f"{what} should return a tensor, but returned {type(value).__name__}", kind="type")
    return value


def shape(got, want_shape, what, reveal=False, case=""):
    got = as_tensor(got, what)
    if tuple(got.shape) != tuple(want_shape):
        numbers = f"shape {tuple(got.shape)}, expected {tuple(want_shape)}"
        if reveal:
            fail(f"{what} has {numbers}", case, kind="shape")
        fail(f"{what} has the wrong shape" + (f" ({got.dim()} dims instead of {len(want_shape)})"
                                             if got.dim() != len(want_shape) else ""),
             "; ".join(filter(None, (case, numbers))), kind="shape")
    return got


def close(got, want, what, atol=1e-4, rtol=0.0, hint="", reveal=False, case=""):
    """Assert got ≈ want elementwise: |got - want| <= atol + rtol * |want|."""
    got = shape(got, want.shape, what, reveal, case)
    if not torch.is_floating_point(got):
        got = got.double()
    got, want = got.double(), want.double()
    if torch.isnan(got).any() or torch.isinf(got).any():
        fail(f"{what} contains NaN or Inf values" + (f". {hint}" if hint else ""), case, kind="nan", hint=hint)
    diff = (got - want).abs()
    bad = diff > atol + rtol * want.abs()
    if not bad.any():
        return got
    first = tuple(int(i) for i in bad.nonzero()[0])
    numbers = (f"off by up to {diff.max().item():.4g} (tolerance {atol:g}) in {int(bad.sum())} of {bad.numel()} "
               f"entries; at index {first}: expected {want[first].item():.4f}, got {got[first].item():.4f}")
    message = f"{what} is off by up to {diff.max().item():.4g} (tolerance {atol:g})" if reveal else f"{what} is wrong"
    if reveal:
        message += f"; at index {first}: expected {want[first].item():.4f}, got {got[first].item():.4f}"
    if hint:
        message += f". {hint}"
    error = Mismatch(message, "; ".join(filter(None, (case, numbers))), kind="values", hint=hint)
    error.unexplained = True
    raise error


def true(condition, message, detail=""):
    if not condition:
        fail(message, detail)
