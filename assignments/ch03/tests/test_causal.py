"""causal.py: causal attention with dropout (book 3.5)."""
import pytest
import torch

from _diagnose import (BOOL_INDEX, FLOAT_CAST, IN_PLACE, dropout_problem, gradient_problem, linear_head_mistakes,
                       mask_buffer_problem, mask_problem, shorter_inputs_hint, softmax_weights, square_buffers,
                       waits_for, weight_mistakes)

pytestmark = pytest.mark.causal


@pytest.mark.parametrize("num_tokens", [1, 4, 6])
def test_causal_mask_is_true_above_the_diagonal(load, book, check, num_tokens):
    causal = load("causal")
    if check.waits(waits_for(book, "causal_mask", built=causal.causal_mask)):
        return
    mask = causal.causal_mask(num_tokens)
    check.shape(mask, (num_tokens, num_tokens), f"causal_mask({num_tokens})")
    assert mask.dtype == torch.bool, f"causal_mask should return a bool tensor, got {mask.dtype}"
    check.no_problem(mask_problem(mask, num_tokens), f"causal_mask({num_tokens})")


def test_masked_attention_weights_book_example(load, book, check):
    causal = load("causal")
    if check.waits(waits_for(book, "masked_attention_weights", built=causal.masked_attention_weights)):
        return
    weights = causal.masked_attention_weights(book["attn_scores_sa_v2"], 2)
    check.close(weights, book["causal_attn_weights"], "masked_attention_weights(book scores, d_k=2)",
                mistakes=lambda: weight_mistakes(book["attn_scores_sa_v2"], 2, causal=True))
    check.close(weights.sum(dim=-1), torch.ones(6), "the row sums of the masked weights")
    assert torch.all(weights.triu(diagonal=1) == 0), "the weights above the diagonal (the future) should be 0"


def test_masked_attention_weights_of_a_batch_leave_the_scores_as_they_were(load, book, check):
    scores = torch.stack([book["attn_scores_sa_v2"], book["attn_scores_sa_v2"].T])  # (2, 6, 6): two sequences
    given = scores.clone()
    causal = load("causal")
    if check.waits(waits_for(book, "masked_attention_weights", built=causal.masked_attention_weights)):
        return
    try:
        weights = causal.masked_attention_weights(scores, 2)
    except IndexError as e:  # scores[mask] = ... with the (6, 6) mask on (2, 6, 6) scores
        check.fail(f"masked_attention_weights(a batch of scores (2, 6, 6), d_k=2) raised IndexError ({e}): {BOOL_INDEX}")
    if not torch.equal(scores, given):
        check.fail(IN_PLACE.format(what="masked_attention_weights"))
    check.close(weights, softmax_weights(given, 2, causal=True), "masked_attention_weights(a batch of scores (2, 6, 6), d_k=2)",
                mistakes=lambda: weight_mistakes(given, 2, causal=True))


def test_causal_attention_book_example(load, book, check):
    causal = load("causal")
    if check.waits(waits_for(book, "CausalAttention", built=causal.CausalAttention)):
        return
    torch.manual_seed(123)
    attn = causal.CausalAttention(3, 2, 6, 0.0)
    check.close(attn(book["batch"]), book["causal_attention_seed123"],
                "torch.manual_seed(123); CausalAttention(3, 2, 6, 0.0)(batch)",
                mistakes=lambda: linear_head_mistakes(attn, book["batch"], causal=True))


def test_no_dropout_in_eval_mode(load, book, check):
    causal = load("causal")
    if check.waits(waits_for(book, "CausalAttention", built=causal.CausalAttention)):
        return
    torch.manual_seed(123)
    attn = causal.CausalAttention(3, 2, 6, 0.5)
    attn.eval()
    check.close(attn(book["batch"]), book["causal_attention_seed123"],
                "torch.manual_seed(123); CausalAttention(3, 2, 6, 0.5) in eval mode on batch",
                mistakes=lambda: linear_head_mistakes(attn, book["batch"], causal=True))


def test_shorter_inputs_and_no_look_ahead(load, book, check):
    causal = load("causal")
    if check.waits(waits_for(book, "CausalAttention", built=causal.CausalAttention)):
        return
    torch.manual_seed(0)
    attn = causal.CausalAttention(3, 2, 6, 0.0)
    masks = square_buffers(attn, 6)
    x = torch.rand(2, 4, 3)
    what = "CausalAttention(3, 2, context_length=6, 0.0) on 4 tokens"
    with check.shape_errors(what, lambda: shorter_inputs_hint(attn, 3, 6)):
        out = attn(x)
    check.shape(out, (2, 4, 2), what)
    check.no_problem(mask_buffer_problem(attn, 6, masks), "CausalAttention(3, 2, context_length=6, 0.0) after 4 tokens")
    changed = x.clone()
    changed[:, 2:] = torch.rand(2, 2, 3)
    check.close(attn(changed)[:, :2], out[:, :2].detach(),
                "the outputs of tokens 0 and 1 after changing only tokens 2 and 3 (they must not look ahead)")
    longer = torch.cat([x, torch.rand(2, 2, 3)], dim=1)
    check.close(attn(longer)[:, :4], out.detach(),
                "the outputs of tokens 0 to 3 of 6 tokens, the first 4 the same as before (the same module, after 4 tokens)")


def test_gradients_reach_the_weights_and_float64_stays_float64(load, book, check):
    causal = load("causal")
    if check.waits(waits_for(book, "CausalAttention", built=causal.CausalAttention)):
        return
    torch.manual_seed(0)
    attn = causal.CausalAttention(3, 2, 6, 0.0)
    check.no_problem(gradient_problem(attn, attn(torch.rand(2, 6, 3))), "CausalAttention(3, 2, 6, 0.0) on 6 tokens, then backward()")
    attn.double()
    try:
        out = attn(torch.rand(2, 6, 3).double())
    except RuntimeError as e:
        if "dtype" not in str(e) and "Double" not in str(e) and "Float" not in str(e):
            raise
        check.fail(f"CausalAttention(3, 2, 6, 0.0).double() on float64 tokens raised RuntimeError ({e}): {FLOAT_CAST}")
    assert out.dtype == torch.float64, \
        f"CausalAttention(3, 2, 6, 0.0).double() on float64 tokens should return float64, got {out.dtype}: {FLOAT_CAST}"


def test_dropout_drops_attention_weights_in_training_mode(load, book, check):
    # 6 tokens, d_out = 12: the test sets the value layer so that each output row shows the token's
    # attention weights twice, then looks at 400 training-mode outputs (see _diagnose.dropout_problem)
    causal = load("causal")
    if check.waits(waits_for(book, "CausalAttention", built=causal.CausalAttention)):
        return
    torch.manual_seed(0)
    attn = causal.CausalAttention(6, 12, 6, 0.5)
    check.no_problem(dropout_problem(attn, 0.5, 6), "CausalAttention(6, 12, 6, dropout=0.5) in training mode")
