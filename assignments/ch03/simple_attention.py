"""Simplified self-attention without trainable weights (book section 3.3).

Every function works on one sequence of token embeddings, inputs of shape (num_tokens, d_in),
such as the book's six 3-dimensional embeddings of "Your journey starts with one step".
"""
import torch


def softmax_naive(x):
    """Softmax written out (3.3.1): exp(x) divided by the sum of exp(x) over dim 0.

    x: (num_tokens,) scores -> (num_tokens,) weights, all positive and summing to 1.
    Fine for small scores; large ones overflow exp (numpy_attention.softmax avoids that).
    """
    raise NotImplementedError("simple_attention.softmax_naive: return exp(x) divided by the sum of exp(x) over dim 0 (book 3.3.1)")


def context_vector(inputs, query_index):
    """Context vector of one query token, computed with explicit loops (3.3.1).

    Score every input against inputs[query_index] with a dot product, turn the scores into
    weights with softmax, and return the sum of the inputs weighted by them.
    inputs: (num_tokens, d_in); query_index: int -> (d_in,)
    A tensor made here (the book's torch.empty and torch.zeros) is made on the inputs' device and
    in their dtype (device=inputs.device, dtype=inputs.dtype), so the function works on a GPU too.
    """
    raise NotImplementedError("simple_attention.context_vector: score every input against inputs[query_index] with a dot product, softmax the scores, return the weighted sum of the inputs; make the tensors you fill on inputs.device (book 3.3.1)")


def attention_scores(inputs):
    """Dot products of every pair of tokens at once (3.3.2).

    inputs: (num_tokens, d_in) -> scores (num_tokens, num_tokens), scores[i, j] = inputs[i] . inputs[j]
    """
    raise NotImplementedError("simple_attention.attention_scores: compute the dot product of every pair of tokens in one matrix product (book 3.3.2)")


def attention_weights(scores):
    """Attention weights (3.3.2): softmax over the last dim, so every row sums to 1.

    scores: (num_tokens, num_tokens) -> weights of the same shape
    """
    raise NotImplementedError("simple_attention.attention_weights: apply softmax to each row of the scores (book 3.3.2)")


def context_vectors(inputs):
    """Context vectors of every token at once (3.3.2): the attention weights times the inputs.

    inputs: (num_tokens, d_in) -> (num_tokens, d_in); row i equals context_vector(inputs, i)
    """
    raise NotImplementedError("simple_attention.context_vectors: combine attention_scores and attention_weights, then weight the inputs (book 3.3.2)")
