"""mha.py: multi-head attention, stacked heads and weight splits (book 3.6)."""
import pytest
import torch

from _diagnose import (MODULE_LIST, dropout_problem, head_split_hint, mask_buffer_problem, multi_head_mistakes, multi_head_output,
                       square_buffers, waits_for)

pytestmark = pytest.mark.mha


def test_wrapper_book_example(load, book, check):
    causal = load("causal")
    if check.waits(waits_for(book, "MultiHeadAttentionWrapper", causal=causal)):
        return
    torch.manual_seed(123)
    mha = load("mha").MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)
    check.close(mha(book["batch"]), book["mha_wrapper_seed123"],
                "torch.manual_seed(123); MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)(batch)")


def test_wrapper_registers_its_heads(load, book, check):
    causal, mha = load("causal"), load("mha")
    try:
        wrapper = mha.MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)
    except Exception:  # where CausalAttention cannot be built, causal.py is the one to fix first
        if check.waits(waits_for(book, "MultiHeadAttentionWrapper", causal=causal)):
            return
        raise
    if not list(wrapper.parameters()):
        check.fail(f"MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2) has no parameters: {MODULE_LIST}")


def test_multi_head_attention_book_example(load, book, check):
    mha = load("mha")
    if check.waits(waits_for(book, "MultiHeadAttention", built=mha.MultiHeadAttention)):
        return
    torch.manual_seed(123)
    heads = mha.MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)
    what = "torch.manual_seed(123); MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)(batch)"
    with check.shape_errors(what, head_split_hint(heads)):
        out = heads(book["batch"])
    check.close(out, book["mha_seed123"], what,
                mistakes=lambda: multi_head_mistakes(heads, book["batch"], 2))


def test_multi_head_attention_shape(load, book, check):
    mha = load("mha")
    if check.waits(waits_for(book, "MultiHeadAttention", built=mha.MultiHeadAttention)):
        return
    heads = mha.MultiHeadAttention(4, 6, 8, 0.0, num_heads=3)
    masks = square_buffers(heads, 8)
    what = "MultiHeadAttention(4, 6, 8, 0.0, num_heads=3) on (2, 5, 4)"
    with check.shape_errors(what, head_split_hint(heads)):
        out = heads(torch.rand(2, 5, 4))
    check.shape(out, (2, 5, 6), what)
    check.no_problem(mask_buffer_problem(heads, 8, masks), "MultiHeadAttention(4, 6, 8, 0.0, num_heads=3) after 5 tokens")
    what = "the same MultiHeadAttention then on (2, 8, 4)"
    with check.shape_errors(what, head_split_hint(heads)):
        out = heads(torch.rand(2, 8, 4))
    check.shape(out, (2, 8, 6), what)


def test_d_out_must_be_divisible_by_num_heads(load):
    with pytest.raises((ValueError, AssertionError)):  # a ValueError, or the book's assert
        load("mha").MultiHeadAttention(3, 3, 6, 0.0, num_heads=2)


def test_multi_head_attention_with_three_dims_per_head(load, book, check):
    mha = load("mha")
    if check.waits(waits_for(book, "MultiHeadAttention", built=mha.MultiHeadAttention)):
        return
    # the book's example has head_dim = 1, where scaling by 1/sqrt(head_dim) changes nothing
    torch.manual_seed(5)
    heads = mha.MultiHeadAttention(4, 6, 8, 0.0, num_heads=2)
    x = torch.rand(2, 5, 4)
    what = "MultiHeadAttention(4, 6, 8, 0.0, num_heads=2) on (2, 5, 4), compared with its own layers"
    with check.shape_errors(what, head_split_hint(heads)):
        out = heads(x)
    check.close(out, multi_head_output(heads, x, 2), what,
                mistakes=lambda: multi_head_mistakes(heads, x, 2))


def test_multi_head_attention_drops_attention_weights_in_training_mode(load, book, check):
    mha = load("mha")
    if check.waits(waits_for(book, "MultiHeadAttention", built=mha.MultiHeadAttention)):
        return
    # one head of 12 dims, out_proj set to the identity: as in test_causal, each output row shows the
    # token's attention weights twice, and 400 training-mode outputs show where dropout acts
    torch.manual_seed(0)
    heads = mha.MultiHeadAttention(6, 12, 6, 0.5, num_heads=1)
    what = "MultiHeadAttention(6, 12, 6, dropout=0.5, num_heads=1) in training mode"
    with check.shape_errors(what, head_split_hint(heads)):
        problem = dropout_problem(heads, 0.5, 6)
    check.no_problem(problem, what)
