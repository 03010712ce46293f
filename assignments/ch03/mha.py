"""Multi-head attention: a wrapper of CausalAttention heads and the efficient version (3.6)."""
import torch
import torch.nn as nn

from causal import CausalAttention


class MultiHeadAttentionWrapper(nn.Module):
    """num_heads CausalAttention heads run side by side, outputs concatenated on the last dim.

    forward: x (batch, num_tokens, d_in) -> (batch, num_tokens, d_out * num_heads)
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        """Keep num_heads CausalAttention heads in an nn.ModuleList named heads.

        Each head is CausalAttention(d_in, d_out, context_length, dropout, qkv_bias), made in turn.
        """
        super().__init__()
        raise NotImplementedError("mha.MultiHeadAttentionWrapper.__init__: keep num_heads CausalAttention heads in an nn.ModuleList named heads (book 3.6.1)")

    def forward(self, x):
        """x (batch, num_tokens, d_in) -> (batch, num_tokens, d_out * num_heads).

        Every head's output, concatenated on the last dim in head order.
        """
        raise NotImplementedError("mha.MultiHeadAttentionWrapper.forward: run every head on x and concatenate their outputs on the last dim (book 3.6.1)")


class MultiHeadAttention(nn.Module):
    """Efficient multi-head causal attention: one projection per Q/K/V, split into heads.

    forward: x (batch, num_tokens, d_in) -> (batch, num_tokens, d_out); d_out % num_heads == 0
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        """Raise ValueError unless num_heads divides d_out; each head gets head_dim = d_out // num_heads.

        Then create W_query, W_key, W_value in this order, each nn.Linear(d_in, d_out, bias=qkv_bias),
        out_proj = nn.Linear(d_out, d_out) (with bias), dropout = nn.Dropout(dropout) and the 'mask'
        buffer as in CausalAttention.
        """
        super().__init__()
        raise NotImplementedError("mha.MultiHeadAttention.__init__: check that num_heads divides d_out, then create W_query, W_key, W_value, out_proj, dropout and the 'mask' buffer (book 3.6.2)")

    def forward(self, x):
        """x (batch, num_tokens, d_in) -> context vectors (batch, num_tokens, d_out).

        Project x once each for queries, keys and values, reshape each to (batch, num_heads,
        num_tokens, head_dim), run causal attention in all heads at once (scores scaled by
        1/sqrt(head_dim)), put the heads back side by side as (batch, num_tokens, d_out) and
        apply out_proj.
        """
        raise NotImplementedError("mha.MultiHeadAttention.forward: split the projections into heads, run causal attention per head, merge the heads, apply out_proj (book 3.6.2)")
