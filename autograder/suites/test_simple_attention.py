"""Hidden checks for simple_attention.py (book section 3.3): attention without trainable weights.

The book's journey example first (visible), then the same functions on inputs the book never
prints: other token counts, other embedding sizes, non-symmetric scores. Every input is float32,
the dtype of the book and the stubs (which state none): a buffer made with torch.empty(n, n), as in
the book's loops, is right here.
"""
import torch

from autograder.suites import helpers, part_marker
from autograder.suites.misconceptions import deferred, judge

pytestmark = part_marker("simple_attention")
PART = "simple_attention"


@deferred
def naive_softmax_mistakes(x):
    return [
        (x / x.sum(dim=0), "it divides the scores by their sum without exp (the 'attn_weights_2_tmp' "
                           "normalization of 3.3.1): softmax is exp(x) / exp(x).sum()"),
        (torch.exp(x), "it takes exp(x) but does not divide by the sum of exp(x)"),
        (torch.exp(x) / x.sum(dim=0), "it divides exp(x) by the sum of x: divide by the sum of exp(x)"),
    ]


@deferred
def context_mistakes(inputs, query_index):
    scores = inputs @ inputs[query_index]
    out = [((scores / scores.sum()) @ inputs,
            "the scores are normalized by their sum instead of with softmax: use torch.softmax(scores, dim=0)"),
           (scores @ inputs, "the inputs are weighted by the raw scores: turn them into weights with softmax first")]
    for other in range(inputs.shape[0]):
        if other != query_index:
            out.append((torch.softmax(inputs @ inputs[other], 0) @ inputs,
                        "the context vector belongs to another token: the query is inputs[query_index]"))
    return out


SOFTMAX_DIM0 = "the softmax runs over dim 0 (down the columns): use dim=-1 so that every row of weights sums to 1"


@deferred
def weights_mistakes(scores):
    return [
        (torch.softmax(scores, dim=0), SOFTMAX_DIM0),
        (scores / scores.sum(dim=-1, keepdim=True), "the rows are divided by their sums without exp: use softmax"),
        (torch.softmax(scores.flatten(), 0).view_as(scores), "the softmax runs over the whole matrix at once: "
                                                             "normalize each row separately (dim=-1)"),
    ]


@deferred
def vectors_mistakes(inputs):
    scores = inputs @ inputs.T
    return [
        (scores @ inputs, "the inputs are weighted by the raw scores: apply the softmax (attention_weights) first"),
        (torch.softmax(scores, dim=0) @ inputs, SOFTMAX_DIM0),  # the same words: one mistake, one cause
        (torch.softmax(scores, dim=-1).T @ inputs, "the weight matrix is transposed before weighting the inputs"),
    ]


def unseen_inputs(rng, shapes):
    return [torch.rand(shape, generator=rng, dtype=torch.float64).float() for shape in shapes]


def test_softmax_naive_book_example(student, book):
    scores = book.inputs @ book.inputs[1]
    got = student.module(PART).softmax_naive(scores)
    judge(got, book["attn_weights_2"], "softmax_naive(attn_scores_2)", naive_softmax_mistakes(scores), reveal=True)


def test_softmax_naive_on_unseen_scores(student, rng):
    for n in (1, 5, 9):
        x = ((torch.rand(n, generator=rng, dtype=torch.float64) - 0.5) * 8).float()
        got = student.module(PART).softmax_naive(x)
        judge(got, torch.softmax(x.double(), 0), "softmax_naive on other scores", naive_softmax_mistakes(x.double()),
              atol=1e-5, case=f"{n} scores")


def test_context_vector_book_example(student, book):
    got = student.module(PART).context_vector(book.inputs, 1)
    judge(got, book["context_vec_2"], "context_vector(inputs, 1)", context_mistakes(book.inputs, 1), reveal=True)


def test_context_vector_on_unseen_inputs(student, rng):
    cases = ((5, 4, 0), (5, 4, 4), (7, 2, 3), (1, 3, 0))
    for T, d, q in cases:
        inputs = torch.rand(T, d, generator=rng)
        got = student.module(PART).context_vector(inputs, q)
        want = torch.softmax(inputs @ inputs[q], 0) @ inputs
        judge(got, want, "context_vector on other inputs", context_mistakes(inputs, q),
              case=f"{T} tokens of {d} dims, query_index={q}")


def test_scores_and_weights_book_example(student, book):
    module = student.module(PART)
    judge(module.attention_scores(book.inputs), book["attn_scores"], "attention_scores(inputs)", reveal=True,
          mistakes=[(book.inputs.T @ book.inputs, "it computes inputs.T @ inputs: the token-by-token scores are "
                                                   "inputs @ inputs.T")])
    scores = book["attn_scores"]
    judge(module.attention_weights(scores), book["attn_weights"], "attention_weights(attn_scores)",
          weights_mistakes(scores), reveal=True)


def test_attention_scores_on_unseen_inputs(student, rng):
    for inputs in unseen_inputs(rng, ((4, 7), (6, 2), (1, 3))):
        got = student.module(PART).attention_scores(inputs)
        judge(got, inputs @ inputs.T, "attention_scores on other inputs",
              [(inputs.T @ inputs, "it computes inputs.T @ inputs (embedding dims by embedding dims): the scores "
                                   "are token by token, inputs @ inputs.T")], case=f"inputs {tuple(inputs.shape)}")


def test_attention_weights_on_unseen_scores(student, rng):
    for T in (5, 3, 1):
        scores = ((torch.rand(T, T, generator=rng, dtype=torch.float64) - 0.5) * 6).float()
        got = student.module(PART).attention_weights(scores)
        judge(got, torch.softmax(scores.double(), -1), "attention_weights on other (not symmetric) scores",
              weights_mistakes(scores.double()), atol=1e-5, case=f"{T}x{T} scores")


def test_context_vectors_book_example(student, book):
    got = student.module(PART).context_vectors(book.inputs)
    judge(got, book["all_context_vecs"], "context_vectors(inputs)", vectors_mistakes(book.inputs), reveal=True)


def test_context_vectors_on_unseen_inputs(student, rng):
    for inputs in unseen_inputs(rng, ((5, 4), (2, 6), (1, 3), (4, 3))):
        got = student.module(PART).context_vectors(inputs)
        want = torch.softmax(inputs.double() @ inputs.double().T, -1) @ inputs.double()
        judge(got, want, "context_vectors on other inputs", vectors_mistakes(inputs.double()), atol=1e-5,
              case=f"inputs {tuple(inputs.shape)}")


helpers.diagnose_errors(globals())
