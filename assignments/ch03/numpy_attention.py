"""Attention in NumPy with einsum: the chapter's computation without torch (from the course notes).

Shapes: B sequences in a batch, T tokens, C embedding dims, m dims per head.
"""
import numpy as np


def softmax(z, axis=-1):
    """Numerically stable softmax along axis: subtract the max along axis before exp.

    Same shape in and out; softmax(np.array([1000.0, 1000.0])) is [0.5, 0.5], not nan.
    """
    raise NotImplementedError("numpy_attention.softmax: subtract the max along axis before exp so large scores do not overflow")


def attention_head(x, wq, wk, wv, causal=True):
    """One attention head: x (B, T, C), wq, wk, wv (C, m) -> context vectors (B, T, m).

    Scores are queries . keys scaled by 1/sqrt(m); with causal=True, each token's scores for
    later tokens become -inf before the softmax. With causal=False this is SelfAttention_v1
    (book 3.4.2) with these matrices, for a batch.
    """
    raise NotImplementedError("numpy_attention.attention_head: project with einsum, scale the scores by 1/sqrt(m), hide the future if causal, softmax, weight the values")


def multi_head(x, heads, wo=None, causal=True):
    """Several heads: heads is a list of (wq, wk, wv) triples, each (C, m).

    x (B, T, C) -> (B, T, len(heads) * m): the heads' outputs concatenated on the last axis,
    then multiplied by wo (len(heads) * m, d) when it is given -> (B, T, d).
    """
    raise NotImplementedError("numpy_attention.multi_head: concatenate the outputs of attention_head for each (wq, wk, wv) and multiply by wo when it is given")


def block_param_count(d_model, d_ff):
    """Weights of one transformer block, biases left out.

    Attention: W_q, W_k, W_v, W_o, each d_model x d_model; feed-forward: d_model x d_ff and
    d_ff x d_model. The attention weights do not depend on the context length T.
    """
    raise NotImplementedError("numpy_attention.block_param_count: count the four attention matrices and the two feed-forward matrices of one block, no biases")
