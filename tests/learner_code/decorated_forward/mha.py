"""A learner's mha.py: the batched forward decorated by torch.enable_grad(). Multi-head attention: a wrapper of CausalAttention heads and the efficient version (3.6)."""
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
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        """x (batch, num_tokens, d_in) -> (batch, num_tokens, d_out * num_heads).

        Every head's output, concatenated on the last dim in head order.
        """
        return torch.cat([head(x) for head in self.heads], dim=-1)


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
        if d_out % num_heads != 0:
            raise ValueError(f"d_out ({d_out}) must be divisible by num_heads ({num_heads})")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    @torch.enable_grad()  # a decorator from torch: forward's code object is torch's wrapper
    def forward(self, x):
        """x (batch, num_tokens, d_in) -> context vectors (batch, num_tokens, d_out).

        Project x once each for queries, keys and values, reshape each to (batch, num_heads,
        num_tokens, head_dim), run causal attention in all heads at once (scores scaled by
        1/sqrt(head_dim)), put the heads back side by side as (batch, num_tokens, d_out) and
        apply out_proj.
        """
        b, num_tokens, d_in = x.shape
        # (b, num_tokens, d_out) -> (b, num_heads, num_tokens, head_dim)
        queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)  # (b, num_heads, num_tokens, num_tokens)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / self.head_dim**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context = (attn_weights @ values).transpose(1, 2)  # (b, num_tokens, num_heads, head_dim)
        context = context.contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context)
