"""Assertions that explain themselves to a student.

close(got, want, ...) compares with explicit tolerances and says what differed; for hidden
checks (reveal=False) it never prints the expected values or the inputs, only how far off and
where (shape, first differing position). `hint` names the likely misconception.
"""
import numpy as np
import torch

from autograder.student import RemoteObject


def as_tensor(value, what):
    if isinstance(value, RemoteObject):
        raise AssertionError(f"{what} should return a tensor, but returned a {value.type_name} object")
    if isinstance(value, np.ndarray):
        return torch.from_numpy(value)
    if not isinstance(value, torch.Tensor):
        raise AssertionError(f"{what} should return a tensor, but returned {type(value).__name__}")
    return value


def shape(got, want_shape, what):
    got = as_tensor(got, what)
    if tuple(got.shape) != tuple(want_shape):
        raise AssertionError(f"{what} has shape {tuple(got.shape)}, expected {tuple(want_shape)}")
    return got


def close(got, want, what, atol=1e-4, rtol=0.0, hint="", reveal=False):
    """Assert got ≈ want elementwise: |got - want| <= atol + rtol * |want|."""
    got = shape(got, want.shape, what)
    if not torch.is_floating_point(got):
        got = got.double()
    got, want = got.double(), want.double()
    if torch.isnan(got).any() or torch.isinf(got).any():
        raise AssertionError(f"{what} contains NaN or Inf values" + (f". {hint}" if hint else ""))
    diff = (got - want).abs()
    bad = diff > atol + rtol * want.abs()
    if not bad.any():
        return got
    first = tuple(int(i) for i in bad.nonzero()[0])
    message = f"{what} is off by up to {diff.max().item():.4g} (tolerance {atol:g}) in {int(bad.sum())} of {bad.numel()} entries"
    if reveal:
        message += f"; at index {first}: expected {want[first].item():.4f}, got {got[first].item():.4f}"
    if hint:
        message += f". {hint}"
    raise AssertionError(message)


def true(condition, message):
    if not condition:
        raise AssertionError(message)
