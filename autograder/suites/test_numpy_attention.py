"""Hidden checks for numpy_attention.py (course notes): the chapter's attention in NumPy with einsum.

Every NumPy result is compared with the grader's torch math (reference.py) on inputs the notes
never show: a stable softmax along any axis, causal and non-causal heads, several heads with and
without the output projection, and parameter counts for several model sizes.
"""
import numpy as np
import torch

from autograder.suites import expect, helpers, part_marker, reference, source_mistakes
from autograder.suites.misconceptions import NO_KEEPDIMS, attention_mistakes, deferred, judge

pytestmark = part_marker("numpy_attention")
PART = "numpy_attention"


def array(rng, *shape, scale=1.0):
    return ((torch.rand(shape, generator=rng, dtype=torch.float64) - 0.5) * scale).numpy()


def t(a):
    return torch.from_numpy(np.asarray(a, dtype=np.float64))


def head_output(x, wq, wk, wv, causal):
    q, k, v = t(x) @ t(wq), t(x) @ t(wk), t(x) @ t(wv)
    return reference.attention(q, k, v, causal)


@deferred
def head_mistakes(x, wq, wk, wv, causal):
    return attention_mistakes(t(x) @ t(wq), t(x) @ t(wk), t(x) @ t(wv), causal, d_in=x.shape[-1])


@deferred
def softmax_mistakes(z, axis):
    with np.errstate(all="ignore"):
        unstable = np.exp(z) / np.exp(z).sum(axis=axis, keepdims=True)
        shifted = np.exp(z - z.max())
        global_max = shifted / shifted.sum(axis=axis, keepdims=True)
        last = np.exp(z - z.max(axis=-1, keepdims=True))
        numerator_only = np.exp(z - z.max(axis=axis, keepdims=True)) / np.exp(z).sum(axis=axis, keepdims=True)
        try:  # without keepdims: wrong values where the shapes happen to broadcast (raises elsewhere)
            dropped = np.exp(z - z.max(axis=axis))
            dropped = [(t(dropped / dropped.sum(axis=axis)), NO_KEEPDIMS)]
        except ValueError:
            dropped = []
    return dropped + [
        (t(unstable), "exp overflows for large scores: subtract the max along the axis before exp (a shift does not "
                      "change the softmax)"),
        (t(global_max), "it subtracts the max of the whole array: subtract the max of each slice along axis "
                        "(np.max(z, axis=axis, keepdims=True)), or a slice of very negative scores underflows to 0 / 0"),
        (t(last / last.sum(axis=-1, keepdims=True)), "it ignores the axis argument: pass axis=axis (and keepdims=True) "
                                                     "to the max and the sum"),
        (t(numerator_only), "the max is subtracted in the numerator only: the sum must be of the same shifted "
                            "exponentials (e = np.exp(z - max); e / e.sum(axis=axis, keepdims=True)), or it overflows "
                            "as before"),
    ]


def large_scores(rng):
    """Rows of scores around +-1000 or more (exp overflows or underflows without the shift), drawn
    afresh: a table of the answers to fixed inputs is worth nothing here."""
    offsets = (torch.randint(1000, 3000, (3, 1), generator=rng, dtype=torch.int64) *
               torch.tensor([[1], [-1], [0]])).numpy().astype(np.float64)
    return array(rng, 3, 4, scale=8.0) + offsets


def test_numpy_softmax_stable_and_untouched(student, rng):
    softmax = student.module(PART).softmax
    judge(softmax(np.array([1000.0, 1000.0])), torch.tensor([0.5, 0.5], dtype=torch.float64), "softmax([1000, 1000])",
          softmax_mistakes(np.array([1000.0, 1000.0]), -1), reveal=True)
    z = large_scores(rng)
    judge(softmax(z), torch.softmax(t(z), -1), "softmax of rows of very large and very negative scores",
          softmax_mistakes(z, -1), atol=1e-6)
    judge(softmax(z.T, axis=0), torch.softmax(t(z.T), 0), "softmax(z, axis=0) of very large and very negative scores",
          softmax_mistakes(z.T, 0), atol=1e-6)
    got, after = helpers.call_keeping_arguments(student, student.module(PART).softmax, z.copy())
    judge(got, torch.softmax(t(z), -1), "softmax of rows of very large and very negative scores", softmax_mistakes(z, -1),
          atol=1e-6)
    helpers.assert_unchanged([z], after, "numpy_attention.softmax")


def test_numpy_softmax_along_any_axis(student, rng):
    z = array(rng, 2, 3, 4, scale=6.0)
    for axis in (0, 1, 2, -1, -2):
        got = student.module(PART).softmax(z, axis=axis)
        judge(got, torch.softmax(t(z), axis), f"softmax(z, axis={axis}) of a 3-dimensional array",
              softmax_mistakes(z, axis), atol=1e-6)


def test_numpy_attention_head_matches_torch(student, rng):
    for B, T, C, m, causal in ((2, 5, 4, 3, True), (2, 5, 4, 3, False), (1, 1, 3, 2, True), (3, 6, 2, 5, True)):
        x, wq, wk, wv = array(rng, B, T, C, scale=2.0), array(rng, C, m, scale=2.0), array(rng, C, m, scale=2.0), \
            array(rng, C, m, scale=2.0)
        got = student.module(PART).attention_head(x, wq, wk, wv, causal=causal)
        judge(got, head_output(x, wq, wk, wv, causal), f"attention_head on other inputs, causal={causal}",
              head_mistakes(x, wq, wk, wv, causal), atol=1e-6, case=f"x {(B, T, C)}, weights {(C, m)}",
              hint="scale the scores by 1/sqrt(m), mask the future with -inf when causal, softmax over the last axis")


def test_numpy_causal_head_ignores_the_future(student, rng):
    B, T, C, m = 2, 6, 4, 3
    x, wq, wk, wv = array(rng, B, T, C, scale=2.0), array(rng, C, m), array(rng, C, m), array(rng, C, m)
    base = expect.shape(student.module(PART).attention_head(x, wq, wk, wv, causal=True), (B, T, m), "attention_head")
    # a property means nothing on a wrong output (all zeros never look ahead): the output first
    judge(base, head_output(x, wq, wk, wv, True), "attention_head(causal=True)", head_mistakes(x, wq, wk, wv, True),
          atol=1e-6)
    for pos in range(T - 1):
        changed = x.copy()
        changed[:, pos + 1:] = array(rng, B, T - pos - 1, C, scale=4.0)
        out = expect.shape(student.module(PART).attention_head(changed, wq, wk, wv, causal=True), (B, T, m),
                           "attention_head")
        if not np.allclose(np.asarray(out)[:, :pos + 1], np.asarray(base)[:, :pos + 1], atol=1e-6, rtol=0):
            expect.fail("attention_head(causal=True): changing only later tokens changed the outputs of earlier ones: "
                        "set every score above the diagonal to -inf before the softmax", f"after position {pos}")


def test_numpy_multi_head_concat_and_projection(student, rng):
    B, T, C, m, h, d = 2, 5, 4, 2, 3, 5
    x = array(rng, B, T, C, scale=2.0)
    heads = [tuple(array(rng, C, m, scale=2.0) for _ in range(3)) for _ in range(h)]
    wo = array(rng, h * m, d, scale=2.0)
    for causal in (True, False):
        outs = [head_output(x, *w, causal) for w in heads]  # type: ignore[call-arg]  # w: 3 arrays
        concat = torch.cat(outs, dim=-1)
        per_head = zip(*(head_mistakes(x, *w, causal) for w in heads), strict=True)  # the same mistake in every head
        wrong = [(torch.cat([t for t, _ in same], dim=-1), same[0][1]) for same in per_head]
        wrong += [(torch.stack(outs, dim=-1), "the heads are stacked on a new axis: concatenate them on the last axis"),
                 (torch.cat(outs, dim=0), "the heads are concatenated on axis 0: concatenate them on the last axis"),
                 (torch.cat(outs, dim=1), "the heads are concatenated on axis 1: concatenate them on the last axis")]
        judge(student.module(PART).multi_head(x, heads, causal=causal), concat,
              f"multi_head with several heads, no wo, causal={causal}", wrong, atol=1e-6)
        judge(student.module(PART).multi_head(x, heads, wo, causal=causal), concat @ t(wo),
              f"multi_head with several heads and wo, causal={causal}",
              [(concat, "wo is ignored: multiply the concatenated heads by wo when it is given")], atol=1e-6)


@deferred
def block_mistakes(d_model, d_ff):
    return [
        (4 * d_model * d_model, "only the attention weights are counted: add the feed-forward's two matrices, "
                                "d_model x d_ff and d_ff x d_model"),
        (4 * d_model * d_model + d_model * d_ff, "the feed-forward is counted once: it has two matrices, d_model x d_ff "
                                                 "and d_ff x d_model"),
        (3 * d_model * d_model + 2 * d_model * d_ff, "W_o (the output projection) is left out: attention has four "
                                                     "d_model x d_model matrices"),
        *[(4 * d_model * d_model + 2 * d_model * d_ff + biases, BIASES_COUNTED)
          for biases in (4 * d_model + d_ff + d_model, 4 * d_model, d_ff + d_model, 3 * d_model + d_ff + d_model)],
    ]


# the biases of the projections (4 * d_model, or 3 without W_o's) or of the feed-forward (d_ff + d_model) added in
BIASES_COUNTED = ("the biases are counted too: block_param_count counts the weight matrices only (biases left out), "
                  "4 * d_model * d_model for attention and 2 * d_model * d_ff for the feed-forward")


def judge_count(got, want, what, mistakes, reveal=False):
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        expect.fail(f"{what} should return a number, got {type(got).__name__}")
    if float(got) == float(want):
        return
    for wrong, why in mistakes:
        if float(got) == float(wrong):
            expect.fail(f"{what} is wrong: {why}", cause=why)
    expect.fail(f"{what} is wrong" + (f": expected {want:,}, got {got:,}" if reveal else "") +
                         ". Count W_q, W_k, W_v, W_o (d_model x d_model each) and the feed-forward's two matrices; "
                         "the attention weights do not depend on the context length")


def test_numpy_block_params_gpt3(student, book):
    per_block = student.module(PART).block_param_count(12288, 4 * 12288)
    judge_count(per_block, book["gpt3_175b_block_params"] // 96, "block_param_count(12288, 49152) (one GPT-3 block)",
                block_mistakes(12288, 4 * 12288), reveal=True)


def test_numpy_block_params_other_sizes(student, rng):
    drawn = [(int(torch.randint(1, 5000, (1,), generator=rng)), int(torch.randint(1, 20000, (1,), generator=rng)))
             for _ in range(3)]
    for d_model, d_ff in [(768, 3072), (2, 3)] + drawn:
        got = student.module(PART).block_param_count(d_model, d_ff)
        judge_count(got, 4 * d_model * d_model + 2 * d_model * d_ff, "block_param_count for another model size",
                    block_mistakes(d_model, d_ff))


helpers.diagnose_errors(globals(), shape_cause=lambda check, student, error: source_mistakes.arrays_dot_T(
    student.source(PART), error.kind, error.where, PART))
