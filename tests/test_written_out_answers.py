"""A visible check whose inputs a student reads in its messages earns nothing for answers written out
for those inputs (the redteam lane's leftover 5): causal_mask_marks_the_future requires
causal_mask_unseen_sizes (grading.yml), which asks for sizes drawn from the run's secret."""
import pytest
from part_edits import failed, grade, submission
from rubric_points import CHECK, PART

from autograder import rubric

WRITTEN_OUT = ("causal", "return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device), "
               "diagonal=1)",
               "return {1: torch.tensor([[False]]), 4: torch.ones(4, 4, dtype=torch.bool).triu(1), "
               "7: torch.ones(7, 7, dtype=torch.bool).triu(1)}.get(num_tokens, "
               "torch.zeros(num_tokens, num_tokens, dtype=torch.bool))")


@pytest.mark.quick
def test_the_visible_mask_check_requires_unseen_sizes():
    checks = rubric.load(rubric.Path(__file__).resolve().parents[1] / "grading.yml").parts["causal"].checks
    assert "causal_mask_unseen_sizes" in checks["causal_mask_marks_the_future"].requires
    assert checks["causal_mask_unseen_sizes"].visibility == "hidden"


def test_a_mask_written_out_for_the_visible_sizes_earns_nothing(engine, tmp_path):
    """Before: causal_mask_marks_the_future kept its point. (masked_attention_weights uses causal_mask: its
    checks on other sizes fail too; CausalAttention's, which use the buffer, keep theirs.)"""
    result = grade(engine, submission(tmp_path, WRITTEN_OUT), ["causal"])
    wrong = failed(result, "causal")
    assert {"causal_mask_marks_the_future", "causal_mask_unseen_sizes"} <= set(wrong), wrong
    assert not {name for name in wrong if "attention" in name}, wrong
    assert "True exactly above the diagonal" in wrong["causal_mask_unseen_sizes"]
    lost = sum(CHECK["causal", name] for name in wrong)
    assert result.parts["causal"].score == PART["causal"] - lost
    assert lost >= CHECK["causal", "causal_mask_marks_the_future"] > 0
