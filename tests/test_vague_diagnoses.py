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
from autograder.suites import source_mistakes

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
