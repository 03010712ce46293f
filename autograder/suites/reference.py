"""The grader's own attention math, written independently of any student module.

Weights use nn.Linear's convention: W has shape (d_out, d_in) and the projection is x @ W.T.
Shapes: x (..., T, d_in) -> (..., T, d_out).
"""
import math

import torch


def attention(q, k, v, causal):
    """Scaled dot-product attention; q, k, v: (..., T, d)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(k.shape[-1])
    if causal:
        T = scores.shape[-1]
        scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def attention_weights(q, k, causal):
    return weights_from_scores(q @ k.transpose(-2, -1), k.shape[-1], causal)


def weights_from_scores(scores, d_k, causal):
    """Raw scores (..., T, T) -> attention weights: scaled by 1/sqrt(d_k), the future hidden when causal."""
    scores = scores / math.sqrt(d_k)
    if causal:
        T = scores.shape[-1]
        scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(scores, dim=-1)


def linear(x, weight, bias=None):
    out = x @ weight.T
    return out if bias is None else out + bias


def single_head(x, state, causal=True):
    """A CausalAttention / SelfAttention_v2 with the given state_dict (W_query.weight, ...)."""
    q = linear(x, state["W_query.weight"], state.get("W_query.bias"))
    k = linear(x, state["W_key.weight"], state.get("W_key.bias"))
    v = linear(x, state["W_value.weight"], state.get("W_value.bias"))
    return attention(q, k, v, causal)


def multi_head(x, state, num_heads):
    """MultiHeadAttention with the given state_dict: split, attend per head, merge, out_proj."""
    b, T, _ = x.shape
    q = linear(x, state["W_query.weight"], state.get("W_query.bias"))
    k = linear(x, state["W_key.weight"], state.get("W_key.bias"))
    v = linear(x, state["W_value.weight"], state.get("W_value.bias"))
    d_out = q.shape[-1]
    split = lambda t: t.view(b, T, num_heads, d_out // num_heads).transpose(1, 2)  # noqa: E731
    context = attention(split(q), split(k), split(v), causal=True).transpose(1, 2).reshape(b, T, d_out)
    return linear(context, state["out_proj.weight"], state["out_proj.bias"])


def random_state(names_shapes, generator, dtype=torch.float32):
    """A state_dict of random values, e.g. random_state({'W_query.weight': (2, 3)}, g)."""
    return {name: (torch.rand(shape, generator=generator, dtype=torch.float64) - 0.5).to(dtype)
            for name, shape in names_shapes.items()}
