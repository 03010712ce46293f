"""Issue 21 item 2: one bug, one explanation. A part's failed checks name the cause that explains all
of them: keys computed with W_query are not blamed on dropout, heads split or merged without the
transpose are not blamed on the mask; where two causes compete, the one named by more checks is
the part's diagnosis, or both are given. Submissions written here, graded through the real engine."""
import pytest
import torch
from part_edits import grade, scores, submission

from autograder import grading, runner
from autograder.suites.misconceptions import named_mistake


def failures(result, part):
    """The diagnoses of the part's failed checks (a check gated by grading.yml's `requires` says so instead)."""
    return [c.message for c in result.checks if not c.passed and c.part == part and c.message != grading.GATED]


@pytest.mark.parametrize("module, find, replace, cause", [  # the quick subset: the first case (marked in the file)
    pytest.param("mha", "keys = self.W_key(x)", "keys = self.W_query(x)", "keys are computed with the query weights",
                 marks=pytest.mark.quick),
    ("causal", "keys = self.W_key(x)", "keys = self.W_query(x)", "keys are computed with the query weights"),
    ("mha", ".view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)",
     ".reshape(b, self.num_heads, num_tokens, self.head_dim)", "split without the transpose"),
    ("mha", "context = (attn_weights @ values).transpose(1, 2)", "context = (attn_weights @ values)",
     "merged without the transpose"),
], ids=["mha-keys-from-w-query", "causal-keys-from-w-query", "mha-split-without-transpose",
        "mha-merge-without-transpose"])
def test_every_failed_check_names_the_one_cause(engine, tmp_path, module, find, replace, cause):
    result = grade(engine, submission(tmp_path, (module, find, replace)), [module])
    messages = failures(result, module)
    assert scores(result)[module] < 22 and messages
    assert all(cause in m for m in messages), [m for m in messages if cause not in m]
    assert cause in result.parts[module].diagnosis
    assert not any("dropout must do nothing" in m or "mask is missing" in m for m in messages)


def test_dropout_is_named_only_when_dropout_is_the_cause(engine, tmp_path):
    """Dropout's scale applied in eval mode too (times 1 - p): right with dropout=0.0, wrong with 0.5."""
    folder = submission(tmp_path, ("causal", "attn_weights = self.dropout(attn_weights)",
                                   "attn_weights = self.dropout(attn_weights) * (1 - self.dropout.p)"))
    result = grade(engine, folder, ["causal"])
    eval_check = next(c for c in result.checks if c.name == "causal_dropout_off_in_eval_mode")
    assert not eval_check.passed and "dropout must do nothing" in eval_check.message


@pytest.mark.quick
def test_two_mistakes_with_the_same_numbers_are_both_named():
    want, same = torch.zeros(3), torch.ones(3)
    why = named_mistake(same, want, [(same, "cause A"), (same.clone(), "cause B"), (want + 2, "cause C")])
    assert "cause A" in why and "cause B" in why and "cause C" not in why


@pytest.mark.quick
def test_the_cause_named_by_most_failed_checks_is_the_part_s_diagnosis():
    run = runner.PartRun("mha", [runner.CheckResult("mha", "a", False, "x is wrong: A", cause="A"),
                                 runner.CheckResult("mha", "b", False, "y is wrong: A", cause="A"),
                                 runner.CheckResult("mha", "c", False, "z is wrong: B", cause="B"),
                                 runner.CheckResult("mha", "d", False, "w is wrong", unexplained=True),
                                 runner.CheckResult("mha", "e", False, "no buffer named mask")])
    runner.part_diagnosis(run)
    assert run.diagnosis == "A"
    assert run.results[3].message.endswith("other failed checks: A)")
    assert run.results[4].message == "no buffer named mask" and run.results[2].message == "z is wrong: B"
    tie = runner.PartRun("mha", [runner.CheckResult("mha", "a", False, "", cause="A"),
                                 runner.CheckResult("mha", "b", False, "", cause="B")])
    runner.part_diagnosis(tie)
    assert tie.diagnosis == "one of: A; or B"


def test_a_mistake_with_large_numbers_is_named_whatever_the_draw():
    """Scores divided by their sum (no exp) where the sum is near 0: a float32 answer still matches the
    mistake computed in float64, relative to its size."""
    x = torch.tensor([3.1, -2.6, 0.25, -0.747], dtype=torch.float64)
    got = x.float() / x.float().sum()
    assert float(got.abs().max()) > 300
    assert named_mistake(got, torch.softmax(x, 0), [(x / x.sum(), "no exp")], atol=1e-5) == "no exp"


def test_a_cause_named_alone_wins_over_several_possibilities():
    """A check that can only say "one of these mistakes" (the same numbers) does not split the vote: the
    cause another check names alone is the part's diagnosis, even named by fewer checks."""
    from autograder.suites.expect import SEVERAL

    several = SEVERAL + "A; or B"
    run = runner.PartRun("simple_attention", [
        runner.CheckResult("simple_attention", "a", False, "", cause="A"),
        runner.CheckResult("simple_attention", "b", False, "", cause=several),
        runner.CheckResult("simple_attention", "c", False, "", cause=several)])
    runner.part_diagnosis(run)
    assert run.diagnosis == "A"
    only = runner.PartRun("simple_attention", [runner.CheckResult("simple_attention", "b", False, "", cause=several)])
    runner.part_diagnosis(only)
    assert only.diagnosis == several


# ---------------------------------------------------------------- issue 34 item 4: the constructor's order

MHA_INIT = ('def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):\n'
            '        """Raise ValueError')
ORDER = ("MultiHeadAttention.__init__ takes ({}) where the specification is (d_in, d_out, context_length, dropout, "
         "num_heads, qkv_bias), so a call in the specified order breaks: keep the specified order")
KEYS_FROM_QUERY = "the keys are computed with the query weights (W_query): compute them with W_key"


def what_to_fix(result, part):
    from autograder.reports import common

    return [(i.points, i.message, i.label) for i in common.what_to_fix(result.checks, result.parts) if i.part == part]


@pytest.mark.parametrize("order", ["d_out, d_in, context_length, dropout, num_heads",
                                   "d_in, d_out, context_length, num_heads, dropout"])
def test_parameters_in_another_order_are_one_item(engine, tmp_path, order):
    """d_in and d_out swapped (no error: other shapes, or d_out not divisible), or num_heads before dropout
    (a TypeError for num_heads=): every check fails for the order alone and passes when called with keywords.
    One item, led by the order, -17 (the wrapper's checks keep their 5 points); it was three items."""
    folder = submission(tmp_path, ("mha", MHA_INIT, MHA_INIT.replace("d_in, d_out, context_length, dropout, num_heads",
                                                                     order)))
    result = grade(engine, folder, ["mha"])
    cause = ORDER.format(order + ", qkv_bias")
    assert scores(result)["mha"] == 5 and result.parts["mha"].diagnosis == cause
    assert what_to_fix(result, "mha") == [(17, cause, "mha_book_example, mha_rejects_indivisible_d_out and 10 hidden "
                                                      "checks")]


def test_the_mistake_after_the_order_is_reached_by_keywords_and_named(engine, tmp_path):
    """d_in and d_out swapped, and keys computed from W_query: every parameter name matches, so the grader
    calls the constructor with keywords and finds the keys' mistake behind the order. Two items: the keys
    (-15, the part's diagnosis) and the order (-2, the checks that pass with keywords)."""
    folder = submission(tmp_path, ("mha", MHA_INIT, MHA_INIT.replace("d_in, d_out", "d_out, d_in")),
                        ("mha", "keys = self.W_key(x)", "keys = self.W_query(x)"))
    result = grade(engine, folder, ["mha"])
    assert scores(result)["mha"] == 5 and result.parts["mha"].diagnosis == KEYS_FROM_QUERY
    assert what_to_fix(result, "mha") == [
        (15, KEYS_FROM_QUERY, "mha_book_example and 9 hidden checks"),
        (2, ORDER.format("d_out, d_in, context_length, dropout, num_heads, qkv_bias"),
         "mha_rejects_indivisible_d_out and 1 hidden check")]
