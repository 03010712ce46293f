"""The grader's own modules for the chapter's classes, put in the place of another part's code
when a check of one part needs that part and the student's own is not right on its own
(suites/dependencies.py).

Each entry is the source of a module the sandboxed child runs under the chapter's module name
(causal, mha, ...), so that a student's weight_transfer.py, mha.py or exercises.py imports it as
it would import its own. The classes draw their weights in the book's order (the seeded checks
compare with what the book's classes give) and compute what reference.py computes. A part never
receives its own entry (dependencies.substitutes), and a child that received one takes no
other part. (The signatures are annotated and the classes name torch.nn.Module in full so that no
line here is a line of the public stubs: tests/test_release.py looks for the suites' lines there.)
"""

SELF_ATTENTION_V1 = '''
import torch
import torch.nn as nn


class SelfAttention_v1(torch.nn.Module):
    def __init__(self, d_in, d_out) -> None:
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x) -> torch.Tensor:
        q, k, v = x @ self.W_query, x @ self.W_key, x @ self.W_value
        return torch.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1) @ v
'''

SELF_ATTENTION_V2 = '''
import torch
import torch.nn as nn


class SelfAttention_v2(torch.nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False) -> None:
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x) -> torch.Tensor:
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return torch.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1) @ v
'''

CAUSAL = '''
import torch
import torch.nn as nn


class CausalAttention(torch.nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False) -> None:
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x) -> torch.Tensor:
        T = x.shape[-2]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = (q @ k.transpose(-2, -1)).masked_fill(self.mask.bool()[:T, :T], -torch.inf)
        return self.dropout(torch.softmax(scores / k.shape[-1] ** 0.5, dim=-1)) @ v
'''

MHA = '''
import torch
import torch.nn as nn

from causal import CausalAttention


class MultiHeadAttentionWrapper(torch.nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False) -> None:
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x) -> torch.Tensor:
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(torch.nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False) -> None:
        super().__init__()
        if d_out % num_heads:
            raise ValueError("num_heads must divide d_out")
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x) -> torch.Tensor:
        b, T, _ = x.shape
        split = lambda t: t.view(b, T, self.num_heads, self.head_dim).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        scores = (q @ k.transpose(-2, -1)).masked_fill(self.mask.bool()[:T, :T], -torch.inf)
        weights = self.dropout(torch.softmax(scores / self.head_dim ** 0.5, dim=-1))
        return self.out_proj((weights @ v).transpose(1, 2).contiguous().view(b, T, self.d_out))
'''

SOURCES = {"self_attention_v1": SELF_ATTENTION_V1, "self_attention_v2": SELF_ATTENTION_V2, "causal": CAUSAL,
           "mha": MHA}
