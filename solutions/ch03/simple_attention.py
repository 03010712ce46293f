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
    ### BEGIN SOLUTION
    return torch.exp(x) / torch.exp(x).sum(dim=0)
    ### END SOLUTION


def context_vector(inputs, query_index):
    """Context vector of one query token, computed with explicit loops (3.3.1).

    Score every input against inputs[query_index] with a dot product, turn the scores into
    weights with softmax, and return the sum of the inputs weighted by them.
    inputs: (num_tokens, d_in); query_index: int -> (d_in,)
    A tensor made here (the book's torch.empty and torch.zeros) is made on the inputs' device and
    in their dtype (device=inputs.device, dtype=inputs.dtype), so the function works on a GPU too.
    """
    ### BEGIN SOLUTION
    query = inputs[query_index]
    scores = torch.empty(inputs.shape[0], dtype=inputs.dtype, device=inputs.device)
    for i, x_i in enumerate(inputs):
        scores[i] = torch.dot(x_i, query)
    weights = torch.softmax(scores, dim=0)
    context = torch.zeros(query.shape, dtype=inputs.dtype, device=inputs.device)
    for i, x_i in enumerate(inputs):
        context += weights[i] * x_i
    return context
    ### END SOLUTION


def attention_scores(inputs):
    """Dot products of every pair of tokens at once (3.3.2).

    inputs: (num_tokens, d_in) -> scores (num_tokens, num_tokens), scores[i, j] = inputs[i] . inputs[j]
    """
    ### BEGIN SOLUTION
    return inputs @ inputs.T
    ### END SOLUTION


def attention_weights(scores):
    """Attention weights (3.3.2): softmax over the last dim, so every row sums to 1.

    scores: (num_tokens, num_tokens) -> weights of the same shape
    """
    ### BEGIN SOLUTION
    return torch.softmax(scores, dim=-1)
    ### END SOLUTION


def context_vectors(inputs):
    """Context vectors of every token at once (3.3.2): the attention weights times the inputs.

    inputs: (num_tokens, d_in) -> (num_tokens, d_in); row i equals context_vector(inputs, i)
    """
    ### BEGIN SOLUTION
    return attention_weights(attention_scores(inputs)) @ inputs
    ### END SOLUTION
