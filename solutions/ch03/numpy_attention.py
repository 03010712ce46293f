"""Attention in NumPy with einsum: the same computation without torch."""
import numpy as np


def softmax(z, axis=-1):
    """Numerically stable softmax: subtract the max along axis before exp."""
    ### BEGIN SOLUTION
    shifted = z - np.max(z, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)
    ### END SOLUTION


def attention_head(x, wq, wk, wv, causal=True):
    """One attention head: x (B, T, C), weights (C, m) -> (B, T, m), scores scaled by 1/sqrt(m)."""
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
    """Run each (wq, wk, wv) head, concatenate on the last axis, then project with wo if given."""
    ### BEGIN SOLUTION
    out = np.concatenate([attention_head(x, wq, wk, wv, causal) for wq, wk, wv in heads], axis=-1)
    return out @ wo if wo is not None else out
    ### END SOLUTION


def block_param_count(d_model, d_ff):
    """Weights of one transformer block without biases: attention (W_q, W_k, W_v, W_o) plus feed-forward.

    The attention weights do not depend on the context length T.
    """
    ### BEGIN SOLUTION
    return 4 * d_model * d_model + 2 * d_model * d_ff
    ### END SOLUTION
