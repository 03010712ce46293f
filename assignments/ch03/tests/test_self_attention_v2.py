"""self_attention_v2.py: SelfAttention_v2 with nn.Linear layers (book 3.4.2)."""
import pytest
import torch
import torch.nn as nn

from _diagnose import linear_head_mistakes, waits_for

pytestmark = pytest.mark.self_attention_v2


@pytest.mark.parametrize("qkv_bias", [False, True])
def test_projections_are_linear_layers(load, book, check, qkv_bias):
    self_attention_v2 = load("self_attention_v2")
    if check.waits(waits_for(book, "SelfAttention_v2", built=self_attention_v2.SelfAttention_v2)):
        return
    sa = self_attention_v2.SelfAttention_v2(5, 3, qkv_bias=qkv_bias)
    for name in ("W_query", "W_key", "W_value"):
        layer = getattr(sa, name, None)
        assert isinstance(layer, nn.Linear), f"{name} should be an nn.Linear, got {type(layer).__name__}"
        assert (layer.in_features, layer.out_features) == (5, 3), \
            f"{name}: expected nn.Linear(5, 3), got nn.Linear({layer.in_features}, {layer.out_features})"
        assert (layer.bias is not None) == qkv_bias, f"{name} should have a bias only when qkv_bias=True"


def test_output_shape(load, book, check):
    self_attention_v2 = load("self_attention_v2")
    if check.waits(waits_for(book, "SelfAttention_v2", built=self_attention_v2.SelfAttention_v2)):
        return
    sa = self_attention_v2.SelfAttention_v2(5, 3)
    check.shape(sa(torch.rand(4, 5)), (4, 3), "SelfAttention_v2(5, 3) on 4 tokens")


def test_book_example_with_seed_789(load, book, check):
    self_attention_v2 = load("self_attention_v2")
    if check.waits(waits_for(book, "SelfAttention_v2", built=self_attention_v2.SelfAttention_v2)):
        return
    torch.manual_seed(789)
    sa = self_attention_v2.SelfAttention_v2(3, 2)
    check.close(sa(book["inputs"]), book["sa_v2_seed789"], "torch.manual_seed(789); SelfAttention_v2(3, 2)(inputs)",
                mistakes=lambda: linear_head_mistakes(sa, book["inputs"], causal=False))
