"""Self-attention with nn.Linear projections (book section 3.4.2)."""
import torch
import torch.nn as nn


class SelfAttention_v2(nn.Module):
    """Like SelfAttention_v1, but W_query, W_key, W_value are nn.Linear layers.

    forward: x (num_tokens, d_in) -> context vectors (num_tokens, d_out)
    """

    def __init__(self, d_in, d_out, qkv_bias=False):
        """Create W_query, W_key, W_value in this order, each nn.Linear(d_in, d_out, bias=qkv_bias).

        nn.Linear starts from better-scaled random weights than torch.rand; after
        torch.manual_seed(789) the outputs match the book's.
        """
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        """x (num_tokens, d_in) -> context vectors (num_tokens, d_out).

        The computation of SelfAttention_v1.forward, with the projections done by the nn.Linear layers.
        """
        queries = self.W_query(x)  # (num_tokens, d_out)
        keys = self.W_key(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.T  # (num_tokens, num_tokens)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values


x_demo = torch.rand(6, 3)
sa_v2 = SelfAttention_v2(3, 2)
print(sa_v2(x_demo))
