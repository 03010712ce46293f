"""Wrong answers the grader computes on purpose, to tell a student which mistake their output matches.

Every `*_mistakes` helper returns a list of (tensor, explanation): what a typical wrong version of
the computation gives on the same inputs, and a sentence saying what that version did wrong and how
to fix it. The helpers are @deferred: the list is computed when first read, so a right answer
never pays for the wrong ones. `judge` compares a student's output with the right answer and, when
they differ, with each wrong answer in turn; the first one that matches names the mistake. The explanations describe
the mistake only: they never print the hidden inputs or the values the grader expected.
"""
import functools
import math
import re
import sys

import torch

from autograder.inside import emulated_gpu
from autograder.suites import expect, vocabulary


class Deferred:
    """A list of (wrong answer, explanation), computed on first use (iteration, len, indexing)."""

    def __init__(self, make):
        self._make, self._items = make, None

    def _list(self):
        if self._items is None:
            self._items = list(self._make())
        return self._items

    def __iter__(self):
        return iter(self._list())

    def __len__(self):
        return len(self._list())

    def __getitem__(self, index):
        return self._list()[index]


def deferred(helper):
    """Make a *_mistakes helper return a Deferred: the same list, computed only when judge needs it."""
    @functools.wraps(helper)
    def wrapper(*args, **kwargs):
        return Deferred(lambda: helper(*args, **kwargs))
    return wrapper


def future(num_tokens, diagonal=1):
    """Bool (T, T): True where a query must not look (above the diagonal when diagonal=1)."""
    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(diagonal)


def weights(scores, d_k, causal, *, divide_by=None, dim=-1, mask="-inf", diagonal=1, scale_after=False):
    """Attention weights from raw scores (..., T, T), right by default, wrong on request.

    divide_by: what the scores are divided by (right: sqrt(d_k)); dim: the softmax dim (right: -1);
    mask: "-inf" (right), "zero" (future scores set to 0), "after" (future weights zeroed after the
    softmax, rows not renormalized), "after-inf" (future weights set to -inf after the softmax),
    "none" (no mask), "inverted" (the past hidden, the future kept), "added" (the 0/1 mask added to the
    scaled scores, as scaled_dot_product_attention does with a float attn_mask), "allowed" (the future
    mask given to scaled_dot_product_attention as a bool attn_mask, which marks where a token may look:
    inverted, and a row with nothing to look at all 0, as its softmax makes it);
    diagonal: the triu offset of the mask (right: 1);
    scale_after: divide the weights, not the scores.
    """
    divide_by = math.sqrt(d_k) if divide_by is None else divide_by
    s = scores if scale_after else scores / divide_by
    T = scores.shape[-1]
    if causal and mask in ("-inf", "zero"):
        s = s.masked_fill(future(T, diagonal), float("-inf") if mask == "-inf" else 0.0)
    if causal and mask == "added":
        s = s + future(T, diagonal).to(s.dtype)
    if mask in ("inverted", "allowed") and causal:
        s = s.masked_fill(~future(T, diagonal), float("-inf"))
    w = torch.softmax(s, dim=dim)
    if mask == "allowed" and causal:
        w = torch.nan_to_num(w, nan=0.0)
    if scale_after:
        w = w / divide_by
    if causal and mask in ("after", "after-inf"):
        w = w.masked_fill(future(T, diagonal), 0.0 if mask == "after" else float("-inf"))
    return w


# the scores divided by d_k (head_dim in each head of MultiHeadAttention), not its square root; where the module calls
# scaled_dot_product_attention, which scales by itself, source_mistakes.refined says it was scaled twice
BY_D_K = "the scores are divided by d_k instead of sqrt(d_k): scale by 1/sqrt(d_k), i.e. d_k ** 0.5"
BY_HEAD_DIM = ("the scores are divided by head_dim instead of sqrt(head_dim): scale by 1/sqrt(head_dim), i.e. "
               "head_dim ** 0.5")
# a mask's diagonal off by one, in the words of every check that sees it (one mistake, one cause)
HIDES_DIAGONAL = ("the mask's diagonal is off by one: it also hides each token from itself; mask only what is above "
                  "the diagonal (triu(..., diagonal=1))")
SEES_NEXT = ("the mask's diagonal is off by one: each token still sees the next one; mask everything above the "
             "diagonal (triu(..., diagonal=1))")
BY_NUM_TOKENS = ("the scores are scaled by 1/sqrt(num_tokens), the number of tokens: scale by 1/sqrt(d_k), the "
                 "keys' dimension (keys.shape[-1]; head_dim in each head of MultiHeadAttention)")
SOFTMAX_OVER_BATCH = ("the softmax runs over the wrong dim (dim=0: across the sequences of the batch): use dim=-1 so "
                      "that each row of attention weights sums to 1")
SOFTMAX_OVER_HEADS = ("the softmax runs over the wrong dim (dim=1: across the heads of the 4-D scores (b, num_heads, "
                      "num_tokens, num_tokens)): use dim=-1")
# a 2-D bool mask used as an index of batched scores (scores[mask] = -inf): it indexes the leading dims
BOOL_INDEX = ("a 2-D bool mask used as an index (scores[mask] = ...) applies to the first two dims of batched scores, "
              "not the last two: write scores[..., mask] = -inf, or scores.masked_fill(mask, -inf) (np.where(mask, "
              "-np.inf, scores) in NumPy)")
# the future weights zeroed after the softmax, the rows left summing to less than 1
AFTER_SOFTMAX = ("the mask is applied after the softmax without renormalizing: after zeroing the future weights, divide "
                 "each row by its sum (or mask the scores with -inf before the softmax)")
# the future scores filled with 0: exp(0) still gives them weight
FUTURE_ZERO = ("the future scores are set to 0 instead of -inf: a score of 0 still gets weight after the softmax; fill "
               "the masked scores with -inf")
# the -inf of the mask put into the weights after the softmax (their sums and products become -inf or NaN)
AFTER_SOFTMAX_INF = ("the mask is applied after the softmax: the future weights are set to -inf, which turns the "
                     "context vectors into -inf or NaN; fill the future scores with -inf before the softmax, which "
                     "then gives them weight 0")
# the allowed positions (the book's tril mask of 3.5.1) filled with -inf, as if they were the future
INVERTED = ("the mask is inverted: it hides the past and keeps the future; the positions filled with -inf must be "
            "those above the diagonal (triu(..., diagonal=1), or a tril mask where it is 0)")
# `d_k ** 1/2`: ** binds tighter than /, so `scores / d_k ** 1/2` divides by 2 * d_k and a scale d_k ** 1/2 kept
# apart is d_k / 2 (right only where d_k is 4)
POWER_PRECEDENCE = ("`d_k ** 1/2` is not the square root: ** binds tighter than /, so it is (d_k ** 1) / 2 and "
                    "`scores / d_k ** 1/2` divides by 2 * d_k; write d_k ** 0.5 (or math.sqrt(d_k))")


# the book's 0/1 float mask handed to scaled_dot_product_attention as attn_mask: a float mask is added to the
# scores (0 or 1 more), a bool one says where attention may look (True: may attend)
MASK_ADDED = ("the 0/1 mask is added to the scores instead of hiding them: scaled_dot_product_attention adds a float "
              "attn_mask to the scaled scores; pass a bool mask that is True where a token may look (~mask.bool()), "
              "or is_causal=True")


# the book's future mask (True above the diagonal) handed to scaled_dot_product_attention as a bool attn_mask,
# where True means "may attend": the future is attended to, the past and the token itself hidden
MASK_ALLOWED = ("the bool mask is inverted for scaled_dot_product_attention: its attn_mask is True where a token MAY "
                "look, the opposite of masked_fill's; pass ~mask (the past and the token itself), or is_causal=True")


def power_precedence(d_k):
    """What `d_k ** 1/2` makes the scores divided by: 2 * d_k (written inline), d_k / 2 (a scale kept apart) where
    that is neither 1 (no scaling) nor sqrt(d_k) (right)."""
    return [2.0 * d_k] + ([d_k / 2] if d_k not in (1, 2, 4) else [])


# the heads put back with head_dim before num_heads: each head's values are scattered over the output
MERGED_OUT_OF_ORDER = ("the heads are merged in the wrong order: bring the context to (b, num_tokens, num_heads, "
                       "head_dim) with .transpose(1, 2) before the view to (b, num_tokens, d_out), so that each "
                       "head's head_dim values stay side by side in head order")


@deferred
def weight_mistakes(scores, d_k, causal, d_in=None):
    """The usual ways to get from scores to weights wrong, as (weights, explanation)."""
    out = [
        (weights(scores, d_k, causal, divide_by=1.0),
         "the scores are not scaled: divide them by sqrt(d_k) (d_k = the keys' dimension) before the softmax"),
        (weights(scores, d_k, causal, divide_by=float(d_k)), BY_D_K),
        (weights(scores, d_k, causal, dim=-2),
         "the softmax runs over the wrong dim (dim=0 / -2, down the columns): use dim=-1 so that each "
         "row of attention weights sums to 1"),
        (weights(scores, d_k, causal, scale_after=True),
         "the weights are divided by sqrt(d_k) after the softmax: scale the scores before the softmax"),
        (weights(scores.transpose(-2, -1), d_k, causal),
         "the scores are transposed (keys @ queries.T): row i must hold query i's scores, queries @ keys.T"),
    ]
    T = scores.shape[-1]
    if T not in (1, d_k):  # sqrt(num_tokens): the scores' size taken for the keys' dimension
        out.append((weights(scores, d_k, causal, divide_by=math.sqrt(T)), BY_NUM_TOKENS))
    if scores.dim() >= 3:  # a batch: context_vector's softmax(dim=0) runs over the sequences
        out.append((weights(scores, d_k, causal, dim=0), SOFTMAX_OVER_BATCH))
    out += [(weights(scores, d_k, causal, divide_by=by), POWER_PRECEDENCE) for by in power_precedence(d_k)]
    if d_in is not None and d_in != d_k:
        out.append((weights(scores, d_k, causal, divide_by=math.sqrt(d_in)),
                    "the scores are scaled by 1/sqrt(d_in), the input dimension: scale by 1/sqrt(d_k), "
                    "where d_k is the keys' dimension (keys.shape[-1])"))
    if causal:
        out += [
            (weights(scores, d_k, False),
             "no causal mask is applied: the scores of later tokens must become -inf before the softmax"),
            (weights(scores, d_k, causal, mask="zero"), FUTURE_ZERO),
            (weights(scores, d_k, causal, mask="after"), AFTER_SOFTMAX),
            (weights(scores, d_k, causal, mask="after-inf"), AFTER_SOFTMAX_INF),
            (weights(scores, d_k, causal, mask="inverted"), INVERTED),
            (weights(scores, d_k, causal, mask="added"), MASK_ADDED),
            (weights(scores, d_k, causal, mask="allowed"), MASK_ALLOWED),
            (weights(scores, d_k, causal, diagonal=0), HIDES_DIAGONAL),
            (weights(scores, d_k, causal, diagonal=2), SEES_NEXT),
        ]
    return out


# a projection computed with another one's layer: (layers of the queries, keys, values, explanation)
SWAPPED_LAYERS = (
    (("W_query", "W_query", "W_value"), "the keys are computed with the query weights (W_query): compute them "
                                        "with W_key"),
    (("W_key", "W_key", "W_value"), "the queries are computed with the key weights (W_key): compute them with W_query"),
    (("W_query", "W_key", "W_key"), "the values are computed with the key weights (W_key): compute them with W_value"),
    (("W_query", "W_key", "W_query"), "the values are computed with the query weights (W_query): compute them "
                                      "with W_value"),
    (("W_key", "W_query", "W_value"), "the queries and keys are swapped (queries from W_key, keys from W_query)"),
)


@deferred
def attention_mistakes(q, k, v, causal, d_in=None):
    """weight_mistakes carried through to the context vectors (weights @ values), and the same
    attention with one projection standing in for another (SWAPPED_LAYERS)."""
    scores = q @ k.transpose(-2, -1)
    out = [(w @ v, why) for w, why in weight_mistakes(scores, k.shape[-1], causal, d_in)]
    projections = {"W_query": q, "W_key": k, "W_value": v}
    for layers, why in SWAPPED_LAYERS:
        q2, k2, v2 = (projections[name] for name in layers)
        if q2.shape[-1] == k2.shape[-1] and k2.shape[-2] == v2.shape[-2]:
            out.append((weights(q2 @ k2.transpose(-2, -1), k2.shape[-1], causal) @ v2, why))
    return out


def multi_head(x, state, num_heads, *, split_transpose=True, merge_transpose=True, out_proj=True,
               divide_by=None, layers=("W_query", "W_key", "W_value"), merge_head_dim_first=False,
               **weight_options):
    """MultiHeadAttention with the given state, right by default, wrong on request.
    layers: the layers the queries, keys and values come from (right: W_query, W_key, W_value);
    merge_head_dim_first: the context merged as (b, num_tokens, head_dim, num_heads)."""
    b, T, _ = x.shape

    def project(name):
        out = x @ state[f"{name}.weight"].T
        bias = state.get(f"{name}.bias")
        return out if bias is None else out + bias

    q, k, v = (project(name) for name in layers)
    d_out = q.shape[-1]
    head_dim = d_out // num_heads

    def split(t):
        if split_transpose:
            return t.view(b, T, num_heads, head_dim).transpose(1, 2)
        return t.reshape(b, num_heads, T, head_dim)

    qh, kh, vh = split(q), split(k), split(v)
    w = weights(qh @ kh.transpose(-2, -1), head_dim, True, divide_by=divide_by, **weight_options)
    context = w @ vh
    if merge_head_dim_first:
        context = context.permute(0, 2, 3, 1).reshape(b, T, d_out)
    else:
        context = context.transpose(1, 2).reshape(b, T, d_out) if merge_transpose else context.reshape(b, T, d_out)
    return project_out(context, state) if out_proj else context


def project_out(context, state):
    return context @ state["out_proj.weight"].T + state["out_proj.bias"]


# the commonest multi-head mistake: both halves of the head split without the transpose (view straight
# to (b, num_heads, num_tokens, head_dim), then straight back to (b, num_tokens, d_out)); one cause
SPLIT_AND_MERGE = ("the heads are split and merged without the transpose: view the projections as (b, num_tokens, "
                   "num_heads, head_dim) and .transpose(1, 2) them to (b, num_heads, num_tokens, head_dim); after the "
                   "attention .transpose(1, 2) the context back before the .contiguous().view(b, num_tokens, d_out)")


@deferred
def multi_head_mistakes(x, state, num_heads):
    """The usual ways to get the efficient multi-head attention wrong, as (output, explanation)."""
    d_out = state["W_query.weight"].shape[0]
    out = [
        (multi_head(x, state, num_heads, split_transpose=False),
         "the heads are split without the transpose: view the projections as (b, num_tokens, "
         "num_heads, head_dim), then .transpose(1, 2) to (b, num_heads, num_tokens, head_dim)"),
        (multi_head(x, state, num_heads, merge_transpose=False),
         "the heads are merged without the transpose: .transpose(1, 2) the context back to (b, "
         "num_tokens, num_heads, head_dim) before the .view(b, num_tokens, d_out)"),
        (multi_head(x, state, num_heads, split_transpose=False, merge_transpose=False), SPLIT_AND_MERGE),
        (multi_head(x, state, num_heads, merge_head_dim_first=True), MERGED_OUT_OF_ORDER),
        (multi_head(x, state, num_heads, out_proj=False),
         "out_proj is missing: the merged heads must go through self.out_proj"),
        *[(multi_head(x, state, num_heads, layers=layers), why) for layers, why in SWAPPED_LAYERS],
        (multi_head(x, state, 1),
         "the heads are not split at all (one head of d_out dims): reshape into num_heads heads of "
         "head_dim = d_out // num_heads"),
    ]
    if x.shape[1] not in (1, d_out // num_heads):
        out.append((multi_head(x, state, num_heads, divide_by=math.sqrt(x.shape[1])), BY_NUM_TOKENS))
    out += [(multi_head(x, state, num_heads, divide_by=by), POWER_PRECEDENCE)
            for by in power_precedence(d_out // num_heads)]
    out.append((multi_head(x, state, num_heads, divide_by=float(d_out // num_heads)), BY_HEAD_DIM))
    if num_heads > 1:
        out.append((multi_head(x, state, num_heads, divide_by=math.sqrt(d_out)),
                    "the scores are scaled by 1/sqrt(d_out): each head has head_dim = d_out // num_heads "
                    "dims, so scale by 1/sqrt(head_dim)"))
    for options, why in ((dict(mask="none"), "no causal mask is applied in the heads: every score above the diagonal "
                                             "must become -inf before the softmax (self.mask[:num_tokens, :num_tokens])"),
                         (dict(mask="inverted"), INVERTED),  # the past hidden, the future seen
                         (dict(mask="added"), MASK_ADDED),
                         (dict(mask="allowed"), MASK_ALLOWED),
                         (dict(dim=-2), "the softmax runs over the wrong dim: use dim=-1"),
                         (dict(dim=1), SOFTMAX_OVER_HEADS),
                         (dict(dim=0), SOFTMAX_OVER_BATCH),
                         (dict(mask="zero"), FUTURE_ZERO),
                         (dict(mask="after"), AFTER_SOFTMAX),
                         (dict(mask="after-inf"), AFTER_SOFTMAX_INF),
                         (dict(diagonal=0), HIDES_DIAGONAL),
                         (dict(diagonal=2), SEES_NEXT),
                         (dict(divide_by=1.0), "the scores are not scaled by 1/sqrt(head_dim)"),
                         (dict(scale_after=True), "the weights are divided by sqrt(head_dim) after the softmax: scale "
                                                  "the scores before the softmax")):
        out.append((multi_head(x, state, num_heads, **options), why))
    return out


def matches(got, want, atol):
    """Same shape, NaN and inf in the same places, everything else within atol."""
    if tuple(got.shape) != tuple(want.shape):
        return False
    got, want = got.double(), want.double()
    if bool(((got - want).abs() <= atol).all()):  # every value close (NaN and inf never are): the usual case
        return True
    if not torch.equal(torch.isnan(got), torch.isnan(want)):
        return False
    finite = torch.isfinite(want)
    if not torch.equal(torch.isfinite(got), finite) or not torch.equal(got[~finite & ~torch.isnan(want)],
                                                                        want[~finite & ~torch.isnan(want)]):
        return False
    return bool(((got[finite] - want[finite]).abs() <= atol).all())


def named_mistake(got, want, mistakes, atol=1e-4):
    """The explanation of the known mistake that got matches (and the right answer does not); where
    several different mistakes give these very numbers, each is named as a possibility."""
    found = []
    for wrong, why in mistakes:
        # relative to the mistake's own size: a mistake with large numbers (scores divided by a sum near
        # 0) matches a float32 answer as closely as a small one does, whatever the draw
        finite = wrong[torch.isfinite(wrong)] if isinstance(wrong, torch.Tensor) else wrong
        scale = max(1.0, float(finite.abs().max())) if isinstance(finite, torch.Tensor) and finite.numel() else 1.0
        if why not in found and not matches(wrong, want, atol) and matches(got, wrong, atol * scale):
            found.append(why)
    if len(found) > 1:
        return expect.SEVERAL + "; or ".join(found[:3])
    return found[0] if found else ""


def judge(got, want, what, mistakes=(), hint="", atol=1e-4, reveal=False, case=""):
    """expect.close, except that a wrong answer which matches a known mistake is named as such.
    case: the hidden case in the instructor's words (goes to the detail, never to the message)."""
    got = expect.as_tensor(got, what)
    if matches(got, want, atol):
        return got
    why = named_mistake(got, want, mistakes, atol)
    if why:
        expect.fail(f"{what} is wrong: {why}", case, cause=why)
    if torch.is_floating_point(got) and torch.isnan(got).any() and tuple(got.shape) == tuple(want.shape):
        expect.fail(f"{what} contains NaN: a softmax over a row whose scores are all -inf gives NaN "
                    f"(is a whole row masked?), and so does -inf times 0" + (f". {hint}" if hint else ""), case,
                    kind="nan", hint=hint)
    return expect.close(got, want, what, atol=atol, hint=hint, reveal=reveal, case=case)


# ---------------------------------------------------------------- what the student's code raised

# The attributes the chapter's classes set in __init__, which a diagnosis may repeat from an
# AttributeError (with the submission's own `self.<name>` names: StudentError.attributes).
CONTRACT_ATTRIBUTES = frozenset({
    "W_query", "W_key", "W_value", "dropout", "mask", "out_proj", "heads", "d_in", "d_out",
    "num_heads", "head_dim", "context_length", "qkv_bias"})

# what a GPU (or the emulated one, inside/emulated_gpu.py) says when a tensor made on the CPU meets the inputs
DEVICES_MIXED = ("it combines tensors on two devices: a tensor made on the default device (the CPU), e.g. torch.ones or "
                 "torch.zeros without device=, meets the inputs on the GPU. Create tensors with device=x.device (and "
                 "dtype=x.dtype where it matters), or slice a registered buffer, which moves with the module")


# a max or sum along an axis that dropped the axis (NumPy's broadcasting error in numpy_attention, or wrong values)
NO_KEEPDIMS = ("np.max and np.sum along an axis drop that axis without keepdims=True, so their result no longer "
               "lines up with the array (shapes that do not broadcast, or a max subtracted along another axis); pass "
               "keepdims=True (np.max(z, axis=axis, keepdims=True)) to subtract or divide along the axis")


# NumPy's and torch's words for an array or tensor used as a condition (if wo:, a and b)
ARRAY_AS_CONDITION = ("an array or tensor is used as a condition (if wo:, or and/or between arrays): it has no single "
                      "truth value; to test for an argument left out, write if wo is not None:")
# torch's words for a float (0./1.) mask given to masked_fill
FLOAT_MASK = ("masked_fill takes a bool mask, and the mask given holds floats (the buffer made by torch.triu(torch.ones("
              "...)) holds 0.0 and 1.0): pass self.mask.bool()[:num_tokens, :num_tokens], or make the buffer with "
              "dtype=torch.bool")
# torch's words when backward finds nothing trainable: the parameters do not require gradients
NO_GRADIENT = ("no gradient can flow back to the weights: they do not require gradients (nn.Parameter(..., "
               "requires_grad=False), a .detach(), or the computation done under torch.no_grad()); the layer's "
               "weights must be trainable parameters, nn.Parameter(torch.rand(d_in, d_out))")

# What the child read of torch's switches right after an operation of the check (inside/part_reset.changed):
# one the student's code changed and left changed. The grader puts every switch back before each of its
# operations, so only the numbers computed after the change, within the same call, show it.
GRAD_SWITCHED_OFF = ("your code switched gradients off and left them off (torch.set_grad_enabled(False), or an "
                     "inference mode or torch.no_grad() entered and never left, in forward?): nothing computed after "
                     "that has a gradient to flow back to the weights, and nothing the rest of the program computes "
                     "would have one either; leave torch's global settings as they are in forward (with "
                     "torch.no_grad(): only around code that must not be trained)")
LOWER_PRECISION = ("your code changed how torch computes float32 matrix products and left it changed "
                   "(torch.set_float32_matmul_precision, or TF32 allowed, in forward?): every product after that, "
                   "in this code and in the rest of the program, is computed in lower precision, so the numbers "
                   "are off; leave torch's global settings as they are in forward")
DTYPE_CHANGED = ("your code changed torch's default dtype and left it changed (torch.set_default_dtype in forward?): "
                 "every tensor made after that without a dtype, in this code and in the rest of the program, has "
                 "the other dtype; leave torch's global settings as they are in forward")
# torch's names of the switches, as the child reads them: those whose change shows in a check's numbers
NUMERIC_SETTINGS = {"_get_float32_matmul_precision": LOWER_PRECISION, "_get_cublas_allow_tf32": LOWER_PRECISION,
                    "_get_cudnn_allow_tf32": LOWER_PRECISION,
                    "_get_cublas_allow_fp16_reduced_precision_reduction": LOWER_PRECISION,
                    "_get_cublas_allow_bf16_reduced_precision_reduction": LOWER_PRECISION,
                    "_get_cpu_allow_fp16_reduced_precision_reduction": LOWER_PRECISION,
                    "get_default_dtype": DTYPE_CHANGED}
GRADIENT_SETTINGS = ("is_grad_enabled", "inference_mode")


def setting_changed(changed, error):
    """What the grader saw of torch's switches, where it explains the failed check (error: its Mismatch)
    or a suite's own AssertionError, instead of the misconception the numbers alone would suggest -> the
    grader's words, '' where it explains nothing. changed: the switches the check's operations changed and left changed
    (Student.changed_settings, as the child read them after each operation). Gradients switched off
    explain a gradient that cannot flow back (NO_GRADIENT); a numeric switch explains wrong values,
    not a wrong shape or type, nor an exception."""
    if any(name in changed for name in GRADIENT_SETTINGS) and getattr(error, "cause", "") == NO_GRADIENT:
        return GRAD_SWITCHED_OFF
    if getattr(error, "kind", "") in ("", "values", "nan"):
        for name, said in NUMERIC_SETTINGS.items():
            if name in changed:
                return said
    return ""


# an import of a module the grading environment does not have (which one is the child's text: never quoted)
NOT_INSTALLED = ("your code imports a module that is not there where it is graded: only Python's standard library, "
                 "torch, NumPy and the files you handed in are (a package such as scipy, or a file of yours not "
                 "handed in?)")


# a module of Python's standard library the submission's uid could not import (import_failure.STDLIB_UNLOADABLE)
STDLIB_UNLOADABLE = ("your code imports a module of Python's standard library that the grading environment could not "
                     "load for it: a limit of the machine it is graded on, not a mistake of yours (tell your "
                     "instructor); torch and NumPy do load")


# `self.mask = self.mask[:num_tokens, :num_tokens]` in forward: the buffer keeps the first input's slice
MASK_OVERWRITTEN = ("forward overwrites the mask buffer with its slice (self.mask = self.mask[:num_tokens, "
                    ":num_tokens]): the next, longer input finds a mask too small; keep the buffer whole and slice it "
                    "into a local variable, mask = self.mask[:num_tokens, :num_tokens]")


# torch.sqrt(keys.shape[-1]): a torch function given a Python number, which it does not take
NUMBER_TO_TORCH = ("torch.sqrt (like torch.exp) takes a tensor, not a Python number: keys.shape[-1] is an int; scale "
                   "by keys.shape[-1] ** 0.5 or math.sqrt(keys.shape[-1])")


# a float32 tensor meeting float64 ones in forward (torch's words for a matmul or a Linear of mixed dtypes)
DTYPES_MIXED = ("float32 and float64 tensors meet in forward: a tensor cast or made inside it (x.float(), torch.tensor "
                "or torch.ones without dtype=) does not follow the inputs and the module's .double(); compute in the "
                "dtype of the inputs and weights (make new tensors with dtype=x.dtype)")


# nn.Module.__setattr__'s words when a layer, a parameter or a buffer is assigned before nn.Module.__init__ ran
# torch's words where code asks for CUDA by name (.cuda(), .to('cuda'), device='cuda') on a machine without a GPU
GPU_BY_NAME = ("the code puts a tensor on the GPU by name (.cuda(), .to('cuda') or device='cuda'), and it is given inputs "
               "on the CPU here: create and move tensors to the inputs' device (device=x.device, .to(x.device)), so the "
               "same code runs on a CPU and on a GPU")
NO_SUPER_INIT = ("__init__ does not call super().__init__() before it assigns layers, parameters or buffers: nn.Module's "
                 "own __init__ must run first (the first line of __init__: super().__init__())")
# autograd's words for copy_ (or any in-place change) into an nn.Parameter outside torch.no_grad()
LEAF_IN_PLACE = ("an in-place change of an nn.Parameter (copy_ into it, or another op ending in _), a leaf tensor that "
                 "requires grad, is one autograd refuses: copy into parameters inside `with torch.no_grad():` (or into "
                 "their .data)")
# nn.Module.__setattr__'s words when a parameter's attribute is given a plain tensor (sa_v1.W_query = weight.T)
PARAMETER_REPLACED = ("a plain tensor is assigned where the module holds an nn.Parameter (sa_v1.W_query = ...): wrap it, "
                      "nn.Parameter(...), or copy the values into the parameter in place (with torch.no_grad(): "
                      "sa_v1.W_query.copy_(...))")


def error_diagnosis(error, signature=""):
    """The misconception behind a StudentError, in the grader's words ('' when none is recognized).

    error.message (student text) is only classified here, never repeated; an attribute name it
    names is reduced to a plain identifier. signature: the specified call, e.g.
    "CausalAttention(d_in, d_out, context_length, dropout, qkv_bias=False)".
    """
    if error.not_implemented:
        return ""
    text = error.message
    spec = f" {signature}" if signature else ""
    if error.kind == "TypeError":  # the grader's words and its specified signature only: fixed
        if re.search(r"unexpected keyword argument '?qkv_bias", text):
            return vocabulary.fixed(f"the constructor has no qkv_bias argument: the specification is{spec}, with "
                                    f"bias=qkv_bias passed to each nn.Linear")
        if re.search(r"unexpected keyword argument|multiple values for argument|positional argument|"
                     r"required (positional|keyword)", text):
            return vocabulary.fixed(f"the constructor does not take the specified arguments (another order, another "
                                    f"name, or one missing): keep the signature{spec or ' the specification gives'}")
    if error.kind == "RuntimeError" and re.search(r"expected m1 and m2 to have the same dtype|mat1 and mat2 must have "
                                                 r"the same dtype|expected scalar type (Float|Double) but found "
                                                 r"(Float|Double)|same dtype, but got: (float|double) != (float|double)",
                                                 text):
        return DTYPES_MIXED
    if error.kind == "TypeError" and re.match(r"(sqrt|rsqrt|exp|log)\(\): argument 'input' \(position 1\) must be "
                                              r"Tensor, not (int|float)", text):
        return NUMBER_TO_TORCH
    if error.kind == "AttributeError" and re.search(r"cannot assign (module|parameters?|buffer) before "
                                                    r"Module\.__init__\(\) call", text):
        return NO_SUPER_INIT
    if error.kind == "RuntimeError" and re.search(r"a leaf Variable that requires grad is being used in an in-place "
                                                 r"operation", text):
        return LEAF_IN_PLACE
    if error.kind == "TypeError" and re.search(r"cannot assign '[\w.]{1,60}' as parameter '\w{1,40}' "
                                              r"\(torch\.nn\.Parameter or None expected\)", text):
        return PARAMETER_REPLACED
    if error.kind == "AttributeError" and error.after_hidden:  # which attribute is the child's choice then
        if re.search(r"object has no attribute '\w{1,40}'", text):
            return ("an attribute is used but was never set: assign each one in __init__ as self.<name> = ... (a "
                    "local variable is lost when __init__ returns)")
    if emulated_gpu.mixes_devices(error.kind, text):  # torch's words on a GPU and on the emulated one
        return DEVICES_MIXED
    if error.kind in ("AssertionError", "RuntimeError") and re.search(r"Torch not compiled with CUDA enabled|no CUDA GPUs "
                                                                      r"are available|Found no NVIDIA driver", text):
        return GPU_BY_NAME
    if error.kind == "ValueError" and re.search(r"truth value of an array with more than one element", text) or \
            error.kind == "RuntimeError" and re.search(r"Boolean value of Tensor with more than one value", text):
        return ARRAY_AS_CONDITION
    if error.kind == "IndexError" and re.search(r"shape of the mask .{0,40} does not match the shape of the indexed|"
                                                r"boolean index did not match indexed array", text):  # torch's, NumPy's
        return BOOL_INDEX
    if error.kind == "ModuleNotFoundError":
        named = re.search(r"No module named '(\w+)", text)  # (only ever compared with the standard library's names)
        return STDLIB_UNLOADABLE if named and named[1] in sys.stdlib_module_names else NOT_INSTALLED
    if error.kind == "RuntimeError" and re.search(r"masked_fill_? only supports boolean masks", text):
        return FLOAT_MASK
    if error.kind == "RuntimeError" and re.search(r"does not require grad and does not have a grad_fn", text):
        return NO_GRADIENT
    if error.kind == "ValueError" and raised_in(error, "numpy_attention") and \
            re.search(r"could not be broadcast together with shapes", text):  # NumPy's words (einsum's say "remapped")
        return NO_KEEPDIMS
    if error.kind == "AttributeError":
        found = re.search(r"object has no attribute '(\w{1,40})'", text)
        # a name is repeated only when the specification or the student's source has it as self.<name>;
        # one the code made up while it ran (it may have seen hidden inputs) is never quoted
        if found and (found.group(1) in CONTRACT_ATTRIBUTES or found.group(1) in error.attributes):
            name = found.group(1)
            return (f"self.{name} is used but was never set: assign it in __init__ as self.{name} = ... (a local "
                    f"variable such as self_{name} or {name} is lost when __init__ returns)")
    return ""


def raised_in(error, module):
    """Did the innermost frame of the student's files that raised belong to module (e.g. 'causal')?"""
    return bool(error.where) and error.where.startswith(f"{module}.py,")
