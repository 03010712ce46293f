"""Issue 12 item 4, the public side: the student's own pytest names the common mistakes.

Each case copies the reference solutions, puts one typical bug in, runs the public tests
(assignments/ch03/tests) on the copy and states which tests fail and what their message says:
the misconception in one message, without a traceback or pytest's fixture listing.
"""
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions" / "ch03"
PUBLIC_TESTS = ROOT / "assignments" / "ch03" / "tests"

MHA_SCALE = "attn_scores / self.head_dim**0.5"
CAUSAL_SOFTMAX = "torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)"
CAUSAL_MASK = "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
MHA_DROPOUT = ("attn_weights = self.dropout(attn_weights)\n"
               "        context = (attn_weights @ values).transpose(1, 2)")
CAUSAL_DROPOUT = "        attn_weights = self.dropout(attn_weights)\n        return attn_weights @ values"


def public_run(tmp_path, submission, marker):
    """Run the public tests of one module on `submission` -> (output, {test name: failure message or None})."""
    junit = tmp_path / "junit.xml"
    done = subprocess.run([sys.executable, "-m", "pytest", str(PUBLIC_TESTS), "-p", "no:cacheprovider", "-q",
                           "-m", marker, f"--submission={submission}", f"--junitxml={junit}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    outcomes = {}
    for case in ET.parse(junit).iter("testcase"):
        failures = [child.get("message", "") for child in case if child.tag in ("failure", "error")]
        outcomes[case.get("name")] = failures[0].removeprefix("Failed: ") if failures else None
    return done.stdout + done.stderr, outcomes


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
    "mha without the mask": (
        "mha", CAUSAL_MASK, "",
        {"test_multi_head_attention_book_example": "is wrong: no causal mask in the heads",
         "test_multi_head_attention_with_three_dims_per_head": "is wrong: no causal mask in the heads",
         "test_multi_head_attention_drops_attention_weights_in_training_mode":
         "some weights of future tokens are not 0: mask the scores"}),
    "causal softmax over dim=1": (
        "causal", CAUSAL_SOFTMAX, CAUSAL_SOFTMAX.replace("dim=-1", "dim=1"),
        {"test_causal_attention_book_example": "(batch) is wrong: the softmax runs over the wrong dim",
         "test_no_dropout_in_eval_mode": "in eval mode on batch is wrong: the softmax runs over the wrong dim",
         "test_shorter_inputs_and_no_look_ahead": "(they must not look ahead): expected"}),
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
    "v2 without scaling": (
        "self_attention_v2", "/ keys.shape[-1] ** 0.5", "",
        {"test_book_example_with_seed_789": "SelfAttention_v2(3, 2)(inputs) is wrong: the scores are not scaled: "
                                            "divide them by sqrt(d_k)"}),
}


@pytest.mark.parametrize("case", CASES)
def test_a_common_bug_fails_locally_naming_the_misconception(tmp_path, case):
    module, find, replace, expected = CASES[case]
    folder = buggy_copy(tmp_path, module, find, replace)
    if case.startswith("causal dropout on the scores"):  # the dropout removed above goes onto the scores
        buggy_copy(tmp_path, module, CAUSAL_MASK, "        attn_scores = self.dropout(attn_scores)\n" + CAUSAL_MASK,
                   folder)
    output, outcomes = public_run(tmp_path, folder, module)
    failed = {name: message for name, message in outcomes.items() if message is not None}
    assert sorted(failed) == sorted(expected), output
    for name, words in expected.items():
        assert words in failed[name], f"{name}: {failed[name]}"
    assert "Traceback" not in output and "load = <function" not in output, output


def test_the_solutions_pass_the_tests_that_diagnose(tmp_path):
    for marker in ("causal", "mha", "self_attention_v2"):
        output, outcomes = public_run(tmp_path, SOLUTIONS, marker)
        assert outcomes and all(message is None for message in outcomes.values()), output
