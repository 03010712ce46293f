"""What one part's module does to the interpreter's global state never changes another part's grade
(developers' guide, principle 2; principle 4: no check depends on what a module does at import).

mha.py imports causal.py, and mha's dependency probe runs causal's forward in mha's child: a
setting, mode or patched function left by causal's module reached mha's own checks, before the child
was reset after the part (inside/part_reset.py). Measured 2026-11-28 on the reference with one line
added to causal.py (benchmarks/sweep_side_effects.py, at import and first in CausalAttention.forward):
`torch.set_default_device("cuda")` (on a CPU machine), a `torch.softmax`, `nn.Module.__call__` or
`nn.Linear.forward` replaced, a TorchFunctionMode or TorchDispatchMode entered each cost mha 1 to 13
checks; an inference mode entered and kept in a global, 1; a real-time timer armed in causal's
forward, 2 (its SIGALRM ended mha's child); a `time.sleep(5)`, 14 to 16 (mha's hidden checks timed
out); a thread drawing from torch's generator, 1 (the book example's seeded weights). Now every
operation starts from the child's snapshot (part_reset.restore, before each operation:
child.reset_global_state), and mha's probe of causal meters idleness as a hidden check does
(PartChild.metered_as_hidden, asked by suites/dependencies.probe) and reads from /proc whether a thread or process it left is still running
(a child that leaves one is replaced).
"""
import gc
import shutil
import signal
import sys
import warnings

import numpy as np
import pytest
import torch

from autograder import PROJECT_ROOT, grading
from autograder.inside import child, part_reset, protocol
from autograder.sandbox import client
from autograder.suites import expect, misconceptions, vocabulary

KEPT: list = []  # a learner's context kept open in a global
WATCHED_TOO = (protocol, sys.modules[child.__name__])  # as the child watches them (child.serve)

# what an honest learner's module may leave behind, each undone by part_reset.restore
SPOILS = {
    "matmul_precision": lambda: torch.set_float32_matmul_precision("medium"),
    "backends": lambda: (setattr(torch.backends.cudnn, "benchmark", True), setattr(torch.backends.mkldnn, "enabled", False),
                         torch.backends.cuda.enable_flash_sdp(False), setattr(torch.backends.cuda.matmul, "allow_tf32", True)),
    "flush_denormal": lambda: torch.set_flush_denormal(True),
    "num_threads": lambda: torch.set_num_threads(torch.get_num_threads() + 2),
    "anomaly": lambda: torch.autograd.set_detect_anomaly(True),
    "deterministic": lambda: torch.use_deterministic_algorithms(True, warn_only=True),
    "default_dtype": lambda: torch.set_default_dtype(torch.float64),
    "grad_off": lambda: torch.set_grad_enabled(False),
    "inference_mode": lambda: KEPT.append(torch.inference_mode()) or KEPT[-1].__enter__(),
    "default_device": lambda: torch.set_default_device("cpu"),
    "function_mode": lambda: torch.overrides.TorchFunctionMode().__enter__(),
    "dispatch_mode": lambda: __import__("torch.utils._python_dispatch").utils._python_dispatch.TorchDispatchMode().__enter__(),
    "numpy_errors": lambda: np.seterr(all="raise"),
    "warnings_error": lambda: warnings.simplefilter("error"),
    "recursion_limit": lambda: sys.setrecursionlimit(200),
    "gc_disabled": gc.disable,
    # armed in causal's forward (mha's probe runs it), it ended mha's child 0.4 s later: 2 of mha's checks lost
    "timer": lambda: signal.setitimer(signal.ITIMER_REAL, 30),
    "torch_softmax": lambda: setattr(torch, "softmax", lambda x, dim=-1, **k: torch.zeros_like(x)),
    "F_softmax": lambda: setattr(torch.nn.functional, "softmax", lambda x, dim=-1, **k: torch.zeros_like(x)),
    "Tensor_softmax": lambda: setattr(torch.Tensor, "softmax", lambda self, dim=-1, **k: torch.zeros_like(self)),
    "Module_call": lambda: setattr(torch.nn.Module, "__call__", lambda self, *a, **k: None),
    "removed": lambda: delattr(torch.nn.functional, "relu"),
}


@pytest.mark.quick
@pytest.mark.parametrize("spoil", sorted(SPOILS))
def test_restore_undoes_each_kind_of_global_state(spoil):
    """Each change is seen (the child would be retired after the part) and undone by restore: the
    settings and namespaces are then exactly as in the snapshot. (A helper added to a class stays.)"""
    snap = part_reset.snapshot(also_watched=WATCHED_TOO)
    trace = sys.gettrace()  # a debugger's or coverage's: the snapshot's, kept
    try:
        torch.Tensor.learners_helper = lambda self: self
        SPOILS[spoil]()
        changed = part_reset._switches() != snap["switches"] or not part_reset._namespaces_as_before(snap["namespaces"])
        assert changed, spoil
        part_reset.restore(snap)
        assert torch.Tensor.learners_helper is not None  # added, hides nothing: the learner's to use
        del torch.Tensor.learners_helper
        assert part_reset._switches() == snap["switches"], spoil
        # a name removed and put back is last now: restored, and still a change the reset retires the child for
        assert part_reset._namespaces_as_before(snap["namespaces"]) is (spoil != "removed"), spoil
        assert torch.nn.functional.relu(torch.tensor([-1.0])).tolist() == [0.0]
        assert torch.softmax(torch.zeros(2), dim=-1).tolist() == [0.5, 0.5]
        assert sys.gettrace() is trace
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    finally:
        part_reset.restore(snap)
        part_reset._GUARDS.clear()  # torch's guards undone last in, first out: restore's, then the learner's
        while KEPT:
            KEPT.pop().__exit__(None, None, None)
        assert not torch.is_inference_mode_enabled()
        vars(torch.Tensor).get("learners_helper") and delattr(torch.Tensor, "learners_helper")


@pytest.mark.quick
def test_the_settings_are_found_by_name():
    """torch._C's zero-argument getters with a setter are found without a list kept here (a switch a
    newer torch adds is covered): those the course's learners are known to change among them."""
    names = {getattr(get, "__name__", "") for get, _ in part_reset.SETTERS}
    assert {"_get_float32_matmul_precision", "_get_cudnn_benchmark", "_get_mkldnn_enabled", "_get_cudnn_allow_tf32",
            "_get_deterministic_algorithms", "get_default_dtype", "is_grad_enabled", "get_num_threads"} <= names, names


CAUSAL_IMPORT = "import torch\nimport torch.nn as nn\n"

# (a line a learner put in causal.py, where: at import or first in CausalAttention.forward, whether
# causal keeps full marks): mha, which imports causal and whose probe runs its forward, keeps full marks
CASES = {
    "default_device_cuda_at_import": ('torch.set_default_device("cuda")', "import", True),
    "default_device_cuda_in_forward": ('torch.set_default_device("cuda")', "forward", True),  # forward makes no tensor
    "torch_softmax_at_import": ("torch.softmax = lambda x, dim=-1, **k: torch.zeros_like(x)", "import", True),
    "torch_softmax_in_forward": ("torch.softmax = lambda x, dim=-1, **k: torch.zeros_like(x)", "forward", False),
    "linear_forward_in_forward": ("nn.Linear.forward = lambda self, x: torch.zeros(*x.shape[:-1], self.out_features)",
                                  "forward", False),
    "inference_mode_kept_at_import": ("_INFERENCE = torch.inference_mode()\n_INFERENCE.__enter__()", "import", True),
    # an import that sleeps past the idle allowance after a hidden input (PartChild.IDLE_AFTER_HIDDEN, 2 s):
    # measured in causal's visible turn, causal's hidden turn imports it in a child that has seen no hidden
    # input (runner/attempts.IMPORT_IDLE): its own full marks; mha's probe still finds causal "hangs"
    # (PartChild.metered_as_hidden): the grader's classes
    "sleep_at_import": ("import time\ntime.sleep(3)", "import", True),
    # a thread drawing from torch's generator while the checks run: causal races its own thread (not judged
    # here); mha's probe finds it still running (PartChild.running, from /proc) and mha gets the grader's classes
    "drawing_thread_at_import": ("import threading\ndef _train():\n    while True:\n        torch.randn(64, 64)\n"
                                 "threading.Thread(target=_train, daemon=True).start()", "import", None),
    "module_call_at_import": ("nn.Module.__call__ = lambda self, *a, **k: self.forward(*a, **k) * 0", "import", True),
    "harmless_settings_in_forward": ('torch.set_num_threads(1)\ntorch.set_float32_matmul_precision("high")\n'
                                     'torch.backends.cudnn.benchmark = True\nimport warnings\nwarnings.simplefilter("error")',
                                     "forward", True),
}


def with_line(tmp_path, line, where):
    folder = tmp_path / "student"
    shutil.copytree(PROJECT_ROOT / "solutions" / "ch03", folder, ignore=shutil.ignore_patterns("__pycache__"))
    source = (folder / "causal.py").read_text()
    if where == "import":
        source += "\n" + line + "\n"
    else:
        first = "        b, num_tokens, d_in = x.shape\n"
        assert first in source
        source = source.replace(first, "".join(f"        {text}\n" for text in line.splitlines()) + first, 1)
    (folder / "causal.py").write_text(source)
    return folder


@pytest.mark.skipif(not client.plan()["room"], reason="this machine cannot build the sandbox")
@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.quick) if c == "torch_softmax_in_forward" else c
                                  for c in sorted(CASES)])
def test_another_parts_side_effect_costs_mha_nothing(engine, tmp_path, case):
    line, where, harmless = CASES[case]
    rubric, suites, sandbox = engine
    grade = grading.grade_submission(with_line(tmp_path, line, where), rubric, suites, sandbox, seed=1,
                                     parts=["causal", "mha"], figures=False)
    lost = {part: [(c.name, c.message) for c in grade.checks if c.part == part and not c.passed] for part in ("causal", "mha")}
    assert lost["mha"] == [], f"{case}: mha lost points to causal.py's line"
    if harmless is None:
        return
    if harmless:
        assert lost["causal"] == [], f"{case}: causal lost points to a harmless line (or one at import)"
    else:  # graded on its own merit: its own part loses points, with the check's own words
        assert lost["causal"] and all(message for _, message in lost["causal"]), case


@pytest.mark.skipif(not client.plan()["room"], reason="this machine cannot build the sandbox")
def test_a_slow_import_is_the_modules_own_time_a_sleep_in_forward_is_charged(engine, tmp_path):
    """Principle 4: what a module does at import never costs its hidden checks. causal.py sleeping 3 s at
    import lost 21 of causal's 22 points at 1191c80 (its hidden checks imported it after a hidden input, past
    the 2 s idle allowance); its import is now measured in the visible turn and taken, in the hidden turn, by
    a child that has seen no hidden input: 22/22. The same sleep in forward, after a hidden input, is still
    charged to causal, in the words it got before (4/22 with --seed 24 at 1191c80)."""
    rubric, suites, sandbox = engine
    grades = {where: grading.grade_submission(with_line(tmp_path / where, "import time\ntime.sleep(3)", where), rubric,
                                              suites, sandbox, seed=1, parts=["causal"], figures=False)
              for where in ("import", "forward")}
    at_import = grades["import"].parts["causal"]
    assert at_import.score == at_import.max_score == 22, [(c.name, c.message) for c in grades["import"].checks]
    in_forward = grades["forward"].parts["causal"]
    assert in_forward.score < 22
    assert in_forward.problem == "the causal process " + vocabulary.IDLE.format(seconds=client.PartChild.IDLE_AFTER_HIDDEN)


def _edited(folder, module, find, replace):
    path = folder / f"{module}.py"
    source = path.read_text()
    assert source.count(find) == 1, (module, find)
    path.write_text(source.replace(find, replace))


@pytest.mark.skipif(not client.plan()["room"], reason="this machine cannot build the sandbox")
def test_a_slow_import_of_mha_costs_nothing_where_its_checks_run_again_on_its_own_causal(engine, tmp_path):
    """Principle 4, where mha uses the grader's classes (causal.py is wrong: scaled by d_k): a failed mha check is
    run again with the student's own causal (runner/check.run_dependent_check), which imported mha.py again after
    a hidden input. mha.py sleeping 3 s at import, with one bug of its own (dropout never applied), lost 7 of mha's
    22 points at c3f6e03 (its dropout check's 2, then 'timed out: it waited or slept' for the 5 checks after it)
    where the same code without the sleep loses 2. Now the part's module is imported with the student's own causal
    before the stand-ins come and the child keeps each set of modules (inside/child.substitute): 2 lost, the
    dropout check's, in its own words."""
    rubric, suites, sandbox = engine
    scores = {}
    for sleepy in (False, True):
        folder = tmp_path / f"sleepy-{sleepy}"
        shutil.copytree(PROJECT_ROOT / "solutions" / "ch03", folder, ignore=shutil.ignore_patterns("__pycache__"))
        _edited(folder, "causal", "torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)",
                "torch.softmax(attn_scores / keys.shape[-1], dim=-1)")
        _edited(folder, "mha", "        attn_weights = self.dropout(attn_weights)\n", "")
        if sleepy:
            _edited(folder, "mha", "import torch\n", "import time\n\nimport torch\n\ntime.sleep(3)\n")
        grade = grading.grade_submission(folder, rubric, suites, sandbox, seed=1, parts=["causal", "mha"], figures=False)
        scores[sleepy] = (grade.parts["mha"].score, [(c.name, c.message) for c in grade.checks
                                                     if c.part == "mha" and not c.passed])
    assert scores[False][0] == 20 and [name for name, _ in scores[False][1]] == ["mha_causal_and_dropout"], scores[False]
    assert scores[True] == scores[False], scores[True]


def _medium_precision_changes_a_float32_product():
    """Whether torch.set_float32_matmul_precision("medium") changes a float32 product on this machine's CPU
    (bf16 where the CPU has it: the course's Xeon does; elsewhere it may change nothing)."""
    a, b = torch.rand(2, 64, 64, generator=torch.Generator().manual_seed(0))
    before, exact = torch.get_float32_matmul_precision(), a @ b
    torch.set_float32_matmul_precision("medium")
    try:
        return not torch.equal(a @ b, exact)
    finally:
        torch.set_float32_matmul_precision(before)


@pytest.mark.skipif(not client.plan()["room"], reason="this machine cannot build the sandbox")
def test_a_setting_changed_in_forward_is_named_as_seen(engine, tmp_path):
    """Principle 2: a bug loses points in its own part with a message naming what the grader observed.
    `torch.set_float32_matmul_precision("medium")` first in causal's forward failed the dropout check with
    "is dropout applied to the scores, the values or twice?" (seed 24, at 1191c80) and
    `torch.set_grad_enabled(False)` the gradient check with nn.Parameter(..., requires_grad=False)'s words
    (misconceptions.NO_GRADIENT): the child now reads torch's switches after each operation
    (part_reset.changed) and the check's diagnosis names the one left changed. Still charged to causal,
    nothing to mha; where "medium" changes no float32 product (a CPU without bf16), nothing is lost."""
    rubric, suites, sandbox = engine
    cases = {"precision": ('torch.set_float32_matmul_precision("medium")', misconceptions.LOWER_PRECISION),
             "grad": ("torch.set_grad_enabled(False)", misconceptions.GRAD_SWITCHED_OFF)}
    for case, (line, said) in cases.items():
        grade = grading.grade_submission(with_line(tmp_path / case, line, "forward"), rubric, suites, sandbox, seed=24,
                                         parts=["causal", "mha"], figures=False)
        lost = {part: [(c.name, c.message) for c in grade.checks if c.part == part and not c.passed]
                for part in ("causal", "mha")}
        assert lost["mha"] == [], case
        if case == "precision" and not _medium_precision_changes_a_float32_product():
            assert lost["causal"] == [], lost
            continue
        assert lost["causal"] and all(message == said for _, message in lost["causal"]), (case, lost["causal"])
        assert grade.parts["causal"].score < grade.parts["causal"].max_score


@pytest.mark.quick
def test_a_changed_setting_explains_only_what_it_can():
    """misconceptions.setting_changed: gradients switched off explain a gradient that cannot flow back, not
    wrong values; a lower matmul precision explains wrong values (or a suite's own assertion), not a shape,
    a type or an exception; a harmless switch explains nothing, and the check keeps its own words."""
    no_gradient = expect.Mismatch("...", cause=misconceptions.NO_GRADIENT, kind="raised")
    values = expect.Mismatch("the output is wrong", kind="values")
    shape = expect.Mismatch("the output has the wrong shape", kind="shape")
    assert misconceptions.setting_changed({"is_grad_enabled"}, no_gradient) == misconceptions.GRAD_SWITCHED_OFF
    assert misconceptions.setting_changed({"inference_mode"}, no_gradient) == misconceptions.GRAD_SWITCHED_OFF
    assert misconceptions.setting_changed({"is_grad_enabled"}, values) == ""
    assert misconceptions.setting_changed({"_get_float32_matmul_precision"}, values) == misconceptions.LOWER_PRECISION
    assert misconceptions.setting_changed({"_get_float32_matmul_precision"}, AssertionError("x")) == \
        misconceptions.LOWER_PRECISION
    assert misconceptions.setting_changed({"get_default_dtype"}, values) == misconceptions.DTYPE_CHANGED
    assert misconceptions.setting_changed({"_get_float32_matmul_precision"}, shape) == ""
    assert misconceptions.setting_changed({"_get_float32_matmul_precision"}, no_gradient) == ""
    assert misconceptions.setting_changed({"get_num_threads", "_get_cudnn_benchmark"}, values) == ""


def test_the_child_names_the_switches_an_operation_left_changed():
    """part_reset.changed, as the child calls it after each operation: torch's names of the switches that
    differ from the snapshot ([] when none); restore() puts them back."""
    snap = part_reset.snapshot(also_watched=WATCHED_TOO)
    try:
        assert part_reset.changed(snap) == []
        torch.set_grad_enabled(False)
        torch.set_float32_matmul_precision("medium")
        assert {"is_grad_enabled", "_get_float32_matmul_precision"} <= set(part_reset.changed(snap))
        with torch.inference_mode():
            assert "inference_mode" in part_reset.changed(snap)
    finally:
        part_reset.restore(snap)
    assert part_reset.changed(snap) == []
