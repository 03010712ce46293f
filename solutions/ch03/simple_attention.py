"""Simplified self-attention without trainable weights (book section 3.3)."""
import torch


def softmax_naive(x):
    """Softmax over dim 0 written out: exp(x) divided by the sum of exp(x)."""
    ### BEGIN SOLUTION
    return torch.exp(x) / torch.exp(x).sum(dim=0)
    ### END SOLUTION


def context_vector(inputs, query_index):
    """Context vector of one query token, with explicit loops (3.3.1).

    inputs: (num_tokens, d_in); query_index: int -> (d_in,)
    """
    ### BEGIN SOLUTION
    query = inputs[query_index]
    scores = torch.empty(inputs.shape[0], dtype=inputs.dtype)
    for i, x_i in enumerate(inputs):
        scores[i] = torch.dot(x_i, query)
    weights = torch.softmax(scores, dim=0)
    context = torch.zeros(query.shape, dtype=inputs.dtype)
    for i, x_i in enumerate(inputs):
        context += weights[i] * x_i
    return context
    ### END SOLUTION


def attention_scores(inputs):
    """All pairwise dot products (3.3.2): (num_tokens, d_in) -> (num_tokens, num_tokens)."""
    ### BEGIN SOLUTION
    return inputs @ inputs.T
    ### END SOLUTION


def attention_weights(scores):
    """Normalize each row of scores with softmax over the last dim."""
    ### BEGIN SOLUTION
    return torch.softmax(scores, dim=-1)
    ### END SOLUTION


def context_vectors(inputs):
    """Context vectors of every token: (num_tokens, d_in) -> (num_tokens, d_in)."""
    ### BEGIN SOLUTION
    return attention_weights(attention_scores(inputs)) @ inputs
    ### END SOLUTION
