"""Hidden checks for self_attention_v2.py (book section 3.4.2): SelfAttention_v2 with nn.Linear projections.

As for v1: the book's seed 789, other seeds and sizes drawn here with nn.Linear in the specified
order, and the math with known weights loaded, each judged on its own.
"""
import pytest
import torch

from autograder.suites import helpers, reference
from autograder.suites.helpers import QKV
from autograder.suites.misconceptions import attention_mistakes, judge

pytestmark = pytest.mark.self_attention_v2
PART = "self_attention_v2"


def projections(x, state):
    return tuple(reference.linear(x, state[f"{n}.weight"], state.get(f"{n}.bias")) for n in QKV)


def v2_output(x, state):
    return reference.single_head(x, state, causal=False)


def v2_mistakes(x, state):
    return attention_mistakes(*projections(x, state), causal=False, d_in=x.shape[-1])


def expected_parameters(d_in, d_out, bias):
    table = []
    for name in QKV:
        table.append((f"{name}.weight", (d_out, d_in)))
        if bias:
            table.append((f"{name}.bias", (d_out,)))
    return table


def test_v2_linear_layers(student):
    for d_in, d_out, bias in ((3, 2, False), (4, 5, True)):
        sa = student.module(PART).SelfAttention_v2(d_in, d_out, qkv_bias=bias)
        info = sa.describe()
        layers = [(name, kind) for name, kind in info["children"] if name in QKV]
        if sorted(layers) != [(name, "Linear") for name in sorted(QKV)]:
            raise AssertionError(f"SelfAttention_v2 should have three nn.Linear children W_query, W_key, W_value; it "
                                 f"has {info['children']}")
        table = [(name, tuple(shape)) for name, shape, _ in info["parameters"]]
        if sorted(table) == sorted(expected_parameters(d_in, d_out, bias)):  # the order: seeded checks
            continue
        with_bias = sorted({name.split(".")[0] for name, _ in table if name.endswith(".bias")})
        if with_bias != (list(QKV) if bias else []):
            raise AssertionError(f"SelfAttention_v2({d_in}, {d_out}, qkv_bias={bias}): the layers with a bias are "
                                 f"{with_bias or 'none'}; pass bias=qkv_bias to each nn.Linear")
        raise AssertionError(f"SelfAttention_v2({d_in}, {d_out}, qkv_bias={bias}) should have the parameters "
                             f"{expected_parameters(d_in, d_out, bias)}; it has {table}")


def test_v2_book_example(student, book):
    sa = student.module(PART).SelfAttention_v2(3, 2, _seed=789)
    drawn = helpers.drawn_linears(789, helpers.qkv_layers(3, 2, False))
    helpers.judge_seeded(sa(book.inputs), book["sa_v2_seed789"], "torch.manual_seed(789); SelfAttention_v2(3, 2)(inputs)",
                         sa, drawn, 789, lambda: v2_mistakes(book.inputs, drawn), book=True, reveal=True)


def test_v2_unseen_seeds_and_sizes(student, rng):
    for seed, d_in, d_out, bias, T in ((5, 3, 2, False, 6), (11, 4, 6, True, 3), (2024, 6, 4, True, 1)):
        x = torch.rand(T, d_in, generator=rng)
        sa = student.module(PART).SelfAttention_v2(d_in, d_out, qkv_bias=bias, _seed=seed)
        drawn = helpers.drawn_linears(seed, helpers.qkv_layers(d_in, d_out, bias))
        helpers.judge_seeded(sa(x), v2_output(x, drawn), f"SelfAttention_v2({d_in}, {d_out}, qkv_bias={bias}) made "
                             f"after another seed, on {T} tokens", sa, drawn, seed, lambda: v2_mistakes(x, drawn))


def test_v2_math_with_loaded_weights(student, rng):
    for d_in, d_out, T, bias in ((4, 3, 5, False), (3, 5, 8, True), (2, 2, 1, True), (6, 4, 6, False)):
        x = torch.rand(T, d_in, generator=rng)
        state = helpers.random_qkv_state(d_in, d_out, rng, bias, scale=2.0)
        sa = student.module(PART).SelfAttention_v2(d_in, d_out, qkv_bias=bias)
        helpers.load_known(sa, state, f"SelfAttention_v2({d_in}, {d_out}, qkv_bias={bias})")
        judge(sa(x), v2_output(x, state), f"SelfAttention_v2({d_in}, {d_out}, qkv_bias={bias}) with known weights on "
              f"{T} tokens", v2_mistakes(x, state), hint="Compute softmax(queries @ keys.T / sqrt(d_k), dim=-1) @ values")


def test_v2_float64_and_gradients(student, rng):
    d_in, d_out, T = 4, 3, 5
    state = helpers.random_qkv_state(d_in, d_out, rng, bias=True, scale=2.0, dtype=torch.float64)
    x = torch.rand(T, d_in, generator=rng, dtype=torch.float64)
    sa = student.module(PART).SelfAttention_v2(d_in, d_out, qkv_bias=True)
    sa.double()
    helpers.load_known(sa, state, "SelfAttention_v2(4, 3, qkv_bias=True).double()")
    got = sa(x)
    what = "SelfAttention_v2(4, 3, qkv_bias=True).double() on float64 inputs"
    if getattr(got, "dtype", None) != torch.float64:
        raise AssertionError(f"{what} returns {getattr(got, 'dtype', type(got).__name__)}: compute in the dtype of "
                             f"the inputs and weights (no .float() or float32 tensors made inside forward)")
    judge(got, v2_output(x, state), what, v2_mistakes(x, state), atol=1e-6)
    g = torch.rand(T, d_out, generator=rng, dtype=torch.float64)
    want = helpers.reference_grads(lambda s: v2_output(x, s), state, g)
    helpers.compare_grads(sa.grads(x, grad_output=g), want, "SelfAttention_v2", atol=1e-6)
