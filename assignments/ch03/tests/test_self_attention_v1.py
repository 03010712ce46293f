"""self_attention_v1.py: SelfAttention_v1 with nn.Parameter weights (book 3.4.2)."""
import pytest
import torch

from _diagnose import gradient_problem, parameter_head_mistakes, waits_for

pytestmark = pytest.mark.self_attention_v1


def test_weights_are_three_d_in_by_d_out_parameters(load, book, check):
    self_attention_v1 = load("self_attention_v1")
    if check.waits(waits_for(book, "SelfAttention_v1", built=self_attention_v1.SelfAttention_v1)):
        return
    sa = self_attention_v1.SelfAttention_v1(5, 3)
    shapes = {name: tuple(p.shape) for name, p in sa.named_parameters()}
    expected = {"W_query": (5, 3), "W_key": (5, 3), "W_value": (5, 3)}
    assert shapes == expected, f"SelfAttention_v1(5, 3) parameters: expected {expected}, got {shapes}"
    check.no_problem(gradient_problem(sa, sa(torch.rand(4, 5))), "SelfAttention_v1(5, 3) on 4 tokens, then backward()")


def test_output_shape(load, book, check):
    self_attention_v1 = load("self_attention_v1")
    if check.waits(waits_for(book, "SelfAttention_v1", built=self_attention_v1.SelfAttention_v1)):
        return
    sa = self_attention_v1.SelfAttention_v1(5, 3)
    check.shape(sa(torch.rand(4, 5)), (4, 3), "SelfAttention_v1(5, 3) on 4 tokens")


def test_book_example_with_seed_123(load, book, check):
    self_attention_v1 = load("self_attention_v1")
    if check.waits(waits_for(book, "SelfAttention_v1", built=self_attention_v1.SelfAttention_v1)):
        return
    torch.manual_seed(123)
    sa = self_attention_v1.SelfAttention_v1(3, 2)
    check.close(sa(book["inputs"]), book["sa_v1_seed123"], "torch.manual_seed(123); SelfAttention_v1(3, 2)(inputs)",
                mistakes=lambda: parameter_head_mistakes(sa, book["inputs"]))


def test_scaling_statistics_on_the_books_tokens(load, book, check):
    # queries = keys = the book's six tokens: the unscaled scores are the book's attention scores (3.3.2)
    # and their softmax the book's attention weights; scaled, the scores are divided by sqrt(3)
    stats = load("self_attention_v1").scaling_statistics
    if check.waits(waits_for(book, "scaling_statistics", built=stats)):
        return
    inputs = book["inputs"]
    for scaled, divisor in ((False, 1.0), (True, 3 ** 0.5)):
        got = stats(inputs, inputs, scaled=scaled)
        assert isinstance(got, tuple) and len(got) == 2 and all(isinstance(v, float) for v in got), \
            f"scaling_statistics should return (spread, peak) as two Python floats (use .item()), got {got!r}"
        scores = (inputs @ inputs.T) / divisor
        spread, peak = scores.std().item(), torch.softmax(scores, dim=-1).max(dim=-1).values.mean().item()
        if scaled and abs(got[0] - scores.std().item() * divisor) < 1e-4:
            raise AssertionError("scaling_statistics(..., scaled=True) is wrong: divide the scores by sqrt(d_k) "
                                 "(d_k = keys.shape[-1]) before taking their spread and softmax")
        assert abs(got[0] - spread) < 1e-4 and abs(got[1] - peak) < 1e-4, \
            f"scaling_statistics(inputs, inputs, scaled={scaled}): expected ({spread:.4f}, {peak:.4f}), got {got}"
