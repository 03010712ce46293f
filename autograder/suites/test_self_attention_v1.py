"""Hidden checks for self_attention_v1.py (book section 3.4.2): SelfAttention_v1 with nn.Parameter matrices.

Seeded outputs (the book's seed 123, and seeds and sizes the book never prints, drawn here the way
the specification says) are judged apart from the math (known weights loaded into the module):
parameters made in another order or drawn differently lose only the seeded points.
"""
import torch

from autograder.suites import expect, helpers, part_marker, reference
from autograder.suites.helpers import QKV
from autograder.suites.misconceptions import attention_mistakes, deferred, judge

pytestmark = part_marker("self_attention_v1")
PART = "self_attention_v1"


def projections(x: torch.Tensor, state: dict) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return x @ state["W_query"], x @ state["W_key"], x @ state["W_value"]


def v1_output(x, state):
    return reference.attention(*projections(x, state), causal=False)


@deferred
def v1_mistakes(x, state):
    return attention_mistakes(*projections(x, state), causal=False, d_in=x.shape[-1])


def known_state(d_in, d_out, rng, dtype=torch.float32):
    return {name: ((torch.rand(d_in, d_out, generator=rng, dtype=torch.float64) - 0.5) * 2).to(dtype) for name in QKV}


def test_v1_weight_matrices(student):
    for d_in, d_out in ((3, 2), (5, 4)):
        table = helpers.parameter_table(student.module(PART).SelfAttention_v1(d_in, d_out))
        want = [(name, (d_in, d_out)) for name in QKV]
        if sorted(table) == sorted(want):  # the creation order is judged by the seeded checks
            continue
        if sorted(table) == sorted((name, (d_out, d_in)) for name in QKV):
            raise AssertionError(f"SelfAttention_v1({d_in}, {d_out}) keeps its matrices as (d_out, d_in): v1 keeps "
                                 f"them as (d_in, d_out) and computes x @ W")
        raise AssertionError(f"SelfAttention_v1({d_in}, {d_out}) should have exactly three nn.Parameter matrices "
                             f"W_query, W_key, W_value of shape (d_in, d_out); it has {table}")


def test_v1_book_example(student, book):
    sa, answer = helpers.built_and_called(student.module(PART).SelfAttention_v1, (3, 2), {}, 123, (book.inputs,))
    drawn = {name: book[f"{name}_seed123"] for name in QKV}
    helpers.judge_seeded(answer(), book["sa_v1_seed123"], "torch.manual_seed(123); SelfAttention_v1(3, 2)(inputs)",
                         sa, drawn, 123, v1_mistakes(book.inputs, drawn), book=True, reveal=True, part=PART)


def test_v1_unseen_seeds_and_sizes(student, rng):
    for d_in, d_out, T in ((3, 2, 6), (4, 5, 1), (6, 3, 7)):
        seed = helpers.draw_seed(rng)
        x = torch.rand(T, d_in, generator=rng)
        sa, answer = helpers.built_and_called(student.module(PART).SelfAttention_v1, (d_in, d_out), {}, seed, (x,))
        drawn = helpers.drawn_matrices(seed, d_in, d_out)
        helpers.judge_seeded(answer(), v1_output(x, drawn), "SelfAttention_v1 made after another seed, with other sizes",
                             sa, drawn, seed, v1_mistakes(x, drawn),
                             case=f"seed {seed}, SelfAttention_v1({d_in}, {d_out}) on {T} tokens", part=PART)


def test_v1_math_with_loaded_weights(student, rng):
    for d_in, d_out, T in ((4, 3, 5), (3, 5, 8), (2, 2, 1), (6, 4, 6)):
        x = torch.rand(T, d_in, generator=rng)
        state = known_state(d_in, d_out, rng)
        sa = helpers.build_known(student.module(PART).SelfAttention_v1, (d_in, d_out), {}, state, "SelfAttention_v1")
        judge(sa(x), v1_output(x, state), "SelfAttention_v1 with known weights", v1_mistakes(x, state),
              hint="Compute softmax(queries @ keys.T / sqrt(d_k), dim=-1) @ values",
              case=f"SelfAttention_v1({d_in}, {d_out}) on {T} tokens")


def test_v1_float64_and_gradients(student, rng):
    d_in, d_out, T = 4, 3, 5
    state = known_state(d_in, d_out, rng, torch.float64)
    x = torch.rand(T, d_in, generator=rng, dtype=torch.float64)
    sa = helpers.build_known(student.module(PART).SelfAttention_v1, (d_in, d_out), {}, state,
                             "SelfAttention_v1 after .double()", then=("double",))
    got = sa(x)
    what = "SelfAttention_v1 after .double(), on float64 inputs"
    if getattr(got, "dtype", None) != torch.float64:
        expect.fail(f"{what} returns {getattr(got, 'dtype', type(got).__name__)}: compute in the dtype of "
                    f"the inputs and weights (no .float() or float32 tensors made inside forward)")
    judge(got, v1_output(x, state), what, v1_mistakes(x, state), atol=1e-6)
    g = torch.rand(T, d_out, generator=rng, dtype=torch.float64)
    want = helpers.reference_grads(lambda s: v1_output(x, s), state, g)
    helpers.compare_grads(*helpers.grads_and_reference(sa, x, g, want), "SelfAttention_v1", atol=1e-6)


def spread_and_peak(queries, keys, scaled, *, divisor=None, dim=-1, population=False):
    """The (spread, peak) pair of scaling_statistics, right by default, wrong on request."""
    raw = queries.double() @ keys.double().transpose(-2, -1)
    if scaled:
        raw = raw / (keys.shape[-1] ** 0.5 if divisor is None else divisor)
    peaks = torch.softmax(raw, dim=dim).amax(dim=-1)
    return torch.stack((raw.std(correction=0 if population else 1), peaks.mean()))


@deferred
def spread_and_peak_mistakes(queries, keys, scaled):
    width = keys.shape[-1]
    wrong = [(spread_and_peak(queries, keys, False),
              "with scaled=True the scores must be divided by sqrt(d_k) before the spread and the softmax"),
             (spread_and_peak(queries, keys, scaled, dim=-2),
              "the softmax runs down the columns: take it over the last dim, one row per query"),
             (spread_and_peak(queries, keys, scaled, population=True),
              "the spread is the population std (correction=0): use torch's default std of the scores")]
    if scaled and width > 1:
        wrong.append((spread_and_peak(queries, keys, True, divisor=float(width)),
                      "the scores are divided by d_k instead of sqrt(d_k)"))
    if scaled and keys.dim() > 2 and keys.shape[1] not in (width, 1):  # the 2-D habit of keys.shape[1]
        wrong.append((spread_and_peak(queries, keys, True, divisor=float(keys.shape[1]) ** 0.5),
                      "the scores are divided by sqrt(keys.shape[1]): for a batch (b, num_tokens, d_k) that is the "
                      "number of tokens; d_k is the last dim, keys.shape[-1]"))
    if not scaled:
        wrong.append((spread_and_peak(queries, keys, True),
                      "with scaled=False the scores must stay as they are (no division by sqrt(d_k))"))
    return wrong


def as_pair(got, what):
    """(spread, peak) as a float64 tensor of two, from two numbers or two one-element tensors."""
    if isinstance(got, (tuple, list)) and len(got) == 2:
        try:
            return torch.tensor([float(value.item() if isinstance(value, torch.Tensor) else value) for value in got],
                                dtype=torch.float64)
        except (TypeError, ValueError, RuntimeError):
            pass
    expect.fail(f"{what} should return two numbers (spread, peak); it returned a {type(got).__name__}")


def test_v1_scaling_statistics(student, rng):
    stats = student.module(PART).scaling_statistics
    for d_k, b, T in ((1, 3, 5), (16, 4, 6), (256, 2, 9)):
        queries = torch.randn(b, T, d_k, generator=rng)
        keys = torch.randn(b, T, d_k, generator=rng)
        for scaled in (True, False):
            what = f"scaling_statistics(queries, keys, scaled={scaled}) on random queries and keys"
            got = as_pair(stats(queries, keys, scaled=scaled), what)
            judge(got, spread_and_peak(queries, keys, scaled), what, spread_and_peak_mistakes(queries, keys, scaled),
                  atol=2e-3, hint="spread = the std of all scores, peak = the mean of each row's largest softmax weight",
                  case=f"d_k={d_k}, {b} x {T} tokens")


helpers.diagnose_errors(globals(), "SelfAttention_v1(d_in, d_out)")
