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
        raise NotImplementedError("self_attention_v2.SelfAttention_v2.__init__: create W_query, W_key, W_value as nn.Linear(d_in, d_out, bias=qkv_bias), in that order (book 3.4.2)")

    def forward(self, x):
        """x (num_tokens, d_in) -> context vectors (num_tokens, d_out).

        The computation of SelfAttention_v1.forward, with the projections done by the nn.Linear layers.
        """
        raise NotImplementedError("self_attention_v2.SelfAttention_v2.forward: same computation as SelfAttention_v1.forward, with the nn.Linear layers (book 3.4.2)")
