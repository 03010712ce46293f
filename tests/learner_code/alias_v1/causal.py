"""Causal attention: my version 1 (section 3.5)."""
import torch
import torch.nn as nn


def causal_mask(num_tokens):
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), diagonal=1)


def masked_attention_weights(scores, d_k):
    masked = scores.masked_fill(causal_mask(scores.shape[-1]), -torch.inf)
    return torch.softmax(masked / d_k**0.5, dim=-1)


class CausalAttentionV1(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer('mask', torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = attn_weights @ values
        return context_vec


# the notebook calls it CausalAttention
CausalAttention = CausalAttentionV1
