"""numpy_attention.py: the same attention in NumPy with einsum."""
import numpy as np
import pytest
from _diagnose import GLOBAL_MAX, IN_PLACE, batch_transpose_hint, keepdims_mistakes

pytestmark = pytest.mark.numpy_attention


def book_weights(book):
    return [book[f"W_{name}_seed123"].numpy() for name in ("query", "key", "value")]


def test_softmax_is_stable_for_large_scores(load, check):
    softmax = load("numpy_attention").softmax
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow shows up as nan in the message instead
        check.array_close(softmax(np.array([1000.0, 1000.0])), [0.5, 0.5], "softmax([1000, 1000])")
        check.array_close(softmax(np.array([1000.0, 1001.0, 1002.0])), softmax(np.array([0.0, 1.0, 2.0])),
                          "softmax([1000, 1001, 1002]) compared with softmax([0, 1, 2])")


def test_softmax_leaves_its_input_and_takes_the_max_of_each_row(load, check):
    z = np.array([[1000.0, 1001.0], [-1001.0, -1000.0]])  # one row of very large scores, one of very negative ones
    given = z.copy()
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        weights = load("numpy_attention").softmax(z, axis=-1)
    if not np.array_equal(z, given):
        check.fail(IN_PLACE.format(what="softmax"))
    right = np.array([[0.26894142, 0.73105858], [0.26894142, 0.73105858]])
    if isinstance(weights, np.ndarray) and weights.shape == right.shape and np.allclose(weights[0], right[0]) \
            and np.isnan(weights[1]).all():
        check.fail(f"softmax([[1000, 1001], [-1001, -1000]], axis=-1) is wrong: {GLOBAL_MAX}")
    check.array_close(weights, right, "softmax([[1000, 1001], [-1001, -1000]], axis=-1)")


@pytest.mark.parametrize("axis", [0, -1])
def test_softmax_sums_to_one_along_axis(load, check, axis):
    z = np.random.default_rng(0).normal(size=(3, 4))
    weights = load("numpy_attention").softmax(z, axis=axis)
    check.array_close(weights.sum(axis=axis), np.ones_like(z.sum(axis=axis)), f"softmax(z, axis={axis}).sum(axis={axis})")


def test_attention_head_reproduces_self_attention_v1(load, book, check):
    x = book["inputs"].numpy()[None]  # a batch of one sequence: (1, 6, 3)
    head = load("numpy_attention").attention_head
    what = "attention_head(inputs, seed-123 weights, causal=False)"
    with check.shape_errors(what, lambda: batch_transpose_hint(head), errors=(ValueError,)):
        out = head(x, *book_weights(book), causal=False)
    check.array_close(out, book["sa_v1_seed123"].numpy()[None], what,
                      mistakes=lambda: keepdims_mistakes(x, *book_weights(book)))


def test_causal_head_first_token_sees_only_itself(load, book, check):
    x = book["inputs"].numpy()[None]
    wq, wk, wv = book_weights(book)
    head = load("numpy_attention").attention_head
    with check.shape_errors("attention_head(inputs, seed-123 weights, causal=True)", lambda: batch_transpose_hint(head),
                            errors=(ValueError,)):
        out = head(x, wq, wk, wv, causal=True)
    check.array_close(out[:, 0], x[:, 0] @ wv, "the causal output of the first token (its own value vector)")


def test_multi_head_concatenates_then_projects(load, book, check):
    npa = load("numpy_attention")
    x = book["inputs"].numpy()[None]
    heads = [book_weights(book), book_weights(book)[::-1]]
    concatenated = np.concatenate([npa.attention_head(x, *head) for head in heads], axis=-1)
    check.array_close(npa.multi_head(x, heads), concatenated, "multi_head(x, two heads) without wo")
    wo = np.random.default_rng(0).normal(size=(4, 3))
    check.array_close(npa.multi_head(x, heads, wo), concatenated @ wo, "multi_head(x, two heads, wo)")


def test_gpt3_175b_weights_in_96_blocks(load, book):
    count = 96 * load("numpy_attention").block_param_count(12288, 4 * 12288)
    assert count == book["gpt3_175b_block_params"], \
        f"96 * block_param_count(12288, 4 * 12288): expected {book['gpt3_175b_block_params']:,}, got {count:,}"
