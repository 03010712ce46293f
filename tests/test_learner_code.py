"""Issue 34 items 1-3: code as learners write it keeps its points; forgeries earn nothing.

Each case is a folder of tests/learner_code (the files one learner changed, laid over the solutions),
graded through the engine in the parts it touches, with the score of each part, the checks failed and
the tampering list it must get.
"""
import shutil
from pathlib import Path

import pytest
from part_edits import failed, grade, scores, submission
from rubric_points import PART

CASES = Path(__file__).parent / "learner_code"
FULL = dict(PART)  # each part's points, read from grading.yml (issue 36 item 2)
EX32 = {"ex32_book_example", "ex32_two_heads_of_width_one"}

CORRECT = {  # case -> the parts graded (each must get full marks, no check failed, nothing listed as tampering)
    "alias_v1": ["causal", "mha"],  # CausalAttention = CausalAttentionV1
    "reexport": ["causal", "mha"],  # from attention_core import CausalSelfAttention as CausalAttention
    "subclass": ["mha", "exercises"],  # MultiHeadAttention inherits forward from a base class
    "redefined_later": ["mha"],  # a first draft (a head loop), then the final class under the same name
    "assigned_after_decoy": ["mha"],  # a draft class, then MultiHeadAttention = MultiHeadAttentionV2
    "demo_seeded": ["causal", "mha", "exercises"],  # torch.manual_seed(123) and layers built at import
    "demo_unseeded": ["self_attention_v2", "weight_transfer", "mha"],  # torch.rand and a layer at import
    "honest_comments": ["mha"],  # "autograder" and "eval()" in comments and a docstring
    "decorated_forward": ["mha"],  # @torch.enable_grad() on forward: its code object is torch's wrapper
    # causal.py is wrong (no scaling: the grader's stand-in takes its place for mha's checks) and mha.py
    # imports a name of it the stand-in lacks, then draws at import: mha's checks rerun on the student's
    # own modules, imported before the seed
    "stand_in_path": ["mha"],
}
FORGED = {  # case -> (parts graded, {check: words of its message}, the tampering list's kinds)
    "padded_head_loop": (["mha"], {"mha_batches_the_heads": "more matrix multiplications"}, []),
    "dispatch_stack_loop": (["mha"], {"mha_batches_the_heads": "reaches into the machinery",
                                      "mha_runs_on_the_inputs_device": "reaches into the machinery"},
                            ["a dispatch mode (_len_torch_dispatch_stack)", "torch's private bindings (_C)"]),
    "decoy_first": (["mha"], {"mha_batches_the_heads": "one matmul per head"}, []),
    # a batched class under the name, then globals() rebinds it to a head loop calling itself by that name
    "rebound_at_run_time": (["mha"], {"mha_batches_the_heads": "one matmul per head",
                                      "mha_runs_on_the_inputs_device": "no class bound to the name"}, []),
    "exercises_deletes_wrapper": (["exercises"], {"ex32_book_example": "differs from MultiHeadAttentionWrapper",
                                                  "ex32_two_heads_of_width_one": "differs from"}, []),
}


def case(tmp_path, name):
    folder = submission(tmp_path)
    for path in (CASES / name).glob("*.py"):
        shutil.copy(path, folder / path.name)
    return folder


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_correct_learner_code_keeps_full_marks(engine, tmp_path, name):
    parts = CORRECT[name]
    result = grade(engine, case(tmp_path, name), parts)
    lost = {part: failed(result, part) for part in parts if failed(result, part)}
    assert (scores(result), lost, result.tampering) == ({p: FULL[p] for p in parts}, {}, [])


@pytest.mark.parametrize("name", sorted(FORGED))
def test_forgeries_earn_nothing_from_the_evidence_they_fake(engine, tmp_path, name, engine_points):
    parts, lost, tampering = FORGED[name]
    result = grade(engine, case(tmp_path, name), parts)
    got = {check: message for part in parts for check, message in failed(result, part).items()}
    assert sorted(got) == sorted(lost), got
    for check, words in lost.items():
        assert words in got[check], (check, got[check])
    assert scores(result) == {p: FULL[p] - sum(engine_points[p].get(c, 0) for c in lost) for p in parts}
    assert [t.split(": ", 1)[1] for t in result.tampering] == tampering


@pytest.fixture()
def engine_points(engine):
    rubric = engine[0]
    return {name: {check: c.points for check, c in part.checks.items()} for name, part in rubric.parts.items()}


# case -> (edits of the solutions, the part graded, {check: words of its message}): a learner's bug costs the
# checks that observe it, each saying so, and no other (the other checks of its part keep their points)
ONLY_ITS_CHECKS = {
    # dropout left on in eval mode, right in training mode: causal_dropout_in_training_mode judged the training
    # weights against one dropout draw of the eval run and said "puts weight on future tokens" (2 points more)
    "dropout_on_in_eval_mode": ([("causal", "attn_weights = self.dropout(attn_weights)",
                                  "attn_weights = torch.nn.functional.dropout(attn_weights, self.dropout.p, training=True)")],
                                "causal", {"causal_dropout_off_in_eval_mode": "still active in eval mode"}),
    "sdpa_dropout_p_in_eval_mode": ([("causal", """attn_scores = queries @ keys.transpose(1, 2)  # (b, num_tokens, num_tokens)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        return attn_weights @ values""", """return torch.nn.functional.scaled_dot_product_attention(
            queries, keys, values, is_causal=True, dropout_p=self.dropout.p)""")],
                                    "causal", {"causal_dropout_off_in_eval_mode": "still active in eval mode"}),
}


@pytest.mark.parametrize("name", sorted(ONLY_ITS_CHECKS))
def test_a_bug_costs_the_checks_that_observe_it_and_no_other(engine, tmp_path, name, engine_points):
    edits, part, lost = ONLY_ITS_CHECKS[name]
    result = grade(engine, submission(tmp_path, *edits), [part])
    got = failed(result, part)
    assert sorted(got) == sorted(lost), got
    for check, words in lost.items():
        assert words in got[check], (check, got[check])
    assert scores(result) == {part: FULL[part] - sum(engine_points[part][c] for c in lost)}


def test_demo_code_at_import_in_every_module_costs_nothing(engine, tmp_path):
    """Item 2: the reference with `_demo = torch.rand(3)` and `torch.manual_seed(999)` at the end of every
    module (run at import, after which the grader seeds) gets every point."""
    folder = submission(tmp_path)
    for path in folder.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        head = "" if "import torch\n" in text else "import torch\n"
        path.write_text(head + text + "\n_demo = torch.rand(3)\ntorch.manual_seed(999)\n", encoding="utf-8")
    result = grade(engine, folder, list(FULL))
    assert (scores(result), [c.name for c in result.checks if not c.passed]) == (FULL, [])


def test_the_grader_reads_the_class_python_uses_not_a_decoy_before_it(engine, tmp_path, monkeypatch):
    """Item 3: a batched decoy class first, the class Python keeps (a head loop) after it. With the
    child's counts made blind, the grader's own reading still finds the loop, in the second class."""
    from autograder.suites import efficiency

    monkeypatch.setattr(efficiency, "growth_problem", lambda *args: "")
    monkeypatch.setattr(efficiency, "bound_problem", lambda *args: "")
    monkeypatch.setattr(efficiency, "per_head_work", lambda *args: "")
    result = grade(engine, case(tmp_path, "decoy_first"), ["mha"])
    assert scores(result) == {"mha": 20}
    # a hidden check: the student reads the grader's fixed words, the instructor the file and line (issue 37.6)
    assert "a Python loop over the heads" in failed(result, "mha")["mha_batches_the_heads"]
    assert "loops over its heads in Python (mha.py, line" in details(result)["mha_batches_the_heads"]


def test_the_child_s_pointer_and_the_grader_s_reading_must_agree(engine, tmp_path, monkeypatch):
    """Item 1: the reading finds the batched class written under the name; the child, asked which class
    the name is bound to, points at another (a head loop bound through globals(), its __qualname__
    forged: its forward's first line is none of the read class's). With the counts made blind, the
    check still earns nothing: the grader's reading could not confirm what runs."""
    from autograder.suites import efficiency

    monkeypatch.setattr(efficiency, "growth_problem", lambda *args: "")
    monkeypatch.setattr(efficiency, "bound_problem", lambda *args: "")
    monkeypatch.setattr(efficiency, "per_head_work", lambda *args: "")
    result = grade(engine, case(tmp_path, "rebound_at_run_time"), ["mha"])
    assert scores(result) == {"mha": 19}  # the batching point and the device point
    lost = failed(result, "mha")
    assert sorted(lost) == ["mha_batches_the_heads", "mha_runs_on_the_inputs_device"]
    assert all("no class bound to the name" in message for message in lost.values())
    assert all("found no class bound to the name MultiHeadAttention" in details(result)[check] for check in lost)


def details(result):
    return {c.name: c.detail or c.message for c in result.checks if not c.passed}


# ---------------------------------------------------------------- the grader's reading, in this process

def sources_of(name):
    """The solutions' modules with a case's files laid over them, as the grader reads them."""
    folder = Path(__file__).parents[1] / "solutions" / "ch03"
    found = {p.stem: p.read_text(encoding="utf-8") for p in folder.glob("*.py")}
    found.update({p.stem: p.read_text(encoding="utf-8") for p in (CASES / name).glob("*.py")} if name else {})
    return found


@pytest.mark.quick
@pytest.mark.parametrize("name, module, class_name, where, written", [
    ("", "mha", "MultiHeadAttention", "mha", "MultiHeadAttention"),
    ("alias_v1", "causal", "CausalAttention", "causal", "CausalAttentionV1"),
    ("reexport", "causal", "CausalAttention", "attention_core", "CausalSelfAttention"),
    ("subclass", "mha", "MultiHeadAttention", "mha", "MultiHeadAttention"),
    ("assigned_after_decoy", "mha", "MultiHeadAttention", "mha", "MultiHeadAttentionV2"),
])
def test_the_reading_follows_the_name_to_the_class_python_binds(name, module, class_name, where, written):
    from autograder import source_reading

    found = source_reading.find(sources_of(name), module, class_name)
    assert (found.module, found.node.name) == (where, written)
    assert source_reading.loops_over_heads(sources_of(name), class_name, module) == ()


def test_the_last_binding_counts_and_a_main_block_does_not():
    from autograder import source_reading

    redefined = sources_of("redefined_later")
    found = source_reading.find(redefined, "mha", "MultiHeadAttention")
    lines = [n.lineno for n in source_reading.parse(redefined["mha"]).body if getattr(n, "name", "") == found.node.name]
    assert len(lines) == 2 and found.node.lineno == lines[-1]
    assert source_reading.loops_over_heads(redefined, "MultiHeadAttention", "mha") == ()
    decoy = sources_of("decoy_first")
    assert source_reading.loops_over_heads(decoy, "MultiHeadAttention", "mha") == ("mha", 99)
    guarded = dict(redefined, mha=redefined["mha"] + "\n\nif __name__ == '__main__':\n    MultiHeadAttention = None\n")
    assert source_reading.find(guarded, "mha", "MultiHeadAttention").node is not None
    assert source_reading.find({"mha": "MultiHeadAttention = make()\n"}, "mha", "MultiHeadAttention") is None


MERGE = "        context = (attn_weights @ values).transpose(1, 2)  # (b, num_tokens, num_heads, head_dim)\n"


@pytest.mark.quick
@pytest.mark.parametrize("loop, computes", [
    # a loop that only gathers the heads' results computes nothing per head: not a head loop (principle 2)
    ("torch.cat([heads[:, h] for h in range(self.num_heads)], dim=-1)", False),
    ("torch.cat([heads[:, :, h].reshape(b, num_tokens, -1) for h in range(self.num_heads)], -1)", False),
    ("torch.cat(outs, -1)\n        for h in range(self.num_heads):\n            outs.append(heads[:, h])", False),
    ("{h: heads[:, h * 1:(h + 1) * 1] for h in range(self.num_heads)}", False),
    # each of these does work per head: still a head loop
    ("torch.cat([heads[:, h] @ heads[:, h].transpose(1, 2) for h in range(self.num_heads)], -1)", True),
    ("torch.cat([torch.softmax(heads[:, h], -1) for h in range(self.num_heads)], -1)", True),
    ("torch.cat([self.out_proj(heads[:, h]) for h in range(self.num_heads)], -1)", True),
    ("torch.cat(outs, -1)\n        for h in range(self.num_heads):\n            outs.append(heads[:, h] * 2)", True),
    ("torch.cat([heads[:, h] for h in range(self.num_heads) if heads[:, h].sum() > 0], -1)", True),
    ("torch.cat([heads[:, h.sum()] for h in self.heads], -1)", True),
])
def test_a_loop_that_only_gathers_the_heads_is_not_a_head_loop(loop, computes):
    from autograder import source_reading

    sources = sources_of("")
    assert MERGE in sources["mha"]
    sources["mha"] = sources["mha"].replace(MERGE, f"        heads = attn_weights @ values\n        outs = []\n"
                                                   f"        _ = {loop}\n" + MERGE)
    found = source_reading.loops_over_heads(sources, "MultiHeadAttention", "mha")
    assert bool(found) is computes, found


def test_a_pointer_that_disagrees_with_the_reading_leaves_nothing_read():
    from autograder import source_reading

    rebound = sources_of("rebound_at_run_time")
    found = source_reading.find(rebound, "mha", "MultiHeadAttention")
    forward = next(n for n in found.node.body if getattr(n, "name", "") == "forward")
    agree = {"module": "mha", "qualname": "MultiHeadAttention", "line": forward.lineno, "line_module": "mha"}
    again = source_reading.find(rebound, "mha", "MultiHeadAttention", agree)
    assert (again.module, again.node.lineno) == (found.module, found.node.lineno)
    for lie in ({"qualname": "_Heads"}, {"line": forward.lineno + 60}, {"module": "causal"}):
        assert source_reading.find(rebound, "mha", "MultiHeadAttention", {**agree, **lie}) is None


@pytest.mark.quick
def test_tampering_is_read_from_code_never_from_comments_or_strings():
    from autograder import source_reading

    assert source_reading.tampering(sources_of("honest_comments")) == []
    assert source_reading.tampering({"mha": '"""eval() and exec() and sys.modules and autograder."""\n'
                                            "# torch._C._DisableTorchDispatch\nmodel.eval()\nx = torch.stack([y])\n"}) == []
    assert source_reading.tampering({"mha": "import torch\nf = getattr(torch._C, '_pop_torch_dispatch_stack')\n"
                                            "g = eval('1')\n"}) == [
        "mha.py, line 2: a dispatch mode (_pop_torch_dispatch_stack)", "mha.py, line 2: torch's private bindings (_C)",
        "mha.py, line 3: code made from text (eval())"]
    # code that asks whether it runs on the emulated GPU (issue 35's device checks) could take another path there
    assert source_reading.tampering({"mha": "import torch\n\ndef f(x):\n    return torch.ones(2, device=x.device if x.is_meta"
                                            " else 'cpu')\n\nfrom torch._subclasses.fake_tensor import FakeTensor\n"}) == [
        "mha.py, line 4: the device emulation (is_meta)"]
