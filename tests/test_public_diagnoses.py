"""Issue 12 item 4, the public side: the student's own pytest names the common mistakes.

Each case copies the reference solutions, puts one typical bug in, runs the public tests
(assignments/ch03/tests) on the copy and states which tests fail and what their message says:
the misconception in one message, without a traceback or pytest's fixture listing. Every run is made
in one process by the module fixture `public` (pytest.main once per buggy copy, tests/public_verdicts.py),
the runs of the tests that write their own folders (OWN_RUNS) with them.
"""
import contextlib
import importlib.util
import io
import json
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from autograder.authoring import notebooks

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions" / "ch03"
PUBLIC_TESTS = ROOT / "assignments" / "ch03" / "tests"

MHA_SCALE = "attn_scores / self.head_dim**0.5"
CAUSAL_SOFTMAX = "torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)"
CAUSAL_MASK = "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
MHA_DROPOUT = ("attn_weights = self.dropout(attn_weights)\n"
               "        context = (attn_weights @ values).transpose(1, 2)")
CAUSAL_DROPOUT = "        attn_weights = self.dropout(attn_weights)\n        return attn_weights @ values"
# the heads split straight to (b, num_heads, num_tokens, head_dim), without the transpose (its merge: MHA_MERGE)
MHA_SPLIT = ("queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)\n"
             "        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)\n"
             "        values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)\n")
MHA_SPLIT_WITHOUT_TRANSPOSE = MHA_SPLIT.replace("num_tokens, self.num_heads", "self.num_heads, num_tokens") \
    .replace(".transpose(1, 2)", "")
MHA_MERGE = ("context = (attn_weights @ values).transpose(1, 2)", "context = attn_weights @ values")
DIAGONAL = "the mask hides too much: the diagonal (each token itself) is masked too"
OUT_PROJ = "out_proj takes the merged heads, d_out values per token, not the inputs: make it nn.Linear(d_out, d_out)"
CAUSAL_BUFFER = 'self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))'


def buggy_copy(tmp_path, module, find, replace, folder=None):
    """A copy of the solutions with `find` replaced once in module (in `folder` when given: a second edit)."""
    if folder is None:
        folder = tmp_path / "submission"
        shutil.copytree(SOLUTIONS, folder)
    path = folder / f"{module}.py"
    text = path.read_text()
    assert text.count(find) == 1, f"the bug's anchor is not once in {module}.py: {find!r}"
    path.write_text(text.replace(find, replace))
    return folder


CASES = {
    "mha without 1/sqrt(head_dim)": (
        "mha", MHA_SCALE, "attn_scores",
        {"test_multi_head_attention_with_three_dims_per_head":
         "MultiHeadAttention(4, 6, 8, 0.0, num_heads=2) on (2, 5, 4), compared with its own layers is wrong: "
         "the scores are not scaled by 1/sqrt(head_dim)"}),
    "mha scaled by sqrt(d_out)": (
        "mha", MHA_SCALE, "attn_scores / self.d_out**0.5",
        {"test_multi_head_attention_book_example": "the scores are divided by sqrt(d_out)",
         "test_multi_head_attention_with_three_dims_per_head": "the scores are divided by sqrt(d_out)"}),
    # issue 34 item 5: the commonest MHA mistake, both halves of the head split without the transpose
    "mha split and merged without the transpose": (
        "mha", MHA_SPLIT, MHA_SPLIT_WITHOUT_TRANSPOSE,
        {name: f"{what} is wrong: the heads are split and merged without a transpose: view the projections as "
               f"(b, num_tokens, num_heads, head_dim) and .transpose(1, 2) them"
         for name, what in (("test_multi_head_attention_book_example",
                             "torch.manual_seed(123); MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)(batch)"),
                            ("test_multi_head_attention_with_three_dims_per_head",
                             "MultiHeadAttention(4, 6, 8, 0.0, num_heads=2) on (2, 5, 4), compared with its own layers"))}),
    "mha without the mask": (
        "mha", CAUSAL_MASK, "",
        {"test_multi_head_attention_book_example": "is wrong: no causal mask in the heads",
         "test_multi_head_attention_with_three_dims_per_head": "is wrong: no causal mask in the heads",
         # the eval-mode weights are wrong already: the dropout test names no mask of its own (issue 34 item 6)
         "test_multi_head_attention_drops_attention_weights_in_training_mode":
         "the eval-mode attention weights are already wrong (the module's other tests say how)"}),
    # issue 34 item 6: dropout on the masked scores (a right mask): NaN is not a mask's weight on the future
    "mha dropout on the scores before the softmax": (
        "mha", "attn_weights = torch.softmax(attn_scores / self.head_dim**0.5, dim=-1)\n"
               "        attn_weights = self.dropout(attn_weights)",
        "attn_weights = torch.softmax(self.dropout(attn_scores) / self.head_dim**0.5, dim=-1)",
        {"test_multi_head_attention_drops_attention_weights_in_training_mode":
         "MultiHeadAttention(6, 12, 6, dropout=0.5, num_heads=1) in training mode: with dropout on, some attention "
         "weights are NaN: dropout acts on the masked scores before the softmax (-inf times 0 is NaN); apply it to "
         "the attention weights, after the softmax"}),
    # issue 34 item 7: masked_fill's result thrown away, named as such (the public tests read the class's code)
    "causal masked_fill discarded": (
        "causal", CAUSAL_MASK, CAUSAL_MASK.replace("masked_fill_", "masked_fill"),
        {"test_causal_attention_book_example": "(batch) is wrong: the result of masked_fill is discarded: masked_fill "
                                               "returns a new tensor",
         "test_no_dropout_in_eval_mode": "is wrong: the result of masked_fill is discarded",
         "test_shorter_inputs_and_no_look_ahead": "(they must not look ahead) is wrong at (",
         "test_dropout_drops_attention_weights_in_training_mode": "the eval-mode attention weights are already wrong"}),
    "causal dropout still active in eval mode": (
        "causal", CAUSAL_DROPOUT, "        attn_weights = torch.nn.functional.dropout(attn_weights, self.dropout.p)\n"
                                  "        return attn_weights @ values",
        {"test_no_dropout_in_eval_mode": "in eval mode on batch is wrong at",
         "test_dropout_drops_attention_weights_in_training_mode":
         "after .eval() the same tokens get different outputs: dropout is still active in eval mode"}),
    "causal softmax over dim=1": (
        "causal", CAUSAL_SOFTMAX, CAUSAL_SOFTMAX.replace("dim=-1", "dim=1"),
        {"test_causal_attention_book_example": "(batch) is wrong: the softmax runs over the wrong dim",
         "test_no_dropout_in_eval_mode": "in eval mode on batch is wrong: the softmax runs over the wrong dim",
         "test_shorter_inputs_and_no_look_ahead": "(they must not look ahead) is wrong at ("}),
    "causal_mask from triu without diagonal=1": (
        "causal", "return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device), diagonal=1)",
        "return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device))",
        {**{f"test_causal_mask_is_true_above_the_diagonal[{n}]": f"causal_mask({n}): {DIAGONAL}" for n in (1, 4, 6)},
         "test_masked_attention_weights_book_example": f"masked_attention_weights(book scores, d_k=2) is wrong: "
                                                       f"{DIAGONAL}",
         "test_masked_attention_weights_of_a_batch_leave_the_scores_as_they_were":
         f"masked_attention_weights(a batch of scores (2, 6, 6), d_k=2) is wrong: {DIAGONAL}"}),
    "causal dropout on the scores, before the mask and softmax": (
        "causal", CAUSAL_DROPOUT + "\n", "        return attn_weights @ values\n",
        # and dropout on the scores before the mask: see test_a_common_bug_fails_locally_naming_the_misconception
        {"test_dropout_drops_attention_weights_in_training_mode":
         "CausalAttention(6, 12, 6, dropout=0.5) in training mode: with dropout on, every row of attention "
         "weights still sums to 1: dropout acts before the softmax"}),
    "causal dropout on the context vectors": (
        "causal", CAUSAL_DROPOUT, "        return self.dropout(attn_weights @ values)",
        {"test_dropout_drops_attention_weights_in_training_mode": "dropout acts on the values or on the context vectors"}),
    "mha dropout on the context vectors": (
        "mha", MHA_DROPOUT, "context = (self.dropout(attn_weights @ values)).transpose(1, 2)",
        {"test_multi_head_attention_drops_attention_weights_in_training_mode":
         "dropout acts on the values or on the context vectors"}),
    "causal without dropout": (
        "causal", CAUSAL_DROPOUT, "        return attn_weights @ values",
        {"test_dropout_drops_attention_weights_in_training_mode": "dropout is never applied"}),
    # shape errors, named as the mistakes they are (not a traceback into the student's correct v1)
    "Exercise 3.1 without .T (the book's answer)": (
        "weight_transfer", "sa_v1.W_query.copy_(sa_v2.W_query.weight.T)",
        "sa_v1.W_query = torch.nn.Parameter(sa_v2.W_query.weight)",
        {name: "transfer_v2_to_v1(sa_v2, sa_v1): after the transfer sa_v1.W_query has shape (2, 3), expected "
               "(3, 2): nn.Linear keeps its weight as (d_out, d_in)"
         for name in ("test_book_example_after_the_transfer", "test_outputs_agree_on_other_inputs_and_sa_v2_is_untouched")}),
    "Exercise 3.1 copying without .T": (
        "weight_transfer", "sa_v1.W_key.copy_(sa_v2.W_key.weight.T)", "sa_v1.W_key.copy_(sa_v2.W_key.weight)",
        {name: "transfer_v2_to_v1(sa_v2, sa_v1) raised RuntimeError (The size of tensor a (2) must match the size "
               "of tensor b (3) at non-singleton dimension 1): nn.Linear keeps its weight as (d_out, d_in)"
         for name in ("test_book_example_after_the_transfer", "test_outputs_agree_on_other_inputs_and_sa_v2_is_untouched")}),
    "mha with head_dim = d_out": (
        "mha", "self.head_dim = d_out // num_heads", "self.head_dim = d_out",
        {name: "raised RuntimeError (shape '[2, 6, 2, 2]' is invalid for input of size 24): the projections do "
               "not split into num_heads heads: head_dim must be d_out // num_heads"
         for name in ("test_multi_head_attention_book_example",)}
        | {"test_multi_head_attention_shape": "raised RuntimeError (shape '[2, 5, 3, 6]' is invalid for input of size "
                                              "60): the projections do not split into num_heads heads",
           "test_multi_head_attention_with_three_dims_per_head": "the projections do not split into num_heads heads"}),
    # out_proj made like the projections (lane "real learners' code", 2026-11-29): was "the projections do not split
    # into num_heads heads" (the head split guessed) and, in the dropout test, torch's RuntimeError from the test's code
    "mha out_proj made from d_in": (
        "mha", "self.out_proj = nn.Linear(d_out, d_out)", "self.out_proj = nn.Linear(d_in, d_out)",
        {name: "raised RuntimeError (" for name in ("test_multi_head_attention_book_example",
                                                    "test_multi_head_attention_shape",
                                                    "test_multi_head_attention_with_three_dims_per_head",
                                                    "test_multi_head_attention_drops_attention_weights_in_training_mode")}),
    # the mask used whole (lane "real learners' code", 2026-11-29): was torch's RuntimeError alone
    "causal mask not sliced to num_tokens": (
        "causal", CAUSAL_MASK, CAUSAL_MASK.replace("[:num_tokens, :num_tokens]", ""),
        {"test_shorter_inputs_and_no_look_ahead": "CausalAttention(3, 2, context_length=6, 0.0) on 4 tokens raised "
                                                  "RuntimeError (The size of tensor a (4) must match the size of tensor "
                                                  "b (6) at non-singleton dimension 2): the mask is (context_length, "
                                                  "context_length): use its first num_tokens rows and columns"}),
    # NumPy's q @ k.T kept for a batch (2026-11-29): was NumPy's ValueError alone ("matmul: Input operand 1 has a
    # mismatch in its core dimension 0 ..."); multi_head's test, which calls the head too, still shows it as it is
    "NumPy k.T on a batch": (
        "numpy_attention", 'np.einsum("btm,bsm->bts", q, k)', "q @ k.T",
        {"test_attention_head_reproduces_self_attention_v1": "attention_head(inputs, seed-123 weights, causal=False) "
                                                             "raised ValueError (matmul: Input operand 1 has a mismatch",
         "test_causal_head_first_token_sees_only_itself": "causal=True) raised ValueError (matmul: Input operand 1 has "
                                                          "a mismatch in its core dimension 0",
         "test_multi_head_concatenates_then_projects": "ValueError: matmul: Input operand 1 has a mismatch"}),
    # the book's tril mask of ones used as the future mask in NumPy: the head's own test says so; multi_head, which
    # matches the student's own heads NaN for NaN, passes (it said "expected nan, got nan" before, 2026-11-29)
    "NumPy tril mask taken for the future": (
        "numpy_attention", "future = np.triu(np.ones((T, T), dtype=bool), k=1)",
        "future = np.tril(np.ones((T, T), dtype=bool))",
        {"test_causal_head_first_token_sees_only_itself": "the causal output of the first token (its own value vector) "
                                                          "is wrong at (0, "}),
    "scores of the embedding dimensions (inputs.T @ inputs)": (
        "simple_attention", "return inputs @ inputs.T", "return inputs.T @ inputs",
        {"test_attention_scores_of_all_token_pairs": "attention_scores(inputs) is wrong: these are the dot products "
                                                     "of the embedding dimensions with each other (inputs.T @ inputs",
         "test_context_vectors_of_all_tokens": "mat1 and mat2 shapes cannot be multiplied (3x3 and 6x3)"}),
    "NumPy softmax's sum without keepdims": (
        "numpy_attention", "return e / np.sum(e, axis=axis, keepdims=True)", "return e / np.sum(e, axis=axis)",
        # where the shapes do not broadcast, the error and the student's line; where they do (square scores), the
        # misconception
        {"test_softmax_sums_to_one_along_axis[-1]": "ValueError: operands could not be broadcast together with "
                                                    "shapes (3,4) (3,) \n  raised in numpy_attention.py, line ",
         "test_attention_head_reproduces_self_attention_v1": "is wrong: the softmax's maxima or sums lose their axis"}),
    "attention weights over dim 0": (
        "simple_attention", "return torch.softmax(scores, dim=-1)", "return torch.softmax(scores, dim=0)",
        {"test_attention_weights_rows_sum_to_one": "attention_weights(book scores) is wrong: the softmax runs over "
                                                   "the wrong dim (down each column)",
         "test_context_vectors_of_all_tokens": "context_vectors(inputs) is wrong: the softmax runs over the wrong dim"}),
    "v2 without scaling": (
        "self_attention_v2", "/ keys.shape[-1] ** 0.5", "",
        {"test_book_example_with_seed_789": "SelfAttention_v2(3, 2)(inputs) is wrong: the scores are not scaled: "
                                            "divide them by sqrt(d_k)"}),
    # bugs the grader took points for and every public test passed (2026-11-29): each now fails one test, named
    "context vector of a hard-wired query": (
        "simple_attention", "query = inputs[query_index]", "query = inputs[1]",
        {"test_context_vector_of_every_token": "context_vector(inputs, 0) is wrong: the context vector belongs to "
                                               "another token (query_index=1)"}),
    "masked weights by masked_fill_ on the caller's scores": (
        "causal", "masked = scores.masked_fill(", "masked = scores.masked_fill_(",
        {"test_masked_attention_weights_of_a_batch_leave_the_scores_as_they_were":
         "masked_attention_weights changed its input in place: use out-of-place operations"}),
    "causal weights detached": (
        "causal", "attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)",
        "attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1).detach()",
        {"test_gradients_reach_the_weights_and_float64_stays_float64":
         "CausalAttention(3, 2, 6, 0.0) on 6 tokens, then backward(): no gradient reached W_query.weight, W_key.weight: "
         "the forward pass is cut off from autograd"}),
    "wrapper heads in a plain list": (
        "mha", "self.heads = nn.ModuleList(", "self.heads = list(",
        {"test_wrapper_registers_its_heads": "MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2) has no parameters: "
                                             "PyTorch sees none of its heads"}),
    "Exercise 3.3 with 8 heads (the same parameter count)": (
        "exercises", "num_heads=12)", "num_heads=8)",
        {"test_exercise_3_3_twelve_heads_the_whole_context_and_no_dropout":
         "gpt2_small_attention(): it computes with num_heads=8, where GPT-2 small has 12 heads"}),
    "Exercise 3.3 with GPT-2's drop rate": (
        "exercises", "dropout=0.0, num_heads=12)", "dropout=0.1, num_heads=12)",
        {"test_exercise_3_3_twelve_heads_the_whole_context_and_no_dropout":
         "gpt2_small_attention(): it drops attention weights (nn.Dropout with p=0.1), where the exercise asks for "
         "dropout=0.0"}),
    "NumPy softmax shifted by the max of the whole array": (
        "numpy_attention", "shifted = z - np.max(z, axis=axis, keepdims=True)", "shifted = z - np.max(z)",
        {"test_softmax_leaves_its_input_and_takes_the_max_of_each_row":
         "softmax([[1000, 1001], [-1001, -1000]], axis=-1) is wrong: it subtracts the max of the whole array"}),
}


# a run of the public tests: (the bug's edits (module, find, replace), in order; the tests' -m marker;
# whether a skipped test's message counts)
DIAGONAL_RUN = ((("causal", CAUSAL_BUFFER, CAUSAL_BUFFER.replace("diagonal=1", "diagonal=0")),),
                "causal or mha or exercises", True)


# an mha.py built on causal.py's own functions, with causal_mask off by one (corpus mutant
# learner-causal-mask-off-by-one-used-by-mha): the grader keeps mha's 22 points
MHA_ON_CAUSAL_S_FUNCTIONS_RUN = (
    (("mha", "from causal import CausalAttention", "from causal import CausalAttention, causal_mask, masked_attention_weights"),
     ("mha", "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
             "        attn_weights = torch.softmax(attn_scores / self.head_dim**0.5, dim=-1)\n",
      "        attn_scores = attn_scores.masked_fill(causal_mask(num_tokens, x.device), -torch.inf)\n"
      "        attn_weights = masked_attention_weights(attn_scores, self.head_dim)\n"),
     ("causal", "dtype=torch.bool, device=device), diagonal=1)", "dtype=torch.bool, device=device), diagonal=0)")),
    "mha", True)


def case_run(case):
    """The run of the public tests that test_a_common_bug_fails_locally_naming_the_misconception reads for case."""
    module, find, replace, _ = CASES[case]
    edits = [(module, find, replace)]
    if case.startswith("causal dropout on the scores"):  # the dropout removed above goes onto the scores
        edits.append((module, CAUSAL_MASK, "        attn_scores = self.dropout(attn_scores)\n" + CAUSAL_MASK))
    if case == "mha split and merged without the transpose":  # and merged back by a plain view too
        edits.append((module, *MHA_MERGE))
    return tuple(edits), module, False


def notebook_run(case):
    """The run of the public tests that test_a_notebooks_check_cell_says_what_the_public_test_says reads for case."""
    edit = SAME_IN_THE_NOTEBOOK[case][0]
    return (edit,), edit[0], False

V1_SOFTMAX = "attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)"
# SelfAttention_v1's softmax down the columns: the transfer's tests wait for it
TRANSFER_ON_A_WRONG_V1_RUN = ((("self_attention_v1", V1_SOFTMAX, V1_SOFTMAX.replace("dim=-1", "dim=0")),),
                              "self_attention_v1 or weight_transfer", True)
# simple_attention's attention_weights over dim 0, called by SelfAttention_v1 (imported under another name) and by
# CausalAttention (through the module); CausalAttention inheriting an unscaled SelfAttention_v2
ON_SIMPLE_ATTENTION_RUN = (
    (("self_attention_v1", "import torch.nn as nn\n", "import torch.nn as nn\n\nfrom simple_attention import attention_weights as aw\n"),
     ("self_attention_v1", V1_SOFTMAX, "attn_weights = aw(attn_scores / keys.shape[-1] ** 0.5)"),
     ("causal", "import torch.nn as nn\n", "import torch.nn as nn\n\nimport simple_attention as sa\n"),
     ("causal", V1_SOFTMAX, "attn_weights = sa.attention_weights(attn_scores / keys.shape[-1] ** 0.5)"),
     ("simple_attention", "return torch.softmax(scores, dim=-1)", "return torch.softmax(scores, dim=0)")),
    "simple_attention or self_attention_v1 or causal", True)
ON_A_WRONG_V2_BASE_RUN = (
    (("causal", "import torch.nn as nn\n", "import torch.nn as nn\n\nfrom self_attention_v2 import SelfAttention_v2\n"),
     ("causal", "class CausalAttention(nn.Module):", "class CausalAttention(SelfAttention_v2):"),
     ("self_attention_v2", V1_SOFTMAX, "attn_weights = torch.softmax(attn_scores, dim=-1)")),
    "self_attention_v2 or causal", True)
# CausalAttention's forward switches gradients off for good; SelfAttention_v1's tests run after causal's
GRADIENTS_LEFT_OFF_RUN = ((("causal", "        b, num_tokens, d_in = x.shape\n",
                            "        torch.set_grad_enabled(False)\n        b, num_tokens, d_in = x.shape\n"),),
                          "causal or mha or self_attention_v1", False)  # the wrapper's test leaves them off
WAITING_RUNS = {"test_weight_transfer_waits_for_a_wrong_self_attention_v1": TRANSFER_ON_A_WRONG_V1_RUN,
                "test_attentions_wait_for_simple_attention_s_functions_they_call": ON_SIMPLE_ATTENTION_RUN,
                "test_a_causal_attention_that_inherits_a_wrong_v2_waits_for_it": ON_A_WRONG_V2_BASE_RUN,
                "test_gradients_left_off_by_one_part_fail_no_other_part_s_tests": GRADIENTS_LEFT_OFF_RUN}


def runs_of(item):
    """The runs of the public tests a test of this module reads (most read one: run_of)."""
    if item.originalname == "test_a_notebooks_check_cells_wait_as_the_public_tests_do":
        return (TRANSFER_ON_A_WRONG_V1_RUN, ON_SIMPLE_ATTENTION_RUN)
    return (run_of(item),)


def run_of(item):
    """The run of the public tests a test of this module reads."""
    if item.originalname == "test_one_mistake_in_causal_fails_only_causal_s_tests_without_tensor_dumps":
        return DIAGONAL_RUN
    if item.originalname == "test_an_mha_built_on_causal_s_functions_waits_for_them":
        return MHA_ON_CAUSAL_S_FUNCTIONS_RUN
    if item.originalname in WAITING_RUNS:
        return WAITING_RUNS[item.originalname]
    case = item.callspec.params["case"]
    return case_run(case) if item.originalname == "test_a_common_bug_fails_locally_naming_the_misconception" \
        else notebook_run(case)


@pytest.fixture(scope="module")
def public(request, tmp_path_factory):
    """Every run of the public tests this module's selected tests read (`-m quick` selects one), each
    on its own buggy copy of the solutions, in one process (tests/public_verdicts.py: pytest.main once
    per run, torch imported once; a student's own pytest is one such run): {run: (what pytest printed,
    {test: failure message or None}, the folder)}. A bug both kinds of test read is run once. The tests
    that write their folders themselves (OWN_RUNS) have theirs in the same process, keyed "test name:key"
    (issue 38 item 6: each started a process of its own, importing torch and pytest again)."""
    here = Path(__file__).resolve()
    selected = [item for item in request.session.items if item.path == here and "public" in item.fixturenames]
    runs = list(dict.fromkeys(run for item in selected if item.originalname not in OWN_RUNS for run in runs_of(item)))
    base = tmp_path_factory.mktemp("public")
    folders = {}
    for at, (edits, _, _) in enumerate(runs):
        folder = None
        for module, find, replace in edits:
            folder = buggy_copy(base / f"run{at}", module, find, replace, folder)
        folders[at] = folder
    asked_runs = {str(at): {"folder": str(folders[at]), "marker": marker, "skipped": skipped}
                  for at, (_, marker, skipped) in enumerate(runs)}
    own = {}
    for name in dict.fromkeys(item.originalname for item in selected if item.originalname in OWN_RUNS):
        for key, run in OWN_RUNS[name](base / name).items():
            own[f"{name}:{key}"] = run
    asked_runs.update(own)
    asked = base / "runs.json"
    asked.write_text(json.dumps(asked_runs))
    out = base / "out.json"
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "public_verdicts.py"), "--folders", str(asked), str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(out.read_text())
    read = {run: (found[str(at)]["output"], found[str(at)]["outcomes"], folders[at]) for at, run in enumerate(runs)}
    read.update({key: (found[key]["output"], found[key]["outcomes"], Path(run["folder"])) for key, run in own.items()})
    return read


@pytest.mark.quick
def test_one_mistake_in_causal_fails_only_causal_s_tests_without_tensor_dumps(public):
    """Issue 30 item 4: CausalAttention's mask hides the diagonal. Causal's own tests say so (none says
    "some weights of future tokens are not 0"); the wrapper's and Exercise 3.2's tests, which build on
    CausalAttention, wait for it (skipped, naming causal) instead of failing with numbers."""
    output, outcomes, _ = public[DIAGONAL_RUN]
    failed = {name: message for name, message in outcomes.items() if message is not None}
    own = {name: m for name, m in failed.items() if not m.startswith("skipped: ")}
    assert sorted(own) == ["test_causal_attention_book_example", "test_dropout_drops_attention_weights_in_training_mode",
                           "test_no_dropout_in_eval_mode"], output
    assert all(DIAGONAL in m for m in own.values()), own
    waiting = {name: m for name, m in failed.items() if m.startswith("skipped: not checked yet")}
    assert sorted(waiting) == ["test_exercise_3_2_passes_its_dropout_on", "test_exercise_3_2_two_dimensional_output",
                               "test_wrapper_book_example"], output
    assert all("builds on your CausalAttention" in m and "fix causal.py first" in m for m in waiting.values())
    assert "tensor(" not in output and "got\n" not in output, output


def test_an_mha_built_on_causal_s_functions_waits_for_them(public):
    """causal_mask off by one, used by MultiHeadAttention: the grader keeps mha's points (the function is the
    grader's in mha's checks), and the public tests of MultiHeadAttention agree: they wait for causal.py,
    naming the function, instead of failing mha; the wrapper's tests, which use no function of causal's, pass."""
    output, outcomes, _ = public[MHA_ON_CAUSAL_S_FUNCTIONS_RUN]
    waiting = {name: m for name, m in outcomes.items() if m is not None}
    assert sorted(waiting) == ["test_multi_head_attention_book_example",
                               "test_multi_head_attention_drops_attention_weights_in_training_mode",
                               "test_multi_head_attention_shape", "test_multi_head_attention_with_three_dims_per_head"], output
    assert all(m == "skipped: not checked yet: MultiHeadAttention uses your causal_mask from causal.py, which is not right "
                    "yet: fix causal.py first, its own tests say what is wrong" for m in waiting.values()), waiting
    assert outcomes["test_wrapper_book_example"] is None and outcomes["test_d_out_must_be_divisible_by_num_heads"] is None


def test_weight_transfer_waits_for_a_wrong_self_attention_v1(public):
    """SelfAttention_v1's softmax over dim 0: v1's book example fails, naming it; the transfer's two tests, which
    compare outputs of v1 after the transfer, wait for v1 (the grader grades the transfer with the course's v1)."""
    output, outcomes, _ = public[TRANSFER_ON_A_WRONG_V1_RUN]
    failed = {name: m for name, m in outcomes.items() if m is not None and not m.startswith("skipped: ")}
    assert sorted(failed) == ["test_book_example_with_seed_123"] and "wrong dim" in failed["test_book_example_with_seed_123"], output
    waiting = {name: m for name, m in outcomes.items() if m is not None and m.startswith("skipped: ")}
    assert waiting == dict.fromkeys(["test_book_example_after_the_transfer",
                                     "test_outputs_agree_on_other_inputs_and_sa_v2_is_untouched"],
                                    "skipped: not checked yet: transfer_v2_to_v1 builds on your SelfAttention_v1, which does "
                                    "not give the book's output yet (torch.manual_seed(123); SelfAttention_v1(3, 2)(inputs)): "
                                    "fix self_attention_v1.py first, its own tests say what is wrong"), output


def test_attentions_wait_for_simple_attention_s_functions_they_call(public):
    """attention_weights over dim 0, called by SelfAttention_v1 (imported as aw) and CausalAttention (as
    sa.attention_weights): simple_attention's test of it fails; the class tests of v1 and CausalAttention wait,
    naming the function; v1's scaling_statistics and causal's functions, which do not call it, are tested."""
    output, outcomes, _ = public[ON_SIMPLE_ATTENTION_RUN]
    failed = {name: m for name, m in outcomes.items() if m is not None and not m.startswith("skipped: ")}
    assert sorted(failed) == ["test_attention_weights_rows_sum_to_one", "test_context_vectors_of_all_tokens"], output
    waiting = {name: m for name, m in outcomes.items() if m is not None and m.startswith("skipped: ")}
    v1 = ["test_book_example_with_seed_123", "test_output_shape", "test_weights_are_three_d_in_by_d_out_parameters"]
    causal = ["test_causal_attention_book_example", "test_dropout_drops_attention_weights_in_training_mode",
              "test_gradients_reach_the_weights_and_float64_stays_float64", "test_no_dropout_in_eval_mode",
              "test_shorter_inputs_and_no_look_ahead"]
    assert sorted(waiting) == sorted(v1 + causal), output
    for name in v1 + causal:
        what = "SelfAttention_v1" if name in v1 else "CausalAttention"
        assert waiting[name] == (f"skipped: not checked yet: {what} uses your attention_weights from simple_attention.py, "
                                 "which is not right yet: fix simple_attention.py first, its own tests say what is wrong")
    assert outcomes["test_scaling_statistics_on_the_books_tokens"] is None
    assert outcomes["test_masked_attention_weights_book_example"] is None


def test_a_causal_attention_that_inherits_a_wrong_v2_waits_for_it(public):
    """CausalAttention(SelfAttention_v2) with v2's scores unscaled: v2's book example fails; CausalAttention's
    tests wait for SelfAttention_v2, naming its example; causal's functions are tested."""
    output, outcomes, _ = public[ON_A_WRONG_V2_BASE_RUN]
    failed = {name: m for name, m in outcomes.items() if m is not None and not m.startswith("skipped: ")}
    assert sorted(failed) == ["test_book_example_with_seed_789"], output
    waiting = {name: m for name, m in outcomes.items() if m is not None and m.startswith("skipped: ")}
    assert len(waiting) == 5 and set(waiting.values()) == {
        "skipped: not checked yet: CausalAttention builds on your SelfAttention_v2, which does not give the book's "
        "output yet (torch.manual_seed(789); SelfAttention_v2(3, 2)(inputs)): fix self_attention_v2.py first, its own "
        "tests say what is wrong"}, output
    assert outcomes["test_masked_attention_weights_book_example"] is None


def test_gradients_left_off_by_one_part_fail_no_other_part_s_tests(public):
    """CausalAttention's forward calls torch.set_grad_enabled(False) and leaves it so: causal's gradient test
    fails, naming it; SelfAttention_v1's tests, which run after causal's and mha's in the same pytest run (the
    wrapper's test calls CausalAttention outside torch.no_grad() and leaves gradients off), start with
    gradients on (the public conftest restores torch's defaults before each test) and pass."""
    output, outcomes, _ = public[GRADIENTS_LEFT_OFF_RUN]
    failed = {name: m for name, m in outcomes.items() if m is not None}
    assert "test_gradients_reach_the_weights_and_float64_stays_float64" in failed, output
    assert "switched gradients off" in failed["test_gradients_reach_the_weights_and_float64_stays_float64"]
    assert not {"test_weights_are_three_d_in_by_d_out_parameters", "test_book_example_with_seed_123",
                "test_output_shape", "test_scaling_statistics_on_the_books_tokens"} & set(failed), output


def test_only_what_a_class_calls_or_inherits_of_another_part_makes_it_wait(monkeypatch):
    """The public tests' reading of what a class or function uses of other parts (uses, in ch03_tools as in
    _diagnose.py): a function of causal.py or simple_attention.py it calls, imported under any name, through
    the module under any name, or inside a helper of its own module; a class of self_attention_v2.py it inherits.
    A buffer of its own named causal_mask (self.causal_mask) is not the function, a module's own functions are
    not another part's, and a helper of the student's in causal.py named like one of simple_attention's
    (causal.attention_weights) is causal's own code, not a function others are given (it made MultiHeadAttention's
    tests wait on a right causal.py)."""
    tools = types.ModuleType("ch03_tools")
    exec(compile(notebooks.support_text(), "ch03_tools.py", "exec"), tools.__dict__)
    parts = {}
    for name, code in (("causal", "def causal_mask(n): pass\ndef masked_attention_weights(s, d): pass\n"
                                  "def attention_weights(s, d): pass\n"),
                       ("simple_attention", "def attention_weights(s): pass\ndef softmax_naive(x): pass\n"),
                       ("self_attention_v2", "class SelfAttention_v2: pass\n")):
        parts[name] = types.ModuleType(name)
        exec(code, parts[name].__dict__)
        monkeypatch.setitem(sys.modules, name, parts[name])
    causal, simple, v2 = parts.values()
    namespace = {"__name__": "mha", "causal": causal, "sa": simple, "mask": causal.causal_mask,
                 "weights": simple.attention_weights, "Base": v2.SelfAttention_v2}
    exec("def helper(s):\n    return weights(s)\n"
         "class Imported:\n    def forward(self, s):\n        return sa.attention_weights(s.masked_fill(mask(3), 0))\n"
         "class Through:\n    def forward(self, s):\n        return [causal.causal_mask(n) for n in range(3)]\n"
         "class Own:\n    def forward(self, s):\n        return s.masked_fill(self.causal_mask[:3, :3], 0)\n"
         "class Helped:\n    @staticmethod\n    def forward(s):\n        return helper(s)\n"
         "class Inherits(Base):\n    pass\n"
         "class CausalsHelper:\n    def forward(self, s):\n        return causal.attention_weights(s, 2)\n", namespace)
    used = {name: tools.uses(namespace[name]) for name in ("Imported", "Through", "Own", "Helped", "Inherits",
                                                           "CausalsHelper")}
    assert used == {"Imported": [(simple, "attention_weights"), (causal, "causal_mask")],
                    "Through": [(causal, "causal_mask")], "Own": [], "Helped": [(simple, "attention_weights")],
                    "Inherits": [(v2, "SelfAttention_v2")], "CausalsHelper": []}
    assert tools.uses(causal.causal_mask) == [] and tools.uses(simple.softmax_naive) == []


@pytest.mark.parametrize("case", CASES)
def test_a_common_bug_fails_locally_naming_the_misconception(public, case):
    expected = CASES[case][3]
    output, outcomes, _ = public[case_run(case)]
    failed = {name: message for name, message in outcomes.items() if message is not None}
    assert sorted(failed) == sorted(expected), output
    for name, words in expected.items():
        assert words in failed[name], f"{name}: {failed[name]}"
    if case == "mha out_proj made from d_in":  # every one of them names out_proj, none guesses the head split
        assert all(OUT_PROJ in m and "do not split" not in m for m in failed.values()), failed
    if case == "NumPy k.T on a batch":  # the head's own tests name it
        assert [name for name, m in failed.items() if "k.T on a batch reverses every axis" in m] == [
            "test_attention_head_reproduces_self_attention_v1", "test_causal_head_first_token_sees_only_itself"], failed
    assert "Traceback" not in output and "load = <function" not in output, output
    assert "During handling" not in output, output


# ---------------------------------------------------------------- the notebooks say the same

V1_UNSCALED = ("self_attention_v1", "attn_scores / keys.shape[-1] ** 0.5", "attn_scores")
# (bug, notebook, {public test: the notebook's check cell of the same test})
SAME_IN_THE_NOTEBOOK = {
    "scores of the embedding dimensions": (CASES["scores of the embedding dimensions (inputs.T @ inputs)"][:3],
                                           "01_self_attention",
                                           {"test_attention_scores_of_all_token_pairs": "test_attention_scores"}),
    "attention weights over dim 0": (CASES["attention weights over dim 0"][:3], "01_self_attention",
                                     {"test_attention_weights_rows_sum_to_one": "test_attention_weights",
                                      "test_context_vectors_of_all_tokens": "test_context_vectors"}),
    "v1 without scaling": (V1_UNSCALED, "01_self_attention",
                           {"test_book_example_with_seed_123": "test_v1_book_example"}),
    "v2 without scaling": (CASES["v2 without scaling"][:3], "01_self_attention",
                           {"test_book_example_with_seed_789": "test_v2_book_example"}),
    "Exercise 3.1 without .T": (CASES["Exercise 3.1 without .T (the book's answer)"][:3], "01_self_attention",
                                {"test_book_example_after_the_transfer": "test_transfer_book_example",
                                 "test_outputs_agree_on_other_inputs_and_sa_v2_is_untouched":
                                 "test_transfer_other_inputs"}),
    "causal softmax over dim=1": (CASES["causal softmax over dim=1"][:3], "02_causal_and_multi_head",
                                  {"test_causal_attention_book_example": "test_causal_attention_book_example",
                                   "test_no_dropout_in_eval_mode": "test_no_dropout_in_eval_mode"}),
    "mha with head_dim = d_out": (CASES["mha with head_dim = d_out"][:3], "02_causal_and_multi_head",
                                  {"test_multi_head_attention_book_example": "test_mha_book_example",
                                   "test_multi_head_attention_shape": "test_mha_shape"}),
    "mha without 1/sqrt(head_dim)": (CASES["mha without 1/sqrt(head_dim)"][:3], "02_causal_and_multi_head",
                                     {"test_multi_head_attention_with_three_dims_per_head": "test_mha_head_dim_3"}),
    "causal weights detached": (CASES["causal weights detached"][:3], "02_causal_and_multi_head",
                                {"test_gradients_reach_the_weights_and_float64_stays_float64":
                                 "test_causal_gradients_and_float64"}),
    "NumPy softmax shifted by the max of the whole array": (
        CASES["NumPy softmax shifted by the max of the whole array"][:3], "03_attention_in_numpy",
        {"test_softmax_leaves_its_input_and_takes_the_max_of_each_row": "test_softmax_untouched_each_row"}),
}


def notebook_failures(folder, notebook, cell_ids, printed=None):
    """{cell id: the message its check cell fails with, or None}: the notebook's own check cells run
    with ch03_tools (as generated) on the modules of folder, as the notebook would after each publish.
    printed: a dict given to be filled with {cell id: what the cell printed}."""
    cells = {cell.get("id"): "".join(cell["source"]) for cell in
             json.loads((ROOT / "source" / "ch03" / f"{notebook}.ipynb").read_text())["cells"]}
    import torch  # noqa: F401  (torch and numpy load once per process: imported before the modules are saved,
    # they outlive the restore below, which would otherwise make a second call import numpy again)

    saved_modules, saved_path = dict(sys.modules), list(sys.meta_path)
    try:
        tools = types.ModuleType("ch03_tools")
        exec(compile(notebooks.support_text(), "ch03_tools.py", "exec"), tools.__dict__)
        for name in tools.CHAPTER_MODULES:  # in the notebooks' order: each imports only earlier ones
            spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
            sys.modules[name] = module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        found, namespace = {}, dict(tools.__dict__)  # one namespace, as in the notebook's kernel
        for cell_id in cell_ids:  # in the notebook's order
            out = io.StringIO()
            try:
                with contextlib.redirect_stdout(out):
                    exec(compile(cells[cell_id], cell_id, "exec"), namespace)
                found[cell_id] = None
            except AssertionError as e:
                found[cell_id] = str(e)
            if printed is not None:
                printed[cell_id] = out.getvalue()
        return found
    finally:
        sys.modules.clear()
        sys.modules.update(saved_modules)
        sys.meta_path[:] = saved_path


@pytest.mark.parametrize("case", SAME_IN_THE_NOTEBOOK)
def test_a_notebooks_check_cell_says_what_the_public_test_says(public, case):
    _, notebook, pairs = SAME_IN_THE_NOTEBOOK[case]
    output, outcomes, folder = public[notebook_run(case)]
    said = notebook_failures(folder, notebook, pairs.values())
    for test, cell_id in pairs.items():
        assert outcomes[test] is not None and " is wrong: " in outcomes[test] or "raised" in outcomes[test] \
            or ": after the transfer" in outcomes[test] or ", then backward(): " in outcomes[test], outcomes[test]
        assert said[cell_id] == outcomes[test], (cell_id, test)


def test_a_notebooks_check_cells_wait_as_the_public_tests_do(public):
    """The notebook's check cells of the transfer (on a v1 whose softmax runs over dim 0) and of v1 and
    CausalAttention (calling an attention_weights over dim 0) fail nothing and print the public tests' reason."""
    for run, notebook, cells in ((TRANSFER_ON_A_WRONG_V1_RUN, "01_self_attention",
                                  {"test_transfer_book_example": "test_book_example_after_the_transfer",
                                   "test_transfer_other_inputs": "test_outputs_agree_on_other_inputs_and_sa_v2_is_untouched"}),
                                 (ON_SIMPLE_ATTENTION_RUN, "01_self_attention",
                                  {"test_v1_book_example": "test_book_example_with_seed_123",
                                   "test_v1_output_shape": "test_output_shape"}),
                                 (ON_SIMPLE_ATTENTION_RUN, "02_causal_and_multi_head",
                                  {"test_causal_attention_book_example": "test_causal_attention_book_example",
                                   "test_no_look_ahead": "test_shorter_inputs_and_no_look_ahead"})):
        _, outcomes, folder = public[run]
        printed: dict = {}
        assert notebook_failures(folder, notebook, cells, printed) == dict.fromkeys(cells)
        for cell_id, test in cells.items():
            assert outcomes[test].startswith("skipped: not checked yet: ")
            assert printed[cell_id] == outcomes[test].removeprefix("skipped: ") + "\n", (cell_id, printed[cell_id])


# correct code the public tests failed while the grader gave it full marks, and a bug they passed (2026-11-29)
RIGHT_BUT_FAILED = ("mha-sdpa-reshape-assert", "learner-mha-raise-in-else-and-split-heads-helper", "demo-code-at-import")
OVERWRITTEN_MASK = {"learner-causal-mask-buffer-sliced-in-forward": "test_shorter_inputs_and_no_look_ahead",
                    "learner-mha-mask-buffer-sliced-in-forward": "test_multi_head_attention_shape"}


def book_assert_runs(base):
    """The runs test_the_book_s_assert_and_its_demo_lines_pass_and_an_overwritten_mask_is_named reads (`public`):
    each entry applied to a copy of the solutions and run with the public tests of its part, as
    tests/public_verdicts.py's verdicts() runs a corpus entry."""
    from autograder import selftest

    entries = {entry.id: entry for entry in selftest.corpus()}
    return {key: {"folder": str(selftest.apply(entries[key], base / key)), "marker": entries[key].part}
            for key in (*RIGHT_BUT_FAILED, *OVERWRITTEN_MASK)}


def test_the_book_s_assert_and_its_demo_lines_pass_and_an_overwritten_mask_is_named(public):
    """The public tests of the entries' own parts (in the module's one process, `public`):
    - MultiHeadAttention rejecting an indivisible d_out with the book's `assert d_out % num_heads == 0` (two
      variants) passes: the test wanted a ValueError only ("AssertionError: d_out must be divisible by
      num_heads"), where the grader accepts both;
    - causal.py and mha.py running the book's demo when imported (torch.manual_seed(123) and a forward) pass:
      Exercise 3.2's test imported exercises.py after its seed, and the demo's draws moved the wrapper's
      weights ("two_dim_wrapper(3, 6)(batch) is wrong at (0, 0, 1)"); the tests' import now puts the
      generators back;
    - a forward that replaces the mask buffer with its slice, in causal.py and in mha.py, fails one test each,
      naming it (both passed before: every test fed one module one length)."""
    from cause_ids import ids

    name = "test_the_book_s_assert_and_its_demo_lines_pass_and_an_overwritten_mask_is_named"
    failed = {entry: {test: message for test, message in public[f"{name}:{entry}"][1].items() if message is not None}
              for entry in (*RIGHT_BUT_FAILED, *OVERWRITTEN_MASK)}
    assert {entry: failed[entry] for entry in RIGHT_BUT_FAILED} == {entry: {} for entry in RIGHT_BUT_FAILED}
    for entry, test in OVERWRITTEN_MASK.items():
        assert list(failed[entry]) == [test], failed[entry]
        assert ids(failed[entry][test]) == {"mask-overwritten"}, failed[entry][test]


# correct variants whose module raises when imported (a demo line of the book's, a package the grader lacks):
# the grader skips the line with a note and gives full marks (autograder/inside/demo_lines.py)
RAISE_AT_IMPORT = {"learner-v1-book-demo-inputs-undefined": ("self_attention_v1.py, line 58", "NameError"),
                   "learner-causal-demo-shape-error": ("causal.py, line 76", "RuntimeError: mat1 and mat2"),
                   "learner-mha-demo-shares-lines-with-code": ("mha.py, line 89", "NameError"),
                   "learner-scipy-and-seaborn-imported-unused": ("numpy_attention.py, line 6: imports scipy", "")}
CAUSAL_END = "return attn_weights @ values\n        ### END SOLUTION\n"


def demo_line_runs(base):
    """The runs test_demo_lines_that_raise_at_import_pass_with_a_note_as_in_the_grader reads (`public`): the four
    entries' folders with all the public tests, and causal.py raising at its top level in two ways."""
    from autograder import selftest

    entries = {entry.id: entry for entry in selftest.corpus()}
    folders = {key: selftest.apply(entries[key], base / key) for key in RAISE_AT_IMPORT}
    own_raise = buggy_copy(base / "own-raise", "causal", CAUSAL_END,
                           CAUSAL_END + '\n\nraise RuntimeError("run this file as a script")\n')
    class_raises = buggy_copy(base / "class-raises", "causal", "class CausalAttention(nn.Module):",
                              "class CausalAttention(nn.Module):\n    size = undefined_size")
    return {**{key: {"folder": str(folder), "marker": ""} for key, folder in folders.items()},
            "own-raise": {"folder": str(own_raise), "marker": "causal"},
            "class-raises": {"folder": str(class_raises), "marker": "causal"}}


def test_demo_lines_that_raise_at_import_pass_with_a_note_as_in_the_grader(public):
    """The four correct variants whose module raises when imported got full marks from the grader and failed
    every public test of their modules ("causal.py could not be imported: RuntimeError: mat1 and mat2 shapes
    cannot be multiplied"). The public tests now import as the grader does: each passes, and the run ends with a
    note naming the line, what it raised and that `import` stops there. What the grader does not skip fails the
    import here too: a `raise` of the module's own and a class statement that raises."""
    name = "test_demo_lines_that_raise_at_import_pass_with_a_note_as_in_the_grader"
    found = {key.split(":", 1)[1]: {"output": output, "outcomes": outcomes} for key, (output, outcomes, _) in public.items()
             if isinstance(key, str) and key.startswith(f"{name}:")}
    for key, (where, raised) in RAISE_AT_IMPORT.items():
        failed = {test: message for test, message in found[key]["outcomes"].items() if message is not None}
        assert failed == {}, (key, failed)
        notes = [line for line in found[key]["output"].splitlines() if line.startswith("note: ")]
        assert any(where in note and raised in note for note in notes), (key, notes)
    module_notes = [n for key in RAISE_AT_IMPORT if key != "learner-scipy-and-seaborn-imported-unused"
                    for n in found[key]["output"].splitlines() if n.startswith("note: ")]
    assert module_notes and all("(no points lost)" in n and "stops there in Python" in n for n in module_notes)
    for key, error in (("own-raise", "RuntimeError: run this file as a script"),
                       ("class-raises", "NameError: name 'undefined_size' is not defined")):
        messages = [m for m in found[key]["outcomes"].values() if m is not None]
        assert messages and all(m == f"causal.py could not be imported: {error}" for m in messages), (key, messages)


# the tests whose runs write their folders themselves: test name -> function(folder) -> {key: run}, run in
# `public`'s one process with the others
OWN_RUNS = {"test_the_book_s_assert_and_its_demo_lines_pass_and_an_overwritten_mask_is_named": book_assert_runs,
            "test_demo_lines_that_raise_at_import_pass_with_a_note_as_in_the_grader": demo_line_runs}
