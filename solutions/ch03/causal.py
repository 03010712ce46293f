"""Causal (masked) attention with dropout (book section 3.5)."""
import torch
import torch.nn as nn


def causal_mask(num_tokens, device=None):
    """Where attention must not look (3.5.1): True above the diagonal, the future positions.

    num_tokens: int -> bool tensor (num_tokens, num_tokens); the diagonal itself is False.
    device: where to make it (None: the default device, the CPU); pass the scores' device.
    """
    ### BEGIN SOLUTION
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device), diagonal=1)
    ### END SOLUTION


def masked_attention_weights(scores, d_k):
    """Causal attention weights (3.5.1): hide future positions with -inf, scale by 1/sqrt(d_k), softmax.

    scores: (..., num_tokens, num_tokens) -> weights of the same shape; each row sums to 1
    and is 0 right of the diagonal. The mask is made on the scores' device (works on a GPU too).
    """
    ### BEGIN SOLUTION
    num_tokens = scores.shape[-1]
    masked = scores.masked_fill(causal_mask(num_tokens, device=scores.device), -torch.inf)
    return torch.softmax(masked / d_k**0.5, dim=-1)
    ### END SOLUTION


class CausalAttention(nn.Module):
    """Single-head causal self-attention with dropout on the attention weights.

    forward: x (batch, num_tokens, d_in), num_tokens <= context_length
             -> context vectors (batch, num_tokens, d_out)
    """

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        """Create, in this order, W_query, W_key, W_value, dropout and the buffer 'mask'.

        W_query, W_key, W_value are nn.Linear(d_in, d_out, bias=qkv_bias), dropout is
        nn.Dropout(dropout), and 'mask' (register_buffer) is the (context_length, context_length)
        matrix with ones above the diagonal and zeros elsewhere.
        """
        super().__init__()
        ### BEGIN SOLUTION
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))
        ### END SOLUTION

    def forward(self, x):
        """x (batch, num_tokens, d_in) -> context vectors (batch, num_tokens, d_out).

        As in SelfAttention_v2 for each sequence of the batch, except that the scores above the
        diagonal (the first num_tokens rows and columns of the mask) become -inf before the scaled
        softmax, and dropout is applied to the attention weights.
        """
        ### BEGIN SOLUTION
        b, num_tokens, d_in = x.shape
        queries = self.W_query(x)  # (b, num_tokens, d_out)
        keys = self.W_key(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)  # (b, num_tokens, num_tokens)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        return attn_weights @ values
        ### END SOLUTION
