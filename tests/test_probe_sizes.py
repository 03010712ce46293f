"""No probe or weight-reading check has two sizes equal where a mixup of those dimensions would go
unseen (the redteam lane's leftover 4): d_k == num_tokens let a CausalAttention scaled by
sqrt(num_tokens) pass the dependency probe (then mha's and the exercises' checks used it as right) and
causal_weights_through_identity_values; num_heads == head_dim let a MultiHeadAttention scaled by
sqrt(num_heads) pass the probe. Each test states the verdict or score it expects; each fails before."""
import types

import pytest
from part_edits import failed, grade, submission
from rubric_points import CHECK, PART

from autograder import runner
from autograder.suites import dependencies

CAUSAL_BY_TOKENS = ("causal", "attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)",
                    "attn_weights = torch.softmax(attn_scores / num_tokens ** 0.5, dim=-1)")
MHA_BY_HEADS = ("mha", "attn_weights = torch.softmax(attn_scores / self.head_dim**0.5, dim=-1)",
                "attn_weights = torch.softmax(attn_scores / self.num_heads**0.5, dim=-1)")


def probed(engine, folder, module):
    """dependencies.probe's verdict on module, run in a child of the submission (a part of no dependencies: the
    probe meets the student's own module)."""
    seen = []

    def test_probe(student):
        seen.append(dependencies.probe(student, module))

    limits = types.SimpleNamespace(timeout=20, memory_mb=1024)
    runner.run_part(engine.sandbox, str(folder), "probe", [("probe", test_probe)], limits, runner.default_fixtures())
    return seen


@pytest.mark.quick
def test_the_probes_sizes_are_all_different():
    for probe, sizes in dependencies.SIZES_APART.items():
        assert len(set(sizes)) == len(sizes), probe
    for probe in ("causal", "wrapper", "mha"):
        x, _ = dependencies.expected()[probe]
        assert tuple(x.shape) == dependencies.SIZES_APART[probe][:3], probe


def test_the_probes_tell_a_scale_by_a_size_that_equals_d_k_there(engine, tmp_path):
    assert probed(engine, submission(tmp_path / "right"), "causal") == [""]
    assert probed(engine, submission(tmp_path / "causal", CAUSAL_BY_TOKENS), "causal") == ["wrong"]
    assert probed(engine, submission(tmp_path / "mha", MHA_BY_HEADS), "mha") == ["wrong"]


def test_the_weights_read_through_identity_values_tell_num_tokens_from_d_k(engine, tmp_path):
    result = grade(engine, submission(tmp_path, CAUSAL_BY_TOKENS), ["causal"])
    wrong = failed(result, "causal")
    assert "causal_weights_through_identity_values" in wrong, wrong
    assert result.parts["causal"].score <= PART["causal"] - CHECK["causal", "causal_weights_through_identity_values"]
