"""Causal (masked) attention with dropout (book section 3.5)."""
import torch
import torch.nn as nn


def causal_mask(num_tokens, device=None):
    """Where attention must not look (3.5.1): True above the diagonal, the future positions.

    num_tokens: int -> bool tensor (num_tokens, num_tokens); the diagonal itself is False.
    device: where to make it (None: the default device, the CPU); pass the scores' device.
    """
    raise NotImplementedError("causal.causal_mask: return a bool matrix that is True above the diagonal, made on the given device (book 3.5.1)")


def masked_attention_weights(scores, d_k):
    """Causal attention weights (3.5.1): hide future positions with -inf, scale by 1/sqrt(d_k), softmax.

    scores: (..., num_tokens, num_tokens) -> weights of the same shape; each row sums to 1
    and is 0 right of the diagonal. The mask is made on the scores' device (works on a GPU too).
    """
    raise NotImplementedError("causal.masked_attention_weights: set the future scores to -inf (a causal_mask made on scores.device), divide by sqrt(d_k), softmax over the last dim (book 3.5.1)")


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
        raise NotImplementedError("causal.CausalAttention.__init__: create W_query, W_key, W_value (nn.Linear), a dropout layer and the 'mask' buffer (book 3.5.3)")

    def forward(self, x):
        """x (batch, num_tokens, d_in) -> context vectors (batch, num_tokens, d_out).

        As in SelfAttention_v2 for each sequence of the batch, except that the scores above the
        diagonal (the first num_tokens rows and columns of the mask) become -inf before the scaled
        softmax, and dropout is applied to the attention weights.
        """
        raise NotImplementedError("causal.CausalAttention.forward: apply the causal mask (the buffer, which moves with the module) to the batched scores, softmax, dropout, then weight the values (book 3.5.3)")
