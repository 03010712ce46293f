"""Issue 21 item 1: a part's grade depends on its own code only, whatever another part's code does
(wrong values, raising, hanging, a missing or renamed class, other attribute names, an alias).

Each test grades a copy of the solutions with edits written here, through the real engine, and
states the score per part and the message it expects. Only the parts concerned are graded.
"""
import pytest
from part_edits import failed, grade, scores, submission
from rubric_points import PART

from autograder import selftest
from autograder.stand_ins import MODULES
from autograder.suites import dependencies

V2_RAISES = ("self_attention_v2", "        super().__init__()\n", "        super().__init__()\n        raise KeyError(1)\n")


@pytest.mark.quick
def test_a_v2_that_raises_when_built_costs_the_transfer_nothing(engine, tmp_path):
    result = grade(engine, submission(tmp_path, V2_RAISES), ["self_attention_v2", "weight_transfer"])
    assert scores(result) == {"self_attention_v2": 0, "weight_transfer": 8}


def test_a_real_transfer_bug_still_costs_the_transfer_when_v2_raises(engine, tmp_path):
    folder = submission(tmp_path, V2_RAISES, ("weight_transfer", ".weight.T)", ".weight)"))
    result = grade(engine, folder, ["weight_transfer"])
    assert scores(result)["weight_transfer"] < 8
    assert any("transpose" in m for m in failed(result, "weight_transfer").values())


@pytest.mark.parametrize("edits", [
    [("self_attention_v1", "class SelfAttention_v1(", "class SelfAttention_V1(")],         # renamed class
    [("self_attention_v1", "self.W_query", "self.w_queries")],                              # other names, book transfer
    [("self_attention_v1", "self.W_query", "self.W_q"), ("weight_transfer", "sa_v1.W_query", "sa_v1.W_q")],  # own names
    [("self_attention_v1", "return attn_weights @ values", "return attn_weights @ values * 2")],  # wrong values
], ids=["renamed-class", "other-names", "transfer-for-own-names", "wrong-v1"])
def test_v1_names_and_bugs_cost_only_v1(engine, tmp_path, edits):
    result = grade(engine, submission(tmp_path, *edits), ["self_attention_v1", "weight_transfer"])
    assert scores(result)["weight_transfer"] == PART["weight_transfer"]
    assert scores(result)["self_attention_v1"] < 10


@pytest.mark.parametrize("edit", [
    ("causal", "import torch.nn as nn\n", "import torch.nn as nn\nraise ImportError('half done')\n"),  # raises on import
    ("causal", "keys.shape[-1] ** 0.5", "keys.shape[-1]"),                                              # wrong values
    ("causal", "class CausalAttention(", "class Causal_Attention("),                                   # missing class
], ids=["raises-on-import", "wrong-scale", "renamed"])
def test_causal_bugs_cost_the_wrapper_nothing(engine, tmp_path, edit):
    result = grade(engine, submission(tmp_path, edit), ["mha", "exercises"])
    assert scores(result) == {"mha": 22, "exercises": 8}


# mha.py written with causal.py's functions (the course's helpers, which the mha stub does not import)
MHA_USES_CAUSAL_S_FUNCTIONS = (
    ("mha", "from causal import CausalAttention\n",
     "from causal import CausalAttention, causal_mask, masked_attention_weights\n"),
    ("mha", "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
            "        attn_weights = torch.softmax(attn_scores / self.head_dim**0.5, dim=-1)\n",
     "        attn_scores = attn_scores.masked_fill(causal_mask(num_tokens, x.device), -torch.inf)\n"
     "        attn_weights = masked_attention_weights(attn_scores, self.head_dim)\n"))


@pytest.mark.parametrize("edit, lost", [
    (("causal", "diagonal=1)\n    ### END SOLUTION", "diagonal=0)\n    ### END SOLUTION"),
     {"causal_mask_marks_the_future", "causal_mask_unseen_sizes", "masked_weights_book_example",
      "masked_weights_unseen_scores", "causal_inputs_left_unchanged"}),
    (("causal", "    return torch.softmax(masked / d_k**0.5, dim=-1)", "    return torch.softmax(masked, dim=-1)"),
     {"masked_weights_book_example", "masked_weights_unseen_scores", "causal_inputs_left_unchanged"}),
    (("causal", "    num_tokens = scores.shape[-1]\n", "    num_tokens = scores.shape[-1]\n    raise NotImplementedError\n"),
     {"masked_weights_book_example", "masked_weights_unseen_scores", "causal_inputs_left_unchanged"}),
], ids=["mask-off-by-one", "weights-unscaled", "weights-not-written"])
def test_causal_s_functions_wrong_cost_an_mha_that_uses_them_nothing(engine, tmp_path, edit, lost):
    """The dependency probe tries causal.py's functions as well as its class (a causal_mask off by one cost
    an mha.py that imports it 17 of 22 points); found wrong, they are the grader's in mha's checks (stand-in
    functions: stand_ins.py), batched and on the emulated GPU as the student's mha runs them. Causal loses
    the checks of the functions, and only those."""
    folder = submission(tmp_path, *MHA_USES_CAUSAL_S_FUNCTIONS, edit)
    result = grade(engine, folder, ["causal", "mha"])
    assert scores(result)["mha"] == PART["mha"], failed(result, "mha")
    assert set(failed(result, "causal")) == lost


def test_mha_s_own_bugs_are_still_charged_when_causal_s_functions_stand_in(engine, tmp_path):
    """With causal.py's functions the grader's, mha.py's own mistakes around them still cost mha: the heads
    left unscaled by head_dim (a d_k of 1 given to masked_attention_weights), a per-head loop over the
    stand-in function (its calls counted as the operations the grader ran for them: more softmaxes with
    more heads), and a plain-attribute tensor that stays on the CPU (the stand-in answers the emulated GPU
    with the answer's shape: the mixed devices are seen)."""
    wrong_mask = ("causal", "diagonal=1)\n    ### END SOLUTION", "diagonal=0)\n    ### END SOLUTION")
    unscaled = submission(tmp_path / "unscaled", *MHA_USES_CAUSAL_S_FUNCTIONS, wrong_mask,
                          ("mha", "masked_attention_weights(attn_scores, self.head_dim)", "masked_attention_weights(attn_scores, 1)"))
    assert "mha_scales_by_head_dim" in failed(grade(engine, unscaled, ["mha"]), "mha")
    per_head = submission(tmp_path / "loop", *MHA_USES_CAUSAL_S_FUNCTIONS, wrong_mask,
                          ("mha", "attn_weights = masked_attention_weights(attn_scores, self.head_dim)\n",
                           "attn_weights = torch.stack([masked_attention_weights(attn_scores[:, h], self.head_dim)\n"
                           "                                    for h in range(self.num_heads)], dim=1)\n"))
    result = grade(engine, per_head, ["mha"])
    assert "once per head" in failed(result, "mha").get("mha_batches_the_heads", ""), failed(result, "mha")
    stays = submission(tmp_path / "stays", *MHA_USES_CAUSAL_S_FUNCTIONS, wrong_mask,
                       ("mha", "        self.head_dim = d_out // num_heads\n",
                        "        self.head_dim = d_out // num_heads\n        self.temperature = torch.ones(1, 1)\n"),
                       ("mha", "masked_attention_weights(attn_scores, self.head_dim)\n",
                        "masked_attention_weights(attn_scores, self.head_dim) * self.temperature\n"))
    result = grade(engine, stays, ["mha"])
    assert set(failed(result, "mha")) == {"mha_runs_on_the_inputs_device"}
    assert "mixes devices" in failed(result, "mha")["mha_runs_on_the_inputs_device"]


# causal.py's CausalAttention built on SelfAttention_v2 (its three layers made by v2's __init__), a learner's way
CAUSAL_INHERITS_V2 = (
    ("causal", "import torch.nn as nn\n", "import torch.nn as nn\n\nfrom self_attention_v2 import SelfAttention_v2\n"),
    ("causal", "class CausalAttention(nn.Module):", "class CausalAttention(SelfAttention_v2):"),
    ("causal", "        super().__init__()\n        ### BEGIN SOLUTION\n        self.d_out = d_out\n"
               "        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
               "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
               "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n",
     "        super().__init__(d_in, d_out, qkv_bias)\n        ### BEGIN SOLUTION\n        self.d_out = d_out\n"))


@pytest.mark.parametrize("edit", [
    ("self_attention_v2", "self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)", "self.W_query = nn.Linear(d_in, d_out, bias=False)"),
    ("self_attention_v2", "keys.shape[-1] ** 0.5", "keys.shape[-1]"),
    ("self_attention_v2", "        super().__init__()\n", "        super().__init__()\n        raise KeyError(1)\n"),
], ids=["bias-ignored", "unscaled-forward", "raises-when-built"])
def test_a_v2_bug_costs_a_causal_that_inherits_v2_nothing(engine, tmp_path, edit):
    """The dependency probe tries v2 for causal too, with qkv_bias and without (a v2 that ignored qkv_bias cost
    an inheriting CausalAttention its bias check): found wrong, the grader's v2 is the base class in causal's
    checks (a stand-in class subclassed by the student's)."""
    result = grade(engine, submission(tmp_path, *CAUSAL_INHERITS_V2, edit), ["self_attention_v2", "causal"])
    assert scores(result)["causal"] == PART["causal"], failed(result, "causal")
    assert scores(result)["self_attention_v2"] < PART["self_attention_v2"]


# the trainable attentions written with simple_attention's attention_weights (3.3.2's softmax over the last dim)
V1_ON_SIMPLE = (("self_attention_v1", "import torch.nn as nn\n",
                 "import torch.nn as nn\n\nfrom simple_attention import attention_weights\n"),
                ("self_attention_v1", "attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)",
                 "attn_weights = attention_weights(attn_scores / keys.shape[-1] ** 0.5)"))
CAUSAL_ON_SIMPLE = (("causal", "import torch.nn as nn\n", "import torch.nn as nn\n\nimport simple_attention\n"),
                    ("causal", "attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)",
                     "attn_weights = simple_attention.attention_weights(attn_scores / keys.shape[-1] ** 0.5)"))


@pytest.mark.parametrize("edit", [
    ("simple_attention", "return torch.softmax(scores, dim=-1)", "return torch.softmax(scores, dim=0)"),
    ("simple_attention", "return torch.softmax(scores, dim=-1)", "raise NotImplementedError"),
    ("simple_attention", "import torch\n", "import torch\n\nraise RuntimeError('half done')\n"),
], ids=["weights-over-dim-0", "weights-not-written", "raises-on-import"])
def test_a_simple_attention_bug_costs_the_attentions_that_call_it_nothing(engine, tmp_path, edit):
    """The dependency probe tries simple_attention's functions for v1, v2, causal and mha (a v1 or a
    CausalAttention calling its attention_weights lost the points of a bug that is simple_attention's);
    found wrong, they are the grader's in those parts' checks (stand-in functions)."""
    folder = submission(tmp_path, *V1_ON_SIMPLE, *CAUSAL_ON_SIMPLE, edit)
    result = grade(engine, folder, ["simple_attention", "self_attention_v1", "causal"])
    assert scores(result)["self_attention_v1"] == PART["self_attention_v1"], failed(result, "self_attention_v1")
    assert scores(result)["causal"] == PART["causal"], failed(result, "causal")
    assert scores(result)["simple_attention"] < PART["simple_attention"]


def test_a_hanging_causal_costs_the_wrapper_nothing(engine, tmp_path):
    folder = submission(tmp_path, ("causal", "        b, num_tokens, d_in = x.shape\n",
                                   "        b, num_tokens, d_in = x.shape\n        while True:\n            pass\n"))
    result = grade(engine, folder, ["mha"])
    assert scores(result) == {"mha": 22}


@pytest.mark.quick
def test_heads_built_through_an_alias_are_recognised(engine, tmp_path):
    folder = submission(tmp_path, ("mha", "from causal import CausalAttention\n",
                                   "from causal import CausalAttention as Head\nAttention_v1 = Head\n"),
                        ("mha", "[CausalAttention(", "[Attention_v1("))
    result = grade(engine, folder, ["mha"])
    assert scores(result) == {"mha": 22}, failed(result, "mha")


@pytest.mark.parametrize("edit", [
    ("mha", "class MultiHeadAttention(", "class Multihead_Attention("),
    ("mha", "class MultiHeadAttentionWrapper(", "class MHAWrapper("),
    ("mha", "        return self.out_proj(context)", "        return self.out_proj(context) + 1"),
], ids=["mha-renamed", "wrapper-renamed", "wrong-mha"])
def test_mha_names_and_bugs_cost_the_exercises_nothing(engine, tmp_path, edit):
    result = grade(engine, submission(tmp_path, edit), ["mha", "exercises"])
    assert scores(result)["exercises"] == 8 and scores(result)["mha"] < 22


def test_a_wrong_exercise_still_costs_points_when_mha_is_renamed(engine, tmp_path):
    folder = submission(tmp_path, ("mha", "class MultiHeadAttention(", "class Multihead_Attention("),
                        ("exercises", "num_heads=12)", "num_heads=8)"))
    result = grade(engine, folder, ["exercises"])
    assert scores(result)["exercises"] < 8
    # the check ran after a hidden input: the suite's words as written, never the number the student's code
    # chose (suites/vocabulary.py), and the grader's own numbers kept
    assert any(m == "gpt2_small_attention() is built with num_heads=...: GPT-2 small has 12 heads of head_dim 64"
               for m in failed(result, "exercises").values()), failed(result, "exercises")


@pytest.mark.quick
def test_a_part_never_receives_its_own_reference():
    everything_wrong = {module: "wrong" for module in MODULES}
    for part in set(dependencies.DEPENDS) | set(dependencies.MAY_USE):
        uses = dependencies.DEPENDS.get(part, ()) + dependencies.MAY_USE.get(part, ())
        given = dependencies.substitutes({m: everything_wrong[m] for m in uses})
        assert part not in given and set(given) <= set(uses)
    assert dependencies.substitutes({"causal": ""}) == []


def test_the_grader_s_code_never_reaches_a_later_part(engine, tmp_path):
    """weight_transfer runs with the grader's v2 (the student's raises) and keeps the child's module
    table where the reset does not look; causal, graded next, fails if any grader's module is still reachable from it."""
    folder = submission(
        tmp_path, V2_RAISES,
        ("weight_transfer", "import torch\n", "import sys\n\nimport torch\nimport torch.utils\n\ntorch.utils.kept = sys.modules\n"),
        ("causal", "import torch.nn as nn\n", "import torch.nn as nn\nimport torch.utils\n\nif any(str(getattr(m, '__file__', '"
                                               "')).startswith('<the grader') for m in list(getattr(torch.utils, 'kept', {}).values())):"
                                               "\n    raise RuntimeError('found')\n"))
    result = grade(engine, folder, ["weight_transfer", "causal"])
    assert scores(result) == {"weight_transfer": 8, "causal": 22}


def test_heads_of_a_class_of_the_wrapper_s_own_are_judged_by_what_they_compute(engine, tmp_path):
    """mha.py copies CausalAttention under another name (not the same object): its heads still are
    causal attention heads, so the wrapper keeps full marks; heads that are not lose the checks."""
    source = (selftest.SOLUTIONS / "causal.py").read_text(encoding="utf-8")
    own_class = source[source.index("class CausalAttention("):].replace("class CausalAttention(", "class Head(")
    folder = submission(tmp_path, ("mha", "from causal import CausalAttention\n", "\n\n" + own_class + "\n\n"),
                        ("mha", "[CausalAttention(", "[Head("))
    assert scores(grade(engine, folder, ["mha"])) == {"mha": 22}
    wrong = submission(tmp_path / "wrong", ("mha", "from causal import CausalAttention\n",
                                            "\n\n" + own_class.replace("** 0.5", "") + "\n\n"),
                       ("mha", "[CausalAttention(", "[Head("))
    assert scores(grade(engine, wrong, ["mha"]))["mha"] < 22


def test_exercises_written_for_mha_s_own_class_name_keep_full_marks(engine, tmp_path):
    """mha.py names its class Multihead_Attention (mha pays for the name) and exercises.py uses that
    name throughout: against the grader's mha the import fails, with the student's own it is right."""
    folder = submission(tmp_path, ("mha", "class MultiHeadAttention(", "class Multihead_Attention("),
                        ("exercises", "from mha import MultiHeadAttention,", "from mha import Multihead_Attention,"),
                        ("exercises", "return MultiHeadAttention(768", "return Multihead_Attention(768"))
    result = grade(engine, folder, ["mha", "exercises"])
    assert scores(result)["exercises"] == PART["exercises"], failed(result, "exercises")
    assert scores(result)["mha"] < 22


@pytest.mark.quick
def test_the_probes_find_the_reference_right_on_its_own(engine, tmp_path, monkeypatch):
    """Every part a check uses is probed; on the solutions each probe says right (''), so no stand-in
    replaces the student's own code there (a probe that always failed would hide interaction bugs)."""
    seen = []
    original = dependencies.verdicts

    def recording(student, part, known, used=None):
        found = original(student, part, known, used)
        seen.append((part, dict(found)))
        return found

    monkeypatch.setattr(dependencies, "verdicts", recording)
    result = grade(engine, submission(tmp_path), ["weight_transfer", "mha", "exercises"])
    assert scores(result) == {"weight_transfer": 8, "mha": 22, "exercises": 8}
    probed = {module for _, found in seen for module in found}
    # the reference imports no simple_attention and CausalAttention no v2 (MAY_USE): those are not probed
    assert probed == {"self_attention_v1", "self_attention_v2", "causal", "mha"}, seen
    assert all(verdict == "" for _, found in seen for verdict in found.values()), seen
