"""Attention in NumPy with einsum: the chapter's computation without torch (from the course notes).

Shapes: B sequences in a batch, T tokens, C embedding dims, m dims per head.
"""
import numpy as np


def softmax(z, axis=-1):
    """Numerically stable softmax along axis: subtract the max along axis before exp.

    Same shape in and out; softmax(np.array([1000.0, 1000.0])) is [0.5, 0.5], not nan.
    """
    ### BEGIN SOLUTION
    shifted = z - np.max(z, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)
    ### END SOLUTION


def attention_head(x, wq, wk, wv, causal=True):
    """One attention head: x (B, T, C), wq, wk, wv (C, m) -> context vectors (B, T, m).

    Scores are queries . keys scaled by 1/sqrt(m); with causal=True, each token's scores for
    later tokens become -inf before the softmax. With causal=False this is SelfAttention_v1
    (book 3.4.2) with these matrices, for a batch.
    """
    ### BEGIN SOLUTION
    q = np.einsum("btc,cm->btm", x, wq)
    k = np.einsum("btc,cm->btm", x, wk)
    v = np.einsum("btc,cm->btm", x, wv)
    scores = np.einsum("btm,bsm->bts", q, k) / np.sqrt(wq.shape[-1])  # (B, T, T)
    if causal:
        T = x.shape[1]
        future = np.triu(np.ones((T, T), dtype=bool), k=1)
        scores = np.where(future, -np.inf, scores)
    return np.einsum("bts,bsm->btm", softmax(scores, axis=-1), v)
    ### END SOLUTION


def multi_head(x, heads, wo=None, causal=True):
    """Several heads: heads is a list of (wq, wk, wv) triples, each (C, m).

    x (B, T, C) -> (B, T, len(heads) * m): the heads' outputs concatenated on the last axis,
    then multiplied by wo (len(heads) * m, d) when it is given -> (B, T, d).
    """
    ### BEGIN SOLUTION
    out = np.concatenate([attention_head(x, wq, wk, wv, causal) for wq, wk, wv in heads], axis=-1)
    return out @ wo if wo is not None else out
    ### END SOLUTION


def block_param_count(d_model, d_ff):
    """Weights of one transformer block, biases left out.

    Attention: W_q, W_k, W_v, W_o, each d_model x d_model; feed-forward: d_model x d_ff and
    d_ff x d_model. The attention weights do not depend on the context length T.
    """
    ### BEGIN SOLUTION
    return 4 * d_model * d_model + 2 * d_model * d_ff
    ### END SOLUTION
