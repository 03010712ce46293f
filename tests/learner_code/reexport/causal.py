"""Section 3.5: the classes live in attention_core.py."""
import torch

from attention_core import CausalSelfAttention as CausalAttention, causal_mask


def masked_attention_weights(scores, d_k):
    return torch.softmax(scores.masked_fill(causal_mask(scores.shape[-1]), -torch.inf) / d_k**0.5, dim=-1)
