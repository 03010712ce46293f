"""Hidden checks for exercises.py (Exercises 3.2 and 3.3): the right arguments for the chapter's classes.

The exercises build on mha.py (and so on causal.py). They are judged on what they ask: a wrapper
with two heads of width one, and the efficient class with GPT-2 small's sizes. When the student's
own classes are wrong, an exercise that builds them with the right arguments still earns its points
(it is compared with the student's own class built with those arguments); the bug costs points in
its own part. The 2.36M-parameter GPT-2 module is built once per part and shared by the checks.
"""
import math

import pytest
import torch

from autograder.suites import expect, helpers, reference
from autograder.suites.misconceptions import matches
from autograder.student import StudentError

pytestmark = pytest.mark.exercises
PART = "exercises"
GPT2_PARAMETERS = ("W_query.weight", "W_key.weight", "W_value.weight", "out_proj.weight", "out_proj.bias")
GPT2_CALL = "MultiHeadAttention(768, 768, context_length=1024, dropout=0.0, num_heads=12)"


def gpt2(student):
    """exercises.gpt2_small_attention(), made once per part (the part's checks share one child)."""
    module = getattr(student, "_gpt2_small_attention", None)
    if module is None:
        module = student.module(PART).gpt2_small_attention()
        student._gpt2_small_attention = module
    return module


def gpt2_weights(module):
    """The trained tensors of the student's GPT-2 module, without its 1024 x 1024 mask (4 MiB less to
    copy); the whole state_dict when the module does not have them under the book's names."""
    try:
        weights = {name: module.get(name) for name in GPT2_PARAMETERS}
    except StudentError:
        weights = {}
    if weights and all(isinstance(w, torch.Tensor) for w in weights.values()):
        return weights
    return helpers.state_of(module, "gpt2_small_attention()")


def judge_two_dim(student, got, what, d_in, ctx, dropout, x, seed, call_seed, reveal=False):
    """got: two_dim_wrapper's output; right when it is what MultiHeadAttentionWrapper(d_in, 1, ctx,
    dropout, num_heads=2) gives under the same seeds (the wrapper itself is graded in mha)."""
    got = expect.as_tensor(got, what)
    own = student.module("mha").MultiHeadAttentionWrapper(d_in, 1, ctx, dropout, num_heads=2, _seed=seed)
    if matches(got, expect.as_tensor(own(x, _seed=call_seed), "MultiHeadAttentionWrapper"), 1e-5):
        return  # the right module (whatever mha.py's wrapper computes: graded in mha)
    if got.dim() == 0 or got.shape[-1] != 2:
        width = got.shape[-1] if got.dim() else "none"
        raise AssertionError(f"{what} has output width {width}: Exercise 3.2 asks for 2 with num_heads=2, so each head "
                             f"needs d_out=1")
    if dropout:
        plain = student.module("mha").MultiHeadAttentionWrapper(d_in, 1, ctx, 0.0, num_heads=2, _seed=seed)
        if matches(got, expect.as_tensor(plain(x, _seed=call_seed), "MultiHeadAttentionWrapper"), 1e-5):
            raise AssertionError(f"{what} ignores its dropout argument: pass it on to MultiHeadAttentionWrapper")
    raise AssertionError(f"{what} differs from MultiHeadAttentionWrapper(d_in, 1, context_length, dropout, num_heads=2) "
                         f"made after the same seed" + ("" if not reveal else
                                                         ": two_dim_wrapper should return exactly that module"))


def test_ex32_book_example(student, book):
    module = student.module(PART).two_dim_wrapper(3, 6, _seed=123)
    got = expect.as_tensor(module(book.batch), "two_dim_wrapper(3, 6)(batch)")
    if matches(got, book["ex32_mha_wrapper_dout1_seed123"], 1e-4):
        return
    judge_two_dim(student, got, "torch.manual_seed(123); two_dim_wrapper(3, 6)(batch)", 3, 6, 0.0, book.batch, 123, 0,
                  reveal=True)


def test_ex32_two_heads_of_width_one(student, rng):
    d_in, ctx, p = 5, 9, 0.1
    module = student.module(PART).two_dim_wrapper(d_in, ctx, p, _seed=4)
    x = torch.rand(2, ctx, d_in, generator=rng)  # num_tokens == context_length: shorter inputs are causal's
    what = "two_dim_wrapper(5, 9, dropout=0.1) made after another seed, in training mode"
    judge_two_dim(student, module(x, _seed=8), what, d_in, ctx, p, x, 4, 8)


def test_ex33_parameter_count(student, book):
    module = gpt2(student)
    info = module.describe()
    count = sum(math.prod(shape) for _, shape, _ in info["parameters"])
    want = book["ex33_param_count"]
    if count == want:
        return
    own = student.module("mha").MultiHeadAttention(768, 768, 1024, 0.0, num_heads=12)
    if own.describe()["parameters"] == info["parameters"]:
        return  # the count of the student's own MultiHeadAttention with GPT-2's sizes: graded in mha
    names = [name for name, _, _ in info["parameters"]]
    if any(n in names for n in ("W_query.bias", "W_key.bias", "W_value.bias")):
        raise AssertionError(f"gpt2_small_attention() has {count:,} parameters, biases in W_query, W_key and W_value "
                             f"included: the exercise uses qkv_bias=False ({want:,} parameters)")
    raise AssertionError(f"gpt2_small_attention() has {count:,} parameters; {GPT2_CALL} has {want:,}")


def test_ex33_heads_and_context(student, rng):
    module = gpt2(student)
    info = module.describe()
    squares = [tuple(shape) for _, shape, _ in info["buffers"] if len(shape) == 2 and shape[0] == shape[1]]
    if squares and squares[0] != (1024, 1024):
        raise AssertionError(f"gpt2_small_attention()'s mask is {squares[0]}: GPT-2 small's context length is 1024")
    x = (torch.rand(1, 4, 768, generator=rng) - 0.5) * 20
    got = expect.as_tensor(module(x), "gpt2_small_attention()(x)")
    state = gpt2_weights(module)
    if all(n in state for n in GPT2_PARAMETERS) and tuple(state["W_query.weight"].shape) == (768, 768):
        if matches(got, reference.multi_head(x, state, 12), 1e-3) and squares:
            return
        for h in (1, 2, 3, 4, 6, 8, 16, 24):
            if matches(got, reference.multi_head(x, state, h), 1e-3):
                raise AssertionError(f"gpt2_small_attention() is built with num_heads={h}: GPT-2 small has 12 heads of "
                                     f"head_dim 64")
    own = student.module("mha").MultiHeadAttention(768, 768, 1024, 0.0, num_heads=12)
    own_info = own.describe()
    if own_info["buffers"] != info["buffers"] or own_info["parameters"] != info["parameters"]:
        raise AssertionError(f"gpt2_small_attention() is not {GPT2_CALL}: its parameters or buffers differ")
    trained = {name for name, _, _ in own_info["parameters"]}
    helpers.load_known(own, {k: v for k, v in state.items() if k in trained}, GPT2_CALL)
    if not matches(got, expect.as_tensor(own(x), GPT2_CALL), 1e-4):
        raise AssertionError(f"gpt2_small_attention() computes differently from {GPT2_CALL} with the same weights: "
                             f"GPT-2 small has 12 heads of head_dim 64 and no dropout here")
