"""Issue 34 item 7: diagnoses that stayed vague, made precise; graded for real on learner-like edits.

- masked_fill_discarded: `attn_scores.masked_fill(mask, -torch.inf)` as a statement (the learner meant
  masked_fill_): the numbers are those of no mask at all, and the grader's own reading of causal.py
  (suites/source_mistakes.py) shows why. Every failed check says "the result of masked_fill is
  discarded", not "no causal mask is applied": one item, -16, causal 6 / 22 (the score no mask gets).
- notebook_global: a module converted from a notebook keeps the notebook's `inputs`, `batch` and
  `context_length` at its top, and forward slices the mask with the global context_length instead
  of num_tokens: right on the book's batch, an error on shorter inputs. Named as a module variable
  read in a method, not as a bare exception: one item, -13, causal 9 / 22.
- stubs: an unfinished function is one item (its visible check and its hidden check say the same:
  "not implemented yet: simple_attention.softmax_naive"), not two; simple_attention 0 / 10 in 5 items.
- nbgrader: the feedback of a notebook names the solution cell where the grader's words name a
  module file the notebook student does not have.
"""
import pytest
from part_edits import grade, submission

from autograder.grading import PartScore, ScoredCheck
from autograder.reports import common, notebook_cells
from autograder.suites import misconceptions, source_mistakes, test_numpy_attention

MASK = "attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)"
NOTEBOOK_TOP = ("inputs = torch.tensor([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],\n"
                "                       [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]])\n"
                "batch = torch.stack((inputs, inputs), dim=0)\n"
                "context_length = batch.shape[1]\n\n\n")


def items(result, part):
    """[(points, lead, what it is about)] of the part's items of "what to fix"."""
    return [(i.points, i.message, i.label) for i in common.what_to_fix(result.checks, result.parts) if i.part == part]


def test_a_discarded_masked_fill_is_named_as_such(engine, tmp_path):
    folder = submission(tmp_path, ("causal", MASK, MASK.replace("masked_fill_", "masked_fill")))
    result = grade(engine, folder, ["causal"])
    assert result.parts["causal"].score == 6 and result.parts["causal"].diagnosis == \
        source_mistakes.MASKED_FILL_RESULT_DISCARDED
    assert items(result, "causal") == [(16, source_mistakes.MASKED_FILL_RESULT_DISCARDED,
                                        "causal_attention_book_example and 9 hidden checks")]
    assert not any("no causal mask" in c.message for c in result.checks)


def test_the_same_bug_with_masked_fill_underscore_missing_in_mha(engine, tmp_path):
    folder = submission(tmp_path, ("mha", MASK, MASK.replace("masked_fill_", "masked_fill")))
    result = grade(engine, folder, ["mha"])
    failed = [c for c in result.checks if not c.passed and c.part == "mha"]
    assert result.parts["mha"].score < 22 and result.parts["mha"].diagnosis == source_mistakes.MASKED_FILL_RESULT_DISCARDED
    assert len(items(result, "mha")) == 1 and not any("no causal mask" in c.message for c in failed)


def test_a_notebook_global_read_in_forward_is_named(engine, tmp_path):
    folder = submission(tmp_path, ("causal", "class CausalAttention(nn.Module):",
                                   NOTEBOOK_TOP + "class CausalAttention(nn.Module):"),
                        ("causal", MASK, MASK.replace("num_tokens", "context_length")))
    result = grade(engine, folder, ["causal"])
    assert result.parts["causal"].score == 9
    assert result.parts["causal"].diagnosis == source_mistakes.GLOBAL_READ
    assert items(result, "causal") == [(13, source_mistakes.GLOBAL_READ, "6 hidden checks")]


def test_an_unfinished_function_is_one_item(engine):
    from autograder import PROJECT_ROOT

    result = grade(engine, PROJECT_ROOT / "assignments" / "ch03", ["simple_attention"])  # the released stubs
    found = items(result, "simple_attention")
    assert result.parts["simple_attention"].score == 0
    assert [message for _, message, _ in found] == [
        f"not implemented yet: simple_attention.{name}" for name in
        ("softmax_naive", "context_vector", "attention_scores", "attention_weights", "context_vectors")]
    assert sum(points for points, _, _ in found) == 10


@pytest.mark.quick
@pytest.mark.parametrize("source, reads", [
    ("x = 1\nclass A:\n    def f(self, y):\n        return y + x\n", True),
    ("x = 1\nclass A:\n    def f(self, x):\n        return x\n", False),            # its own argument
    ("X = 1\nclass A:\n    def f(self, y):\n        return y + X\n", False),        # a constant
    ("x = 1\ndef demo():\n    print(x)\n", False),                                 # a demo without arguments
    ("x = 1\ndef f(y):\n    x = y\n    return x\n", False),                        # a local of the same name
    ("import torch\nclass A:\n    def f(self, y):\n        return torch.relu(y)\n", False),
])
def test_what_counts_as_a_module_variable_read(source, reads):
    assert source_mistakes.reads_module_variable(source) is reads


@pytest.mark.quick
def test_nbgrader_feedback_names_the_solution_cell_not_a_file():
    checks = [ScoredCheck("causal", "causal_attention_book_example", False, 0.0, 2.0, "visible",
                          "torch.manual_seed(123); CausalAttention(3, 2, 6, 0.0)(batch): your code raised RuntimeError "
                          "(in causal.py)"),
              ScoredCheck("mha", "mha_rejects_indivisible_d_out", False, 0.0, 2.0, "visible",
                          "MultiHeadAttention(3, 5, 6, 0.0, num_heads=2) was created although d_out=5 is not divisible "
                          "by num_heads=2: your assert (mha.py, line 51) is written assert (condition, \"message\")")]
    parts = {part: PartScore(0.0, 2.0) for part in ("causal", "mha")}
    lines = "\n".join(notebook_cells.what_to_fix_lines(checks, parts))
    assert ".py" not in lines, lines
    assert "(in your solution cell 'causal')" in lines and "your assert (your solution cell 'mha', line 51)" in lines


# ---------------------------------------------------------------- learners' mistakes torch names in its own words
# (2026-11-29, lane "real learners' code"): each was "your code raised <Error>", "the output is wrong" or a guess
# naming another mistake; graded for real, every failed check of the part names the mistake the code makes

COPY = ("with torch.no_grad():\n"
        "        sa_v1.W_query.copy_(sa_v2.W_query.weight.T)\n"
        "        sa_v1.W_key.copy_(sa_v2.W_key.weight.T)\n"
        "        sa_v1.W_value.copy_(sa_v2.W_value.weight.T)")
CAUSAL_ATTENTION = ("attn_scores = queries @ keys.transpose(1, 2)  # (b, num_tokens, num_tokens)\n"
                    "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
                    "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
                    "        attn_weights = self.dropout(attn_weights)\n"
                    "        return attn_weights @ values")
CAUSAL_SDPA_SCALED = ("queries = queries / keys.shape[-1] ** 0.5\n"
                      "        return torch.nn.functional.scaled_dot_product_attention(\n"
                      "            queries, keys, values, is_causal=True, dropout_p=self.dropout.p if self.training else 0.0)")


def every_failed_says(result, part, said):
    """Every failed check of the part says it, but a structure check (which names the specification instead)."""
    failed = [c.message for c in result.checks if not c.passed and c.part == part and not c.name.endswith("_structure")]
    return bool(failed) and all(said in message for message in failed if not message.startswith("passes here"))


@pytest.mark.parametrize("edits, part, score, cause", [
    # the class's first line left out: torch's "cannot assign module before Module.__init__() call"
    pytest.param([("causal", "        super().__init__()\n        ### BEGIN SOLUTION\n        self.d_out = d_out",
                   "        ### BEGIN SOLUTION\n        self.d_out = d_out")], "causal", 4, misconceptions.NO_SUPER_INIT,
                 marks=pytest.mark.quick),
    # Exercise 3.1: copy_ into the parameters outside torch.no_grad() (autograd refuses an in-place change of a leaf)
    ([("weight_transfer", COPY, COPY.replace("with torch.no_grad():\n        ", "").replace("\n        ", "\n    "))],
     "weight_transfer", 0, misconceptions.LEAF_IN_PLACE),
    # Exercise 3.1: the transposed weight assigned as it is, a plain tensor where v1 holds an nn.Parameter
    ([("weight_transfer", COPY, "sa_v1.W_query = sa_v2.W_query.weight.T")], "weight_transfer", 0,
     misconceptions.PARAMETER_REPLACED),
    # scaled_dot_product_attention with the queries scaled by hand as well (it scales them itself): was "divided by d_k"
    ([("causal", CAUSAL_ATTENTION, CAUSAL_SDPA_SCALED)], "causal", 6, source_mistakes.SCALED_TWICE),
    # v2's keys.transpose(0, 1) carried into a batch: was "your code raised RuntimeError" and the unsliced mask guessed
    ([("causal", "queries @ keys.transpose(1, 2)", "queries @ keys.transpose(0, 1)")], "causal", 4,
     source_mistakes.BATCH_SWAPPED),
    # out_proj made like the projections, from d_in: was the unsliced mask or the head split guessed
    ([("mha", "self.out_proj = nn.Linear(d_out, d_out)", "self.out_proj = nn.Linear(d_in, d_out)")], "mha", 5,
     source_mistakes.OUT_PROJ_FROM_D_IN),
    # the book's torch.manual_seed(123) moved into __init__: was "... differs from the expected output: ..."
    ([("self_attention_v1", "        self.W_query = nn.Parameter",
       "        torch.manual_seed(123)\n        self.W_query = nn.Parameter")], "self_attention_v1", 6,
     source_mistakes.SEEDED_IN_INIT),
    # nn.Linear's x @ weight.T carried to v1's own matrices: was "your code raised RuntimeError"
    ([("self_attention_v1", "queries = x @ self.W_query  #", "queries = x @ self.W_query.T  #")], "self_attention_v1",
     1, source_mistakes.MATRIX_TRANSPOSED),
    # NumPy's k.T on a batch (the notes' 2-D habit): was "your code raised an exception" in every check
    ([("numpy_attention", 'np.einsum("btm,bsm->bts", q, k)', "q @ k.T")], "numpy_attention", 5,
     source_mistakes.ARRAYS_DOT_T),
    # the biases counted in block_param_count: was "is wrong. Count W_q, ..."
    ([("numpy_attention", "return 4 * d_model * d_model + 2 * d_model * d_ff",
       "return 4 * (d_model * d_model + d_model) + 2 * d_model * d_ff + d_ff + d_model")], "numpy_attention", 8,
     test_numpy_attention.BIASES_COUNTED),
])
def test_a_learners_mistake_is_named_in_every_failed_check(engine, tmp_path, edits, part, score, cause):
    result = grade(engine, submission(tmp_path, *edits), [part])
    assert (result.parts[part].score, result.parts[part].diagnosis) == (score, cause)
    assert every_failed_says(result, part, cause), [c.message for c in result.checks if not c.passed]


def test_scaled_twice_is_said_only_where_scaled_dot_product_attention_scales(engine, tmp_path):
    """The numbers of scores divided by d_k are the same with or without SDPA: "scaled twice" only where the module
    calls it (MultiHeadAttention too: its scores divided by head_dim were "the output is wrong" before)."""
    mha_sdpa = ("attn_scores = queries @ keys.transpose(2, 3)  # (b, num_heads, num_tokens, num_tokens)\n"
                "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
                "        attn_weights = torch.softmax(attn_scores / self.head_dim**0.5, dim=-1)\n"
                "        attn_weights = self.dropout(attn_weights)\n"
                "        context = (attn_weights @ values).transpose(1, 2)",
                "context = torch.nn.functional.scaled_dot_product_attention(\n"
                "            queries / self.head_dim ** 0.5, keys, values, is_causal=True,\n"
                "            dropout_p=self.dropout.p if self.training else 0.0).transpose(1, 2)")
    by_head_dim = ("attn_scores / self.head_dim**0.5", "attn_scores / self.head_dim")
    sdpa = grade(engine, submission(tmp_path / "sdpa", ("mha", *mha_sdpa)), ["mha"])
    plain = grade(engine, submission(tmp_path / "plain", ("mha", *by_head_dim)), ["mha"])
    assert (sdpa.parts["mha"].score, sdpa.parts["mha"].diagnosis) == (5, source_mistakes.SCALED_TWICE)
    assert (plain.parts["mha"].score, plain.parts["mha"].diagnosis) == (5, misconceptions.BY_HEAD_DIM)


@pytest.mark.quick
@pytest.mark.parametrize("source, finds", [
    ("class A(nn.Module):\n    def __init__(self, d_in, d_out):\n        super().__init__()\n"
     "        torch.manual_seed(123)\n", {"seeds_in_init"}),
    ("torch.manual_seed(123)\nclass A(nn.Module):\n    def forward(self, x):\n        return x\n", set()),  # a demo's
    ("class MultiHeadAttention(nn.Module):\n    def __init__(self, d_in, d_out, n):\n"
     "        self.out_proj = nn.Linear(d_in, d_out)\n", {"out_proj_from_d_in"}),
    ("class MultiHeadAttention(nn.Module):\n    def __init__(self, d_in, d_out, n):\n"
     "        self.out_proj = nn.Linear(d_out, d_out)\n", set()),
    ("import torch.nn.functional as F\ndef f(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v)\n",
     {"calls_sdpa"}),
    ("from torch.nn.functional import scaled_dot_product_attention as sdpa\n", set()),  # imported, never called
])
def test_what_the_reading_finds(source, finds):
    found = {name for name in ("seeds_in_init", "out_proj_from_d_in", "calls_sdpa")
             if getattr(source_mistakes, name)(source)}
    assert found == finds


@pytest.mark.quick
def test_arrays_dot_T_is_the_keys_of_the_raising_line_only():
    source = ("import numpy as np\n\n\ndef head(x, wq, wk):\n    q, k = x @ wq, x @ wk\n    return q @ k.T\n\n\n"
              "def project(out, wo):\n    return out @ wo.T\n")
    said = [source_mistakes.arrays_dot_T(source, kind, where, "numpy_attention") for kind, where in (
        ("ValueError", "numpy_attention.py, line 6, in head"),      # q @ k.T: a variable the function computed
        ("ValueError", "numpy_attention.py, line 10, in project"),  # out @ wo.T: an argument, a 2-D weight
        ("ValueError", "numpy_attention.py, line 5, in head"),      # another line
        ("TypeError", "numpy_attention.py, line 6, in head"),       # not NumPy's shape error
        ("ValueError", "other.py, line 6, in head"))]               # another file
    assert said == [source_mistakes.ARRAYS_DOT_T, "", "", "", ""]
