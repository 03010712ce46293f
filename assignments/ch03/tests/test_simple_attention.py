"""simple_attention.py: attention without trainable weights (book 3.3)."""
import pytest
import torch

from _diagnose import context_mistakes, other_token_mistakes, score_mistakes, softmax_dim_mistakes

pytestmark = pytest.mark.simple_attention


def test_softmax_naive_turns_the_journey_scores_into_weights(load, book, check):
    weights = load("simple_attention").softmax_naive(book["attn_scores_2"])
    check.close(weights, book["attn_weights_2"], "softmax_naive(attention scores of 'journey')")
    assert abs(weights.sum().item() - 1) < 1e-5, f"the weights should sum to 1, they sum to {weights.sum().item():.6f}"


def test_context_vector_of_journey(load, book, check):
    context = load("simple_attention").context_vector(book["inputs"], 1)
    check.close(context, book["context_vec_2"], "context_vector(inputs, 1)")


def test_context_vector_of_every_token(load, book, check):
    context_vector = load("simple_attention").context_vector
    for query_index in range(6):
        check.close(context_vector(book["inputs"], query_index), book["all_context_vecs"][query_index],
                    f"context_vector(inputs, {query_index})",
                    mistakes=lambda: other_token_mistakes(book["all_context_vecs"], query_index))


def test_attention_scores_of_all_token_pairs(load, book, check):
    scores = load("simple_attention").attention_scores(book["inputs"])
    check.close(scores, book["attn_scores"], "attention_scores(inputs)",
                mistakes=lambda: score_mistakes(book["inputs"]))


def test_attention_weights_rows_sum_to_one(load, book, check):
    weights = load("simple_attention").attention_weights(book["attn_scores"])
    check.close(weights, book["attn_weights"], "attention_weights(book scores)",
                mistakes=lambda: softmax_dim_mistakes(book["attn_scores"]))
    check.close(weights.sum(dim=-1), torch.ones(6), "the row sums of attention_weights(book scores)")


def test_context_vectors_of_all_tokens(load, book, check):
    contexts = load("simple_attention").context_vectors(book["inputs"])
    check.close(contexts, book["all_context_vecs"], "context_vectors(inputs)",
                mistakes=lambda: context_mistakes(book["inputs"]))
