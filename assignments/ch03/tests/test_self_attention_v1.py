"""self_attention_v1.py: SelfAttention_v1 with nn.Parameter weights (book 3.4.2)."""
import pytest
import torch

from _diagnose import parameter_head_mistakes

pytestmark = pytest.mark.self_attention_v1


def test_weights_are_three_d_in_by_d_out_parameters(load):
    sa = load("self_attention_v1").SelfAttention_v1(5, 3)
    shapes = {name: tuple(p.shape) for name, p in sa.named_parameters()}
    expected = {"W_query": (5, 3), "W_key": (5, 3), "W_value": (5, 3)}
    assert shapes == expected, f"SelfAttention_v1(5, 3) parameters: expected {expected}, got {shapes}"


def test_output_shape(load, check):
    sa = load("self_attention_v1").SelfAttention_v1(5, 3)
    check.shape(sa(torch.rand(4, 5)), (4, 3), "SelfAttention_v1(5, 3) on 4 tokens")


def test_book_example_with_seed_123(load, book, check):
    torch.manual_seed(123)
    sa = load("self_attention_v1").SelfAttention_v1(3, 2)
    check.close(sa(book["inputs"]), book["sa_v1_seed123"], "torch.manual_seed(123); SelfAttention_v1(3, 2)(inputs)",
                mistakes=lambda: parameter_head_mistakes(sa, book["inputs"]))
