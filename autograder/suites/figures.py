"""Pictures for feedback: the student's attention weights next to the expected ones, on public inputs.

When a check about attention weights fails, the grader shows the student what their code computes
on the book's example ("Your journey starts with one step") beside what it should compute. Each
part that has such a picture has a probe here: it runs the student's code (through the `student`
adapter, in a fresh sandbox session that has seen nothing else) on the book's printed scores or on
fixed public tensors only, never on a hidden input, and the grader's reference (reference.py)
computes the expected weights.

A module's weights are read through identity value projections: with x = I (T one-hot tokens,
d_in = T), W_key = I and W_value = I, the module's output IS its attention weight matrix, and
W_query = sqrt(d_k / book_d_k) * S makes the scaled scores those of the book (S: the book's
scores), so a right module draws the book's printed weights.

A figure is plain data (autograder/figure_data.py): the grader's title and labels, the
misconception in the grader's words, and per panel the student's numbers and the reference's.
Panels that equal the expected weights are dropped: a figure exists only where the student's
weights are visibly wrong.
"""
import math
from collections.abc import Callable
from typing import Any

import torch

from autograder.figure_data import MAX_PANELS, validate
from autograder.suites import helpers, reference
from autograder.suites.misconceptions import matches, multi_head_mistakes, named_mistake, weight_mistakes

ATOL = 1e-4
TOKENS = ("Your", "journey", "starts", "with", "one", "step")
T = len(TOKENS)

# the failed checks that a part's picture explains (about attention weights), in the suites' order
FIGURE_CHECKS = {
    "simple_attention": ("scores_and_weights_book_example", "attention_weights_on_unseen_scores",
                         "context_vectors_book_example", "context_vectors_on_unseen_inputs"),
    "self_attention_v1": ("v1_book_example", "v1_unseen_seeds_and_sizes", "v1_math_with_loaded_weights",
                          "v1_float64_and_gradients"),
    "self_attention_v2": ("v2_book_example", "v2_unseen_seeds_and_sizes", "v2_math_with_loaded_weights",
                          "v2_qkv_bias", "v2_float64_and_gradients"),
    "causal": ("masked_weights_book_example", "masked_weights_unseen_scores", "causal_inputs_left_unchanged",
               "causal_attention_book_example", "causal_attention_unseen_seeds",
               "causal_attention_math_with_known_weights", "causal_qkv_bias", "causal_future_tokens_never_matter",
               "causal_weights_through_identity_values", "causal_float64_and_gradients"),
    "mha": ("mha_book_example", "mha_unseen_seeds", "mha_math_with_known_weights", "mha_qkv_bias",
            "mha_matches_stacked_single_heads", "mha_scales_by_head_dim", "mha_causal_and_dropout",
            "mha_float64_and_gradients"),
}


def make_figure(title, panels, diagnosis=""):
    """panels: [(name, got, want, diagnose)] -> a figure of the panels whose got differs from want, or
    None when none does (or the student's output is not a matrix of the expected shape).
    diagnose(got) -> the misconception in the grader's words ('' when none is recognized);
    diagnosis: what the whole output says, when it names one (it comes first)."""
    kept = []
    for name, got, want, diagnose in panels:
        if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(want.shape) \
                or matches(got.double(), want.double(), ATOL):
            continue
        kept.append({"name": name, "got": got.detach().double().tolist(), "want": want.double().tolist()})
        diagnosis = diagnosis or (diagnose(got.double()) if diagnose else "")
    if not kept:
        return None
    return validate({"title": title, "labels": list(TOKENS), "diagnosis": diagnosis, "panels": kept[:MAX_PANELS]})


# ---------------------------------------------------------------- the public probe inputs

def book_scores(book: dict) -> tuple[torch.Tensor, int]:
    """The book's scores of section 3.5 (SelfAttention_v2 after torch.manual_seed(789)), 6x6, and d_k = 2."""
    return book["attn_scores_sa_v2"].double(), 2


def identity_qk(scores: torch.Tensor, book_d_k: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(Q, K) with K = I whose scaled scores Q @ K.T / sqrt(T) equal scores / sqrt(book_d_k)."""
    return scores * math.sqrt(T / book_d_k), torch.eye(T, dtype=torch.float64)


def mha_head_scores(book):
    """The scores of each head of torch.manual_seed(123); MultiHeadAttention(3, 2, 6, 0.0, num_heads=2) on
    the book's inputs (head_dim 1), from the seeded weights the grader draws itself."""
    state = helpers.drawn_linears(123, helpers.qkv_layers(3, 2, False))
    x = book.inputs.double()
    q = x @ state["W_query.weight"].double().T
    k = x @ state["W_key.weight"].double().T
    return [q[:, h:h + 1] @ k[:, h:h + 1].T for h in range(2)]


def diagnosis(scores, d_k, causal):
    """got -> the named weight mistake (misconceptions.weight_mistakes) on the probe's scores, or ''."""
    q, k = identity_qk(scores, d_k)
    raw = q @ k.T  # what the module sees: the scaled book scores times sqrt(T)
    right = reference.attention_weights(q, k, causal)
    return lambda got: named_mistake(got, right, weight_mistakes(raw, T, causal), ATOL)


# ---------------------------------------------------------------- one probe per part

def probe_simple_attention(student, book):
    scores = book["attn_scores"].double()
    want = torch.softmax(scores, dim=-1)
    got = student.module("simple_attention").attention_weights(book["attn_scores"])
    mistakes = [(torch.softmax(scores, dim=0), "the softmax runs over dim 0 (down the columns): use dim=-1"),
                (scores / scores.sum(dim=-1, keepdim=True), "the rows are divided by their sums without exp"),
                (torch.softmax(scores.flatten(), 0).view_as(scores), "the softmax runs over the whole matrix at once")]
    return make_figure('attention_weights(attn_scores) for "Your journey starts with one step" (section 3.3)',
                       [("attention_weights", got, want, lambda g: named_mistake(g, want, mistakes, ATOL))])


def _single_head_state(q, k, layout):
    """Weights under which a single-head module computes Q, K and V = I from x = I: v1 keeps W as
    (d_in, d_out) and computes x @ W; nn.Linear keeps (d_out, d_in) and computes x @ W.T."""
    eye = torch.eye(T)
    if layout == "v1":
        return {"W_query": q.float(), "W_key": k.float(), "W_value": eye}
    return {"W_query.weight": q.T.float(), "W_key.weight": k.T.float(), "W_value.weight": eye}


def module_weights(student, book, part, make, layout, causal):
    """The attention weights of the student's single-head module on the book's scores (T x T). make(module)
    -> (its class, the arguments to make one): made and loaded in one exchange, then .eval() and the
    forward in another (helpers.build_known, helpers.forward)."""
    q, k = identity_qk(*book_scores(book))
    constructor, args = make(student.module(part))
    module = helpers.build_known(constructor, args, {}, _single_head_state(q, k, layout), part)
    got = helpers.forward(module, torch.eye(T).unsqueeze(0) if causal else torch.eye(T), eval_first=True)()
    if causal and isinstance(got, torch.Tensor) and got.dim() == 3 and got.shape[0] == 1:
        got = got[0]
    return got


BOOK_351 = "on the book's example (the scores of section 3.5.1, read through identity value projections)"


def probe_self_attention_v1(student, book):
    got = module_weights(student, book, "self_attention_v1", lambda m: (m.SelfAttention_v1, (T, T)), "v1", False)
    return make_figure(f"SelfAttention_v1's attention weights {BOOK_351}",
                       [("SelfAttention_v1", got, _right(book, False), diagnosis(*book_scores(book), False))])


def probe_self_attention_v2(student, book):
    got = module_weights(student, book, "self_attention_v2", lambda m: (m.SelfAttention_v2, (T, T)), "linear", False)
    return make_figure(f"SelfAttention_v2's attention weights {BOOK_351}",
                       [("SelfAttention_v2", got, _right(book, False), diagnosis(*book_scores(book), False))])


def probe_causal(student, book):
    want, diagnose = _right(book, True), diagnosis(*book_scores(book), True)
    panels = []
    try:
        got = student.module("causal").masked_attention_weights(book["attn_scores_sa_v2"], book_scores(book)[1])
        panels.append(("masked_attention_weights(attn_scores, 2)", got, want,
                       lambda g: named_mistake(g, want, weight_mistakes(book_scores(book)[0], 2, True), ATOL)))
    except Exception:  # a function that raises draws no panel; the module may still draw one
        pass
    try:
        got = module_weights(student, book, "causal", lambda m: (m.CausalAttention, (T, T, T, 0.0)), "linear", True)
        panels.append(("CausalAttention", got, want, diagnose))
    except Exception:  # a picture is extra: a probe that fails draws nothing
        pass
    return make_figure("Causal attention weights on the book's example (section 3.5: the future masked, each row "
                       "renormalized)", panels)


def probe_mha(student, book):
    heads = mha_head_scores(book)
    qs, ks = zip(*(identity_qk(s, 1) for s in heads), strict=True)
    h, d = len(heads), len(heads) * T
    eye = torch.eye(T)
    state = {"W_query.weight": torch.cat([q.T for q in qs]).float(), "W_key.weight": torch.cat([k.T for k in ks]).float(),
             "W_value.weight": torch.cat([eye] * h), "out_proj.weight": torch.eye(d), "out_proj.bias": torch.zeros(d)}
    mha = helpers.build_known(student.module("mha").MultiHeadAttention, (T, d, T, 0.0), {"num_heads": h}, state,
                              "MultiHeadAttention")
    x = torch.eye(T).unsqueeze(0)
    out = helpers.forward(mha, x, eval_first=True)()  # (1, T, h*T): head i's weights in columns i*T .. (i+1)*T - 1
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (1, T, d):
        return None
    panels = [(f"head {i + 1}", out[0, :, i * T:(i + 1) * T], reference.attention_weights(qs[i], ks[i], True),
               diagnosis(heads[i], 1, True)) for i in range(h)]
    double = {k: v.double() for k, v in state.items()}
    whole = named_mistake(out.double(), reference.multi_head(x.double(), double, h),
                          multi_head_mistakes(x.double(), double, h), ATOL)
    return make_figure("Each head's attention weights in torch.manual_seed(123); MultiHeadAttention(3, 2, 6, 0.0, "
                       "num_heads=2) on the book's inputs (read through identity value projections)", panels, whole)


def _right(book, causal):
    return reference.attention_weights(*identity_qk(*book_scores(book)), causal)


PROBES = {
    "simple_attention": probe_simple_attention,
    "self_attention_v1": probe_self_attention_v1,
    "self_attention_v2": probe_self_attention_v2,
    "causal": probe_causal,
    "mha": probe_mha,
}


def take(probe: Callable[[Any, Any], dict[str, Any] | None], student: Any, book: Any) -> dict[str, Any] | None:
    """probe(student, book) -> a figure or None; anything the student's code does wrong -> None."""
    try:
        return probe(student, book)
    except Exception:
        return None
