"""Self-attention with trainable weights, first version (book section 3.4.2)."""
import torch
import torch.nn as nn


class SelfAttention_v1(nn.Module):
    """Scaled dot-product self-attention with plain weight matrices (nn.Parameter).

    forward: x (num_tokens, d_in) -> context vectors (num_tokens, d_out)
    """

    def __init__(self, d_in, d_out):
        """Create W_query, W_key, W_value in this order, each nn.Parameter(torch.rand(d_in, d_out)).

        The order decides which random numbers each matrix gets: after torch.manual_seed(123) the
        outputs match the book's.
        """
        super().__init__()
        ### BEGIN SOLUTION
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))
        ### END SOLUTION

    def forward(self, x):
        """x (num_tokens, d_in) -> context vectors (num_tokens, d_out).

        queries, keys, values = x @ W_query, x @ W_key, x @ W_value; the weights are the softmax
        over the last dim of queries @ keys.T / sqrt(d_out); return weights @ values.
        """
        ### BEGIN SOLUTION
        queries = x @ self.W_query  # (num_tokens, d_out)
        keys = x @ self.W_key
        values = x @ self.W_value
        attn_scores = queries @ keys.T  # (num_tokens, num_tokens)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values
        ### END SOLUTION


def scaling_statistics(queries, keys, scaled=True):
    """How spread out the attention scores are, and how peaked their softmax is (book 3.4.2, why 1/sqrt(d_k)).

    queries, keys: (..., num_tokens, d_k). The scores are queries @ keys.transpose(-2, -1), divided by
    sqrt(d_k) when scaled is True (d_k = keys.shape[-1]); the weights are their softmax over the last dim.
    Returns (spread, peak), two Python floats: spread is the standard deviation of all the scores
    (torch's default std), peak the mean over all queries of the largest weight in the query's row.
    """
    ### BEGIN SOLUTION
    raw = queries @ keys.transpose(-2, -1)
    scores = raw / keys.shape[-1] ** 0.5 if scaled else raw
    weights = torch.softmax(scores, dim=-1)
    return scores.std().item(), weights.max(dim=-1).values.mean().item()
    ### END SOLUTION
