"""Issue 14 items 1-3: efficiency judged by counted operations, device bugs found without a GPU.

Engine tests grade a copy of the solutions with a small edit, in the parts causal and mha only, or
read a corpus entry (autograder/selftest) as the session graded it for test_suites (tests/conftest.py's
graded_corpus: in the parts the entry can affect, issue 38 item 6), and state the score, the failed checks
and the message they expect. The judgments of autograder/suites/efficiency.py are also tested on counts taken in
this process with the child's own counting function.
"""
import shutil
import subprocess
import sys

import pytest
import torch
from rubric_points import PART
from torch._subclasses import fake_tensor

from autograder import PROJECT_ROOT, grading, runner, selftest
from autograder.inside import child
from autograder.inside.emulated_gpu import EMULATED
from autograder.suites import efficiency

ENTRIES = {e.id: e for e in selftest.corpus()}
PARTS = ["causal", "mha"]
# the error the emulated GPU raises when a CPU tensor meets a cuda one: torch's FakeTensorDeviceMismatchError,
# a plain RuntimeError in a torch without that class (2.11, the GPU image's: emulated_gpu.DEVICE_MISMATCH)
MISMATCH = getattr(fake_tensor, "FakeTensorDeviceMismatchError", RuntimeError).__name__


def grade(engine, entry, tmp_path):
    folder = selftest.apply(entry, tmp_path / "submission")
    return engine.grade(folder, parts=PARTS)


def corpus_graded(graded_corpus, entry_id):
    """A corpus entry's grade in causal and mha, as the session graded the corpus (graded_corpus, the grading
    test_suites judges; once per session, issue 38 item 6: these entries were graded again here) ->
    ({part: score}, {failed check: its message}). The corpus grades the parts an entry can affect
    (selftest.affected_parts: the parts whose child can import an edited module); a part of causal and mha
    it cannot affect runs the reference's code and keeps full marks (test_suites'
    test_skipping_unaffected_parts_hides_no_lost_point), as these tests graded it before. The affected
    parts beyond causal and mha (the exercises) keep full marks too."""
    outcome = graded_corpus(entries=[ENTRIES[entry_id]])[entry_id]
    edited = {edit.module for edit in ENTRIES[entry_id].edits}
    assert edited & set(PARTS) <= set(outcome.graded), (entry_id, outcome.graded)  # an edited part is graded
    beyond = {part: score for part, score in outcome.scores.items() if part not in PARTS and score[0] != score[1]}
    assert beyond == {}, (entry_id, beyond)
    scores = {part: outcome.scores[part][0] if part in outcome.graded else PART[part] for part in PARTS}
    return scores, {name: message for part, name, message in outcome.failed if part in PARTS}


def edit(module, find, replace, more=()):
    return selftest.Entry("edit", "mutant", [selftest.Edit(module, find, replace), *more])


def scores(result):
    return {part: p.score for part, p in result.parts.items()}


def failed(result):
    return {c.name: c.message for c in result.checks if not c.passed}


def details(result):
    """What the instructor reads of each failed check (a hidden check's student message is the grader's
    fixed words since issue 37.6: the file and line are the instructor's)."""
    return {c.name: c.detail or c.message for c in result.checks if not c.passed}


# ---------------------------------------------------------------- through the engine

@pytest.mark.parametrize("entry_id, words", [
    ("mha-loop-over-heads", "one matmul per head"),
    ("mha-projections-per-head", "one matmul per head"),
    ("mha-softmax-per-head", "softmax once per head"),
])
def test_a_loop_over_heads_is_named_by_the_batching_check_only(graded_corpus, entry_id, words):
    # the check's 2 points (issue 30: the child's counts and the grader's reading of mha.py agree)
    scores, failed = corpus_graded(graded_corpus, entry_id)
    assert scores == {"causal": 22, "mha": 20}
    assert list(failed) == ["mha_batches_the_heads"]
    message = failed["mha_batches_the_heads"]
    assert words in message


@pytest.mark.parametrize("entry_id, part, check", [
    ("causal-mask-made-in-forward-on-cpu", "causal", "causal_runs_on_the_inputs_device"),
    ("causal-additive-mask-without-device", "causal", "causal_runs_on_the_inputs_device"),
    ("mha-mask-made-in-forward-on-cpu", "mha", "mha_runs_on_the_inputs_device"),
])
def test_a_tensor_made_on_the_default_device_costs_the_device_check(graded_corpus, entry_id, part, check):
    scores, failed = corpus_graded(graded_corpus, entry_id)
    assert scores == {"causal": 22, "mha": 22, part: 21}  # the device check's point
    assert list(failed) == [check]
    assert "default device" in failed[check] and "device=x.device" in failed[check]


def test_a_plain_attribute_mask_is_named_as_such(graded_corpus):
    scores, failed = corpus_graded(graded_corpus, "mha-mask-plain-attribute")
    assert scores == {"causal": 22, "mha": 20}  # mha_structure's point and the device check's
    assert sorted(failed) == ["mha_runs_on_the_inputs_device", "mha_structure"]
    assert "plain attribute" in failed["mha_runs_on_the_inputs_device"]
    assert "register_buffer" in failed["mha_runs_on_the_inputs_device"]


@pytest.mark.parametrize("entry_id", ["mha-einsum", "mha-sdpa-with-the-mask-buffer", "mha-sdpa-reshape-assert",
                                      "mha-fused-qkv", "causal-mask-in-forward-on-x-device",
                                      "mha-mask-in-forward-on-x-device"])
def test_batched_and_device_safe_variants_keep_full_marks(graded_corpus, entry_id):
    assert corpus_graded(graded_corpus, entry_id) == ({"causal": 22, "mha": 22}, {})


MASK = "attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)"
QUERIES = "queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)"
LEGIT = {  # issue 30 item 2: more correct spellings the grader's reading of the source must accept
    "new_ones": [("mha", MASK, "attn_scores.masked_fill_(x.new_ones(num_tokens, num_tokens).triu(1).bool(), -torch.inf)")],
    "ones_like": [("mha", MASK, "attn_scores.masked_fill_(torch.ones_like(attn_scores[0, 0]).triu(1).bool(), -torch.inf)")],
    "full_on_x_device": [("mha", MASK, "attn_scores = attn_scores + torch.full((num_tokens, num_tokens), "
                                       "float('-inf'), device=x.device).triu(1)")],
    "made_on_the_cpu_then_moved": [("mha", MASK, "future = torch.triu(torch.ones(num_tokens, num_tokens), 1)\n"
                                                  "        future = future.to(x.device)\n"
                                                  "        attn_scores.masked_fill_(future.bool(), -torch.inf)")],
    "reshape_permute": [("mha", QUERIES, "queries = self.W_query(x).reshape(b, num_tokens, self.num_heads, "
                                         "-1).permute(0, 2, 1, 3)")],
    "a_loop_not_over_heads": [("mha", "b, num_tokens, d_in = x.shape", "b, num_tokens, d_in = [int(n) for n in x.shape]")],
    "buffer_named_future": [("mha", 'self.register_buffer("mask",', 'self.register_buffer("future",'),
                            ("mha", "self.mask.bool()", "self.future.bool()")],
}


@pytest.mark.parametrize("case", sorted(LEGIT))
def test_more_batched_and_device_safe_spellings_keep_full_marks(engine, tmp_path, case):
    entry = selftest.Entry(case, "variant", [selftest.Edit(*e) for e in LEGIT[case]])
    result = grade(engine, entry, tmp_path)
    assert (scores(result), failed(result), result.tampering) == ({"causal": 22, "mha": 22}, {}, [])


def test_a_mask_made_with_arange_on_the_cpu_loses_the_device_point_only(engine, tmp_path):
    entry = edit("mha", MASK, "attn_scores.masked_fill_(torch.arange(num_tokens)[:, None] < "
                              "torch.arange(num_tokens)[None, :], -torch.inf)")
    result = grade(engine, entry, tmp_path)
    assert scores(result) == {"causal": 22, "mha": 21} and list(failed(result)) == ["mha_runs_on_the_inputs_device"]


META_ONLY = ("attn_scores.masked_fill_(torch.ones(num_tokens, num_tokens, dtype=torch.bool, "
             "device=x.device if x.device.type == 'meta' else 'cpu').triu(1), -torch.inf)")


def test_a_mask_on_the_inputs_device_only_on_meta_earns_no_device_point(engine, tmp_path):
    """Issue 34.3 (confirmed on an H100): device= given, so the source reading is satisfied, and the
    meta stand-in the check used saw the inputs' device. On the emulated GPU x is on cuda, as on a
    GPU: the mask is made on the CPU and the check fails in both classes, with the device's words."""
    entry = edit("causal", MASK, META_ONLY, [selftest.Edit("mha", MASK, META_ONLY)])
    result = grade(engine, entry, tmp_path)
    assert scores(result) == {"causal": 21, "mha": 21}
    assert sorted(failed(result)) == ["causal_runs_on_the_inputs_device", "mha_runs_on_the_inputs_device"]
    assert all("default device" in message for message in failed(result).values())
    assert result.tampering == []


def test_code_that_asks_whether_its_tensors_are_meta_is_listed_as_tampering(engine, tmp_path):
    """The same forgery written with x.is_meta names the emulation's machinery: both measured checks
    of mha and causal's device check earn nothing, and the instructor sees it listed."""
    forged = META_ONLY.replace("x.device.type == 'meta'", "x.is_meta")
    entry = edit("causal", MASK, forged, [selftest.Edit("mha", MASK, forged)])
    result = grade(engine, entry, tmp_path)
    assert scores(result) == {"causal": 21, "mha": 19}
    assert sorted(failed(result)) == ["causal_runs_on_the_inputs_device", "mha_batches_the_heads",
                                      "mha_runs_on_the_inputs_device"]
    assert all("reaches into the machinery" in message for message in failed(result).values())
    assert [t.split(": ", 1)[1] for t in result.tampering] == ["the device emulation (is_meta)"] * 2


def test_the_grader_s_reading_alone_names_a_loop_the_counter_did_not_see(engine, tmp_path, monkeypatch):
    """Where the child's counts say nothing grows (here: the grader's judgement of the counts is made
    blind), the check still fails on the grader's own reading of mha.py, naming the line."""
    from autograder.suites import efficiency

    monkeypatch.setattr(efficiency, "growth_problem", lambda *args: "")
    monkeypatch.setattr(efficiency, "bound_problem", lambda *args: "")
    monkeypatch.setattr(efficiency, "per_head_work", lambda *args: "")
    result = grade(engine, ENTRIES["mha-loop-over-heads"], tmp_path)
    assert scores(result) == {"causal": 22, "mha": 20}
    assert "loops over its heads in Python (mha.py, line" in details(result)["mha_batches_the_heads"]
    assert "a Python loop over the heads: batch the heads" in failed(result)["mha_batches_the_heads"]


def test_reading_values_in_forward_is_not_a_device_bug(engine, tmp_path):
    # .item() cannot run on the meta device but works on a GPU: nothing to charge
    entry = edit("mha", "b, num_tokens, d_in = x.shape\n        # (b, num_tokens, d_out)",
                 "b, num_tokens, d_in = x.shape\n        if torch.isnan(x).any():\n"
                 "            raise ValueError('NaN in the inputs')\n        # (b, num_tokens, d_out)")
    result = grade(engine, entry, tmp_path)
    assert (scores(result), failed(result)) == ({"causal": 22, "mha": 22}, {})


def test_a_wrong_output_earns_no_efficiency_or_device_points(engine, tmp_path):
    result = grade(engine, ENTRIES["mha-unscaled"], tmp_path)
    assert {"mha_batches_the_heads", "mha_runs_on_the_inputs_device"} <= set(failed(result))
    assert scores(result)["causal"] == PART["causal"]


LIAR = '''
import sys as _sys

_child = _sys.modules.get("autograder.inside.child")
if _child is not None:
    def _made_up(module, args, kwargs, device=None):
        return {"counts": {"bmm": 1}, "mixed_devices": [], "output": torch.zeros(2, 6, 8), "device": "meta",
                "dtype": "float32", "shape": [2, 6, 8]}
    _child.count_ops = _made_up
'''


def test_made_up_counts_earn_nothing_without_the_right_output(engine, tmp_path):
    # the submission replaces the child's counting with answers of its own (it runs in that process)
    entry = edit("mha", "from causal import CausalAttention\n", "from causal import CausalAttention\n" + LIAR)
    result = grade(engine, entry, tmp_path)
    assert sorted(failed(result)) == ["mha_batches_the_heads", "mha_runs_on_the_inputs_device"]
    assert scores(result) == {"causal": 22, "mha": 19}  # both checks' points
    assert [t.split(": ", 1)[1] for t in result.tampering] == ["the grader's modules (autograder)",
                                                              "the counting machinery (count_ops)"]


HIDDEN_LOOP = '''
from torch.utils._python_dispatch import _disable_current_modes as _quiet


def _looped_forward(self, x):
    # a loop over the heads (one matmul per head), hidden from any dispatch mode that counts operations
    with _quiet():
        b, num_tokens, _ = x.shape
        q = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim)
        k = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim)
        v = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim)
        heads = []
        for h in range(self.num_heads):
            s = q[:, :, h] @ k[:, :, h].transpose(1, 2)
            s = s.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
            heads.append(self.dropout(torch.softmax(s / self.head_dim**0.5, dim=-1)) @ v[:, :, h])
        return self.out_proj(torch.cat(heads, dim=-1))


MultiHeadAttention.forward = _looped_forward
'''


def test_a_head_loop_hidden_from_the_counter_earns_nothing(engine, tmp_path):
    """Round 3, class 4: a head loop run inside torch's _disable_current_modes() hides its operations
    from the in-child counter (its own word). Code that reaches into the machinery the measurement relies
    on earns neither measured point (issue 34 item 3), and is reported as tampering; the same loop in the
    open loses the batching point only."""
    rubric, suites, sandbox = engine
    for part, check, points in (("mha", "mha_batches_the_heads", 2), ("mha", "mha_runs_on_the_inputs_device", 1),
                                ("causal", "causal_runs_on_the_inputs_device", 1)):
        assert rubric.parts[part].checks[check].points == points, check
    hidden = tmp_path / "hidden"
    shutil.copytree(selftest.SOLUTIONS, hidden)
    (hidden / "mha.py").write_text((hidden / "mha.py").read_text() + HIDDEN_LOOP)
    forged = grading.grade_submission(hidden, rubric, suites, sandbox, fixtures=runner.default_fixtures(), parts=PARTS)
    in_the_open = grade(engine, ENTRIES["mha-loop-over-heads"], tmp_path)
    assert "mha_batches_the_heads" in failed(in_the_open)
    assert scores(in_the_open) == {"causal": 22, "mha": 20}, failed(in_the_open)
    assert scores(forged) == {"causal": 22, "mha": 19}, failed(forged)
    for check in ("mha_batches_the_heads", "mha_runs_on_the_inputs_device"):
        assert "reaches into the machinery the measurement relies on (mha.py, line" in details(forged)[check]
        assert "reaches into the machinery the measurement relies on" in failed(forged)[check]
    assert [t.split(": ", 1)[1] for t in forged.tampering] == ["a dispatch mode (_python_dispatch)"]
    assert in_the_open.tampering == []


NAMES_MADE_AT_RUN_TIME = '''

def _one_head(module, queries, keys, values, num_tokens, h):
    scores = queries[:, h] @ keys[:, h].transpose(1, 2)
    scores = scores.masked_fill(module.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
    return module.dropout(torch.softmax(scores / module.head_dim ** 0.5, dim=-1)) @ values[:, h]


def _looped_forward(self, x):
    b, num_tokens, d_in = x.shape
    queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
    keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
    values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
    quiet = getattr(getattr(torch.utils, "_python_" + "dispatch"), "_disable_" + "current_modes")
    with quiet():
        context = torch.cat(list(map(lambda h: _one_head(self, queries, keys, values, num_tokens, h),
                                     range(self.num_heads))), dim=-1)
    return self.out_proj(context)


MultiHeadAttention.forward = _looped_forward
'''


def test_a_head_loop_hidden_by_names_made_at_run_time_earns_nothing(engine, tmp_path):
    """The same hiding as test_a_head_loop_hidden_from_the_counter_earns_nothing, with every name that
    reaches torch's dispatch modes spelled at run time (getattr(torch.utils, "_python_" + "dispatch")) and
    the loop written with map (no for statement for the reading to find): before, the reading saw no
    dispatch name, the counts nothing of the loop, and mha kept 22 of 22 with nothing listed. A lookup
    whose name the grader's reading cannot read (getattr, vars(m)[...], attrgetter, import_module by a name
    made at run time) is now listed as tampering and makes the measurement untrusted: mha 19, as with the
    names written out; a lookup by a loop variable over literals (for name in ("W_query", ...): getattr(...),
    the corpus's variants) is read as those literals."""
    rubric, suites, sandbox = engine
    hidden = tmp_path / "hidden"
    shutil.copytree(selftest.SOLUTIONS, hidden)
    (hidden / "mha.py").write_text((hidden / "mha.py").read_text() + NAMES_MADE_AT_RUN_TIME)
    forged = grading.grade_submission(hidden, rubric, suites, sandbox, fixtures=runner.default_fixtures(), parts=PARTS)
    assert scores(forged) == {"causal": 22, "mha": 19}, failed(forged)
    for check in ("mha_batches_the_heads", "mha_runs_on_the_inputs_device"):
        assert "reaches into the machinery the measurement relies on" in failed(forged)[check]
    assert [t.split(": ", 1)[1] for t in forged.tampering] == ["a name made at run time (getattr(?))"]


def test_code_in_a_comment_of_a_utf_7_module_is_read_as_python_runs_it(engine, tmp_path):
    """mha.py declares `# coding: utf-7` and writes, in what UTF-8 reads as one comment line, a head loop run
    inside torch's _disable_current_modes() put in place of MultiHeadAttention.forward (its __wrapped__ the
    batched forward, so the child's pointer names the batched forward's line): in utf-7, `+AAo-` is a line
    break. Before, the grader read the file as UTF-8, found the batched class and no dispatch name, the
    counter nothing of the loop: mha 22 of 22, nothing listed. The grader now reads each module as Python
    decodes it (source_reading.module_text): the dispatch mode is listed and the measured checks earn
    nothing (19), as with the same code written plainly (test_a_head_loop_hidden_from_the_counter_earns_nothing)."""
    rubric, suites, sandbox = engine
    hidden = tmp_path / "hidden"
    shutil.copytree(selftest.SOLUTIONS, hidden)
    plain = (hidden / "mha.py").read_text()
    assert "+" not in plain and plain.encode().decode("utf-7") == plain  # the same text in utf-7
    loop = HIDDEN_LOOP + "\n_looped_forward.__wrapped__ = _batched_forward\n"
    loop = loop.replace("\n\nMultiHeadAttention.forward = _looped_forward",
                        "\n\n_batched_forward = MultiHeadAttention.forward\nMultiHeadAttention.forward = _looped_forward")
    assert "+" not in loop
    (hidden / "mha.py").write_text("# coding: utf-7\n" + plain + "\n#" + loop.replace("\n", "+AAo-") + "\n")
    assert "_disable_current_modes" not in "".join(line for line in (hidden / "mha.py").read_text().splitlines()
                                                   if not line.startswith("#"))
    forged = grading.grade_submission(hidden, rubric, suites, sandbox, fixtures=runner.default_fixtures(), parts=PARTS)
    assert scores(forged) == {"causal": 22, "mha": 19}, failed(forged)
    for check in ("mha_batches_the_heads", "mha_runs_on_the_inputs_device"):
        assert "reaches into the machinery the measurement relies on" in failed(forged)[check]
    assert [t.split(": ", 1)[1] for t in forged.tampering] == ["a dispatch mode (_python_dispatch)"]


LOADS_NOTES = '''

import importlib.machinery as _machinery
import importlib.util as _util
import os as _os

_path = _os.path.join(_os.path.dirname(__file__), "notes.txt")
_spec = _util.spec_from_loader("_notes", _machinery.SourceFileLoader("_notes", _path))
_notes = _util.module_from_spec(_spec)
_spec.loader.exec_module(_notes)
_notes._looped_forward.__wrapped__ = MultiHeadAttention.forward
MultiHeadAttention.forward = _notes._looped_forward
'''


def test_a_head_loop_in_a_staged_text_file_run_as_code_earns_nothing(engine, tmp_path):
    """mha.py runs notes.txt (a file staging copies, as it copies .json and .md: the child may read it) as a
    module with importlib's SourceFileLoader and puts its forward, a head loop hidden from the counter with
    _disable_current_modes, in place of MultiHeadAttention.forward (its __wrapped__ the batched forward, so
    the child's pointer agrees). The grader reads the .py modules only: before, mha kept 22 of 22 with nothing
    listed. Making code from data the reading never sees (a loader of a file, marshal, runpy, code objects
    built, pickle, ctypes; as exec, eval and compile) is now code made from text: listed, and the measured
    checks earn nothing (19)."""
    rubric, suites, sandbox = engine
    hidden = tmp_path / "hidden"
    shutil.copytree(selftest.SOLUTIONS, hidden)
    (hidden / "notes.txt").write_text("import torch\n" + HIDDEN_LOOP.split("\n\nMultiHeadAttention.forward")[0] + "\n")
    (hidden / "mha.py").write_text((hidden / "mha.py").read_text() + LOADS_NOTES)
    forged = grading.grade_submission(hidden, rubric, suites, sandbox, fixtures=runner.default_fixtures(), parts=PARTS)
    assert scores(forged) == {"causal": 22, "mha": 19}, failed(forged)
    for check in ("mha_batches_the_heads", "mha_runs_on_the_inputs_device"):
        assert "reaches into the machinery the measurement relies on" in failed(forged)[check]
    assert [t.split(": ", 1)[1] for t in forged.tampering] == ["code made from text (spec_from_loader)"]


# ---------------------------------------------------------------- the judgments, in this process

@pytest.fixture()
def solutions(monkeypatch):
    monkeypatch.syspath_prepend(str(selftest.SOLUTIONS))
    for name in ("mha", "causal"):
        sys.modules.pop(name, None)
    import mha
    yield mha
    for name in ("mha", "causal"):
        sys.modules.pop(name, None)


def counts_of(module, x, device=None):
    return child.count_ops(module.eval(), [x], {}, device)


@pytest.mark.quick
def test_the_reference_mha_issues_the_same_matmuls_for_any_head_count(solutions):
    x = torch.rand(2, 6, 6)
    few = counts_of(solutions.MultiHeadAttention(6, 8, 8, 0.0, 2), x)["counts"]
    many = counts_of(solutions.MultiHeadAttention(6, 8, 8, 0.0, 4), x)["counts"]
    assert efficiency.matmul_calls(few) == efficiency.matmul_calls(many) == 6  # 4 projections, 2 batched matmuls
    assert efficiency.growth_problem(few, many, 2, 4) == ""


def test_the_wrapper_issues_matmuls_per_head(solutions):
    x = torch.rand(2, 6, 6)
    few = counts_of(solutions.MultiHeadAttentionWrapper(6, 4, 8, 0.0, 2), x)["counts"]
    many = counts_of(solutions.MultiHeadAttentionWrapper(6, 2, 8, 0.0, 4), x)["counts"]
    assert efficiency.matmul_calls(many) == 2 * efficiency.matmul_calls(few)
    assert "one matmul per head" in efficiency.growth_problem(few, many, 2, 4)


def test_attention_kernels_and_einsum_count_as_matmuls():
    q = torch.rand(2, 3, 5, 4)
    sdpa = child.count_ops(torch.nn.functional.scaled_dot_product_attention, [q, q, q], {"is_causal": True})
    einsum = child.count_ops(torch.einsum, ["bhqd,bhkd->bhqk", q, q], {})
    assert efficiency.matmul_calls(sdpa["counts"]) >= 1 and efficiency.matmul_calls(einsum["counts"]) == 1
    assert efficiency.softmax_calls({"_softmax": 2, "mm": 1}) == 2


def test_mixed_devices_are_recorded_on_the_emulated_gpu(solutions):
    x = torch.rand(2, 6, 6)
    answer = counts_of(solutions.MultiHeadAttention(6, 8, 8, 0.0, 2), x, EMULATED)
    assert (answer["mixed_devices"], answer["device"], answer["shape"], answer["output"]) == ([], "cuda", [2, 6, 8], None)
    cpu_mask = torch.ones(6, 6, dtype=torch.bool).triu(1)
    answer = child.count_ops(lambda t: t.masked_fill_(cpu_mask, 0.0), [torch.rand(6, 6)], {}, EMULATED)
    assert answer["mixed_devices"] == [MISMATCH] and answer["output"] is None


EMULATED_CASES = {
    # forward on inputs on the emulated GPU -> (mixed devices, output device or what it raised): as a GPU would see it
    "a mask made with device=x.device": (lambda t: t.masked_fill(torch.ones(6, 6, device=t.device).triu(1).bool(), 0),
                                         [], "cuda"),
    "an additive mask made on the CPU": (lambda t: t + torch.full((6, 6), -1.0).triu(1), [MISMATCH],
                                         None),
    "views and in-place ops": (lambda t: t.view(3, 12).transpose(0, 1).mul_(2).unsqueeze(0), [], "cuda"),
    "moved to the CPU in forward": (lambda t: t.softmax(-1).cpu(), [], "cpu"),
    # (answered by the twin, emulated_gpu.Twins: it raised DataDependentOutputException before, which cut the run short)
    "a value read in forward": (lambda t: t * 2 if t.sum().item() == 0 else t, [], "cuda"),
    "a CPU tensor after a value read": (lambda t: t + torch.ones(6, 6) if t.sum().item() > 0 else t, [MISMATCH], None),
    "raised only on the GPU": (lambda t: t.numpy(), [], "RuntimeError"),
    "an expanded view computed on": (lambda t: t[:1].expand(4, 6, 6).exp(), [], "cuda"),
    "a CPU tensor filled in place": (lambda t: torch.zeros(6, 6).add_(t), [MISMATCH], None),
    "a mask made on the input's device only on meta": (
        lambda t: t.masked_fill(torch.ones(6, 6, dtype=torch.bool, device=t.device if t.is_meta else "cpu").triu(1), 0),
        [MISMATCH], None),
    "a CPU scalar": (lambda t: t / torch.tensor(8.0).sqrt(), [], "cuda"),
}


@pytest.mark.parametrize("case", sorted(EMULATED_CASES))
def test_the_emulated_gpu_sees_what_a_gpu_would(case):
    function, mixed, device = EMULATED_CASES[case]
    answer = child.count_ops(function, [torch.rand(6, 6)], {}, EMULATED)
    assert (answer["mixed_devices"], answer.get("device") or answer.get("not_about_devices")) == (mixed, device)


def test_the_fork_server_pays_for_the_emulated_gpu_once(tmp_path):
    # FakeTensorMode's first use imports torch._dynamo and sympy (seconds): the warm-up pays, children inherit
    script = tmp_path / "probe.py"
    script.write_text(
        "import sys, time, torch\n"
        "from autograder.inside import counting, emulated_gpu, zygote\n"
        f"sys.path.insert(0, {str(selftest.SOLUTIONS)!r})\n"
        "import mha\n"
        "zygote.warm_up()\n"
        "warm = [m for m in ('torch._dynamo', 'sympy') if m in sys.modules]\n"
        "module = mha.MultiHeadAttention(4, 6, 8, 0.0, 2)\n"
        "before = set(sys.modules)\n"
        "answer = counting.count_ops(module, [torch.rand(2, 5, 4)], {}, emulated_gpu.EMULATED)\n"
        "print(answer['shape'], answer['device'], answer['mixed_devices'], warm, sorted(set(sys.modules) - before))\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True,
                         cwd=str(PROJECT_ROOT)).stdout
    assert out.split("\n")[0] == "[2, 5, 6] cuda [] ['torch._dynamo', 'sympy'] []"


@pytest.mark.quick
@pytest.mark.parametrize("bad", [None, {"counts": [1, 2]}, {"counts": {"mm": -1}}, {"counts": {"mm": "3"}},
                                 {"counts": {"mm": True}}])
def test_counts_from_the_child_are_checked(bad):
    with pytest.raises(AssertionError, match="could not be counted"):
        efficiency.read_counts(bad, "MultiHeadAttention")


def test_the_grader_loads_its_suites_without_pytest_and_they_keep_their_markers_under_it():
    """Start-up: the batch imports the hidden suites before it forks its workers; pytest (about
    0.25 s to import) is not needed there. Under pytest each suite still carries its part's marker."""
    probe = ("import sys; from autograder import grading; grading.load_rubric(); "
             "print('pytest' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         cwd=str(PROJECT_ROOT), timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "False", run.stderr[-2000:]
    from autograder.suites import test_causal, test_mha

    assert [m.name for m in [test_causal.pytestmark, test_mha.pytestmark]] == ["causal", "mha"]


class _SdpaHeads(torch.nn.Module):
    """The batching check's shape of an SDPA class: one projection, the heads batched, one SDPA call."""

    def __init__(self, d, num_heads):
        super().__init__()
        self.qkv, self.num_heads = torch.nn.Linear(d, 3 * d, bias=False), num_heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.num_heads, d // self.num_heads).permute(2, 0, 3, 1, 4)
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return out.transpose(1, 2).reshape(b, t, d)


def test_attention_is_counted_whole_whichever_kernel_runs_it():
    """Issue 35's H200: with d_out 8, SDPA ran fused for 2 heads (head size 4) and fell back to its math
    (two bmm and a softmax) for 4 heads (head size 2), so two correct SDPA variants were told they loop
    over the heads, on the GPU only. The math fallback is what the CPU runs under sdpa_kernel(MATH):
    the counts, and the batching check's verdict, must not change with the kernel."""
    attention = pytest.importorskip("torch.nn.attention")
    x = torch.rand(2, 6, 8)
    fused = child.count_ops(_SdpaHeads(8, 2).eval(), [x], {})["counts"]
    with attention.sdpa_kernel(attention.SDPBackend.MATH):
        fallback = child.count_ops(_SdpaHeads(8, 4).eval(), [x], {})["counts"]
    assert fused["scaled_dot_product_attention"] == fallback["scaled_dot_product_attention"] == 1
    assert "bmm" not in fallback and efficiency.softmax_calls(fallback) == 0  # the kernel's own, not counted
    assert efficiency.growth_problem(fused, fallback, 2, 4) == ""
    assert efficiency.matmul_calls(fused) == efficiency.matmul_calls(fallback) == 2  # the projection, the call


@pytest.mark.quick
def test_a_head_loop_that_computes_is_told_from_one_that_gathers_by_the_counts():
    """The source's reading exempts a loop whose calls are named like gathering (source_reading.gathers_only:
    view, append); mutant mha-head-loop-named-like-gathering masked each head's scores through a helper's
    method named view and kept mha_batches_the_heads' 2 points. efficiency.per_head_work: the counts at 2
    and 4 heads (as the child counted them for the reference with its heads gathered by a loop, and for that
    mutant) pass the gathering, which grows only in selects, and name the masking, which grows in masked_fill."""
    gathered = {2: {"mm": 3, "bmm": 2, "_softmax": 1, "masked_fill_": 1, "select": 2, "cat": 1, "view": 10},
                4: {"mm": 3, "bmm": 2, "_softmax": 1, "masked_fill_": 1, "select": 4, "cat": 1, "view": 10}}
    masked = {2: {"mm": 3, "bmm": 2, "_softmax": 1, "masked_fill": 2, "select": 2, "stack": 1},
              4: {"mm": 3, "bmm": 2, "_softmax": 1, "masked_fill": 4, "select": 4, "stack": 1}}
    assert efficiency.per_head_work(gathered[2], gathered[4]) == ""
    assert efficiency.per_head_work(masked[2], masked[4]).startswith("its forward computes something once per head")
    assert efficiency.LOOP_HINT in efficiency.per_head_work(masked[2], masked[4])
