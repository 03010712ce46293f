"""Hidden checks for weight_transfer.py (Exercise 3.1): copy SelfAttention_v2's nn.Linear weights into v1.

The transfer is judged by what it does to the weights (sa_v1's matrices must hold sa_v2's weights,
transposed; sa_v2 untouched; sa_v1 returned and still trainable), so that a bug in
SelfAttention_v1 or v2 themselves, graded in their own parts, is not paid for again here.
"""
import pytest
import torch

from autograder.suites import helpers
from autograder.suites.helpers import QKV
from autograder.suites.misconceptions import matches
from autograder.student import RemoteObject, StudentError

pytestmark = pytest.mark.weight_transfer
PART = "weight_transfer"
TRANSPOSE_HINT = ("nn.Linear stores its weight as (d_out, d_in) and computes x @ weight.T, while SelfAttention_v1 "
                  "computes x @ W with W of shape (d_in, d_out): copy weight.T")


def make_pair(student, d_in, d_out, v1_seed, v2_seed):
    v1 = student.module("self_attention_v1").SelfAttention_v1(d_in, d_out, _seed=v1_seed)
    v2 = student.module("self_attention_v2").SelfAttention_v2(d_in, d_out, _seed=v2_seed)
    return v1, v2


def transfer(student, v2, v1, what):
    try:
        return student.module(PART).transfer_v2_to_v1(v2, v1)
    except StudentError as e:
        text = e.message.lower()
        if not e.not_implemented and any(word in text for word in ("size", "shape", "match")):
            raise AssertionError(f"{what}: {e.explain()}. {TRANSPOSE_HINT}") from None
        raise


def close(a, b):
    return tuple(a.shape) == tuple(b.shape) and torch.allclose(a.double(), b.double(), atol=1e-6, rtol=0)


def transfer_problem(v1_after, v2_state, v1_before):
    """'' when sa_v1 holds sa_v2's weights, transposed; else what went wrong, in a student's terms."""
    for name in QKV:
        got, weight = v1_after.get(name), v2_state[f"{name}.weight"]
        if got is None:
            return f"sa_v1 has no {name} after the transfer (its state_dict holds {', '.join(v1_after)})"
        if close(got, weight.T):
            continue
        if close(got, weight):
            return f"sa_v1.{name} holds sa_v2.{name}.weight without the transpose. {TRANSPOSE_HINT}"
        for other in QKV:
            if other != name and (close(got, v2_state[f"{other}.weight"].T) or close(got, v2_state[f"{other}.weight"])):
                return f"sa_v1.{name} holds sa_v2.{other}'s weights: copy each layer into its own matrix"
        if close(got, v1_before[name]):
            return f"sa_v1.{name} was not changed by the transfer"
        return f"sa_v1.{name} does not hold sa_v2.{name}.weight.T after the transfer"
    return ""


def test_transfer_book_example(student, book):
    v1, v2 = make_pair(student, 3, 2, 123, 123)
    v2_state, v1_before = helpers.state_of(v2, "sa_v2"), helpers.state_of(v1, "sa_v1")
    transfer(student, v2, v1, "transfer_v2_to_v1(sa_v2, sa_v1) with the book's SelfAttention_v1(3, 2) and _v2(3, 2)")
    try:
        got = v1(book.inputs)
    except StudentError as e:
        if e.not_implemented:
            raise
        got = None
    if got is not None and matches(got, book["ex31_sa_v1"], 1e-4):
        return
    problem = transfer_problem(helpers.state_of(v1, "sa_v1"), v2_state, v1_before)
    if problem:
        raise AssertionError(f"Exercise 3.1: after the transfer, sa_v1(inputs) is not the book's output: {problem}")
    # the weights arrived transposed and intact: the difference is SelfAttention_v1's or _v2's own, graded there


def test_transfer_on_unseen_sizes(student, rng):
    for d_in, d_out, T in ((4, 4, 5), (5, 3, 1), (2, 6, 7)):
        what = f"transfer_v2_to_v1 with SelfAttention_v1({d_in}, {d_out}) and SelfAttention_v2({d_in}, {d_out})"
        v1, v2 = make_pair(student, d_in, d_out, 1, 2)
        state = helpers.random_qkv_state(d_in, d_out, rng, scale=2.0)
        helpers.load_known(v2, state, f"SelfAttention_v2({d_in}, {d_out})")
        v1_before = helpers.state_of(v1, "sa_v1")
        transfer(student, v2, v1, what)
        problem = transfer_problem(helpers.state_of(v1, "sa_v1"), state, v1_before)
        if problem:
            raise AssertionError(f"{what}: {problem}")
        x = torch.rand(T, d_in, generator=rng)
        after_v1, after_v2 = v1(x), v2(x)
        if matches(after_v1, after_v2, 1e-5):
            continue
        # they disagree although the weights arrived: only acceptable if v1 itself computes that way
        plain = student.module("self_attention_v1").SelfAttention_v1(d_in, d_out)
        helpers.load_known(plain, {n: state[f"{n}.weight"].T.contiguous() for n in QKV}, "SelfAttention_v1")
        if not matches(plain(x), after_v1, 1e-5):
            raise AssertionError(f"{what}: afterwards sa_v1 computes differently from a SelfAttention_v1 holding the "
                                 f"same weights; the transfer must only copy the weights")


def test_transfer_returns_v1_and_keeps_v2(student, rng):
    d_in, d_out = 3, 4
    v1, v2 = make_pair(student, d_in, d_out, 7, 8)
    v2_before = helpers.state_of(v2, "sa_v2")
    out = transfer(student, v2, v1, "transfer_v2_to_v1(sa_v2, sa_v1)")
    if not (isinstance(out, RemoteObject) and out.same_object(v1)):
        if isinstance(out, RemoteObject) and out.same_object(v2):
            raise AssertionError("transfer_v2_to_v1 returns sa_v2: it should return sa_v1, the module it filled in")
        kind = out.type_name if isinstance(out, RemoteObject) else type(out).__name__
        raise AssertionError(f"transfer_v2_to_v1 should return sa_v1 (the object it was given); it returned {kind}")
    v2_after = helpers.state_of(v2, "sa_v2")
    if sorted(v2_after) != sorted(v2_before) or not all(torch.equal(v2_after[k], v2_before[k]) for k in v2_before):
        raise AssertionError("transfer_v2_to_v1 changed sa_v2: it should only read sa_v2's weights")
    table = helpers.parameter_table(v1)
    if sorted(table) != sorted((name, (d_in, d_out)) for name in QKV):
        raise AssertionError(f"after the transfer sa_v1's parameters are {table}: W_query, W_key, W_value must stay "
                             f"nn.Parameters of shape (d_in, d_out)")
    x = torch.rand(5, d_in, generator=rng)
    grads = v1.grads(x, grad_output=torch.ones(5, d_out))
    dead = [name for name in QKV if not isinstance(grads.get(name), torch.Tensor)]
    if dead:
        fresh = student.module("self_attention_v1").SelfAttention_v1(d_in, d_out)
        if not isinstance(fresh.grads(x, grad_output=torch.ones(5, d_out)).get(dead[0]), torch.Tensor):
            return  # SelfAttention_v1 itself cuts the gradient: graded in its own part
        raise AssertionError(f"after the transfer, no gradient reaches sa_v1.{dead[0]}: keep the weights trainable "
                             f"(copy_ under torch.no_grad(), or assign a new nn.Parameter)")
