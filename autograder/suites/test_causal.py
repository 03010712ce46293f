"""Hidden checks for causal.py (book section 3.5): mask, masked softmax, CausalAttention."""
import pytest
import torch

from autograder.suites import expect, reference

pytestmark = pytest.mark.causal
PART = "causal"


def qkv_state(d_in, d_out, rng, bias=False):
    shapes = {f"W_{n}.weight": (d_out, d_in) for n in ("query", "key", "value")}
    if bias:
        shapes.update({f"W_{n}.bias": (d_out,) for n in ("query", "key", "value")})
    return reference.random_state(shapes, rng)


def test_causal_mask_marks_the_future(student):
    for n in (1, 4, 7):
        mask = expect.as_tensor(student.module("causal").causal_mask(n), f"causal_mask({n})")
        expect.shape(mask, (n, n), f"causal_mask({n})")
        want = torch.ones(n, n, dtype=torch.bool).triu(1)
        expect.true(mask.dtype == torch.bool, f"causal_mask({n}) should be a bool tensor, got {mask.dtype}")
        if torch.equal(mask, torch.ones(n, n, dtype=torch.bool).triu(0)):
            raise AssertionError("causal_mask also hides the diagonal: a token must be allowed to attend to itself "
                                 "(use triu with diagonal=1)")
        if torch.equal(mask, ~want):
            raise AssertionError("causal_mask is inverted: True must mark the positions ABOVE the diagonal (the future)")
        expect.true(torch.equal(mask, want), f"causal_mask({n}) should be True exactly above the diagonal")


def test_masked_weights_book_example(student, book):
    got = student.module("causal").masked_attention_weights(book["attn_scores_sa_v2"], 2)
    expect.close(got, book["causal_attn_weights"], "masked_attention_weights(book scores, d_k=2)", reveal=True,
                 hint="Set the future scores to -inf, divide by sqrt(d_k), then softmax over the last dim")


def test_causal_attention_book_example(student, book):
    attn = student.module("causal").CausalAttention(3, 2, 6, 0.0, _seed=123)
    expect.close(attn(book.batch), book["causal_attention_seed123"], "torch.manual_seed(123); CausalAttention(3, 2, 6, 0.0)(batch)",
                 reveal=True, hint="Create W_query, W_key, W_value in this order so seed 123 gives the book's weights")


def test_causal_attention_math_with_known_weights(student, rng):
    for d_in, d_out, T, ctx, bias in ((3, 2, 6, 6, False), (5, 4, 3, 8, True), (4, 4, 1, 4, False)):
        x = torch.rand(3, T, d_in, generator=rng)
        state = qkv_state(d_in, d_out, rng, bias)
        attn = student.module("causal").CausalAttention(d_in, d_out, ctx, 0.0, qkv_bias=bias)
        attn.load_state_dict({**state, "mask": attn.get("mask")})
        attn.eval()
        expect.close(attn(x), reference.single_head(x, state), f"CausalAttention({d_in}, {d_out}, {ctx}) with known weights "
                     f"on {T} tokens", hint="Check the 1/sqrt(d_k) scaling, the mask and the softmax dim")
