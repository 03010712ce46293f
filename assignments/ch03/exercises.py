"""Exercises 3.2 and 3.3 (book section 3.6)."""
from mha import MultiHeadAttention, MultiHeadAttentionWrapper


def two_dim_wrapper(d_in, context_length, dropout=0.0):
    """Exercise 3.2: a MultiHeadAttentionWrapper with num_heads=2 whose output has 2 dims.

    Returns the module; it maps x (batch, num_tokens, d_in) -> (batch, num_tokens, 2).
    """
    raise NotImplementedError("exercises.two_dim_wrapper: choose the d_out of each of the 2 heads so the concatenated output has 2 dims (Exercise 3.2)")


def gpt2_small_attention():
    """Exercise 3.3: MultiHeadAttention with GPT-2 small's sizes.

    768 dims in and out, 12 heads, context length 1024, no dropout; it has 2,360,064 parameters.
    """
    raise NotImplementedError("exercises.gpt2_small_attention: build MultiHeadAttention with 768 dims in and out, 12 heads and context length 1024 (Exercise 3.3)")
