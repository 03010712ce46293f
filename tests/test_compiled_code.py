"""Compiled and scripted student code (torch.compile, TorchScript) and operators of the student's own
(torch.library), graded in the real sandbox.

A learner may wrap a forward or a helper in torch.compile, or script or trace a helper: the code is still
theirs, and correct code keeps full marks. The room cannot compile (inductor wants a C++ compiler, worker
processes and a cache folder): the fork server sets torch.compile to run the code as written
(inside/part_reset.compile_eagerly, put back before every operation). TorchScript runs in the room as it is;
its operations go through torch's dispatcher, which the batching check's counter and the emulated GPU see.

An operator whose kernel the submission registers itself (torch.library.custom_op, a Library's impl) runs
below the counter's dispatch mode and, on the emulated GPU, only as its fake version: it could hide a head loop
from the batching check and a CPU tensor from the device check. The child names such a call
(inside/counting.own_kernels) and the grader's reading lists the registration as tampering
(source_reading.GRADER_HOOKS, "an operator kernel of its own"): the measured checks earn nothing. The reading also
names a tensor put on the CPU by name (device="cpu", .cpu()), which the emulated GPU observes too, past a value
read (tests/test_device_evidence.py).

Each grading test grades a copy of the solutions with edits (tests/part_edits.py) in the parts causal and mha,
and states the scores, the failed checks and their messages.
"""
import pytest
import torch
from part_edits import grade, run_one, scores, submission

from autograder import source_reading
from autograder.inside import counting
from autograder.inside.emulated_gpu import EMULATED
from autograder.suites import efficiency

PARTS = ["causal", "mha"]
FULL = {"causal": 22, "mha": 22}

CAUSAL_SOFTMAX = "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
CAUSAL_CLASS = "class CausalAttention(nn.Module):"
MHA_FORWARD = '''    def forward(self, x):
        """x (batch, num_tokens, d_in) -> context vectors'''


def helper_in_causal(helper, call):
    """causal.py's softmax done by a helper defined before CausalAttention (helper: its source), called as `call`."""
    return [("causal", CAUSAL_CLASS, f"{helper}\n\n\n{CAUSAL_CLASS}"),
            ("causal", CAUSAL_SOFTMAX, f"        attn_weights = {call}\n")]


LEARNER_VARIANTS = {
    # @torch.compile on MultiHeadAttention.forward: 5 of 22 before (InductorError: no working C++ compiler, on every
    # call, and the part timed out "looking for a loop that never ends")
    "compile_decorates_forward": [("mha", MHA_FORWARD, "    @torch.compile\n" + MHA_FORWARD)],
    # forward = torch.compile(forward) in the class body, mode and all
    "compile_assigned_in_the_class": [("mha", "        return self.out_proj(context)\n        ### END SOLUTION\n",
                                       "        return self.out_proj(context)\n        ### END SOLUTION\n\n"
                                       "    forward = torch.compile(forward, mode=\"reduce-overhead\")\n")],
    # a helper compiled with fullgraph=True: 4 of 22 before (the same error); with torch's switch alone
    # (torch._dynamo.config.disable) it raised "found no compiled frames" on every call
    "compile_fullgraph_helper": helper_in_causal(
        "@torch.compile(fullgraph=True)\ndef scaled_softmax(scores, d):\n    return torch.softmax(scores / d**0.5, dim=-1)",
        "scaled_softmax(attn_scores, keys.shape[-1])"),
    "jit_script_helper": helper_in_causal(
        "@torch.jit.script\ndef scaled_softmax(scores: torch.Tensor, d: int) -> torch.Tensor:\n"
        "    return torch.softmax(scores / d**0.5, dim=-1)",
        "scaled_softmax(attn_scores, keys.shape[-1])"),
    "jit_trace_helper": helper_in_causal(
        "def _scaled_softmax(scores, d):\n    return torch.softmax(scores / d.sqrt(), dim=-1)\n\n\n"
        "scaled_softmax = torch.jit.trace(_scaled_softmax, (torch.rand(2, 3, 3), torch.tensor(2.0)))",
        "scaled_softmax(attn_scores, torch.tensor(float(keys.shape[-1])))"),
}


@pytest.mark.parametrize("variant", [pytest.param(name, marks=pytest.mark.quick) if name == "compile_decorates_forward"
                                     else name for name in LEARNER_VARIANTS])
def test_compiled_or_scripted_learner_code_keeps_full_marks(engine, tmp_path, variant):
    """Expected: causal 22 of 22 and mha 22 of 22, no check failed, nothing listed as tampering, for each
    correct variant that compiles, scripts or traces its forward or a helper. Before, the torch.compile ones
    lost every check that ran the compiled code (mha 5, causal 4), each with inductor's error."""
    result = grade(engine, submission(tmp_path, *LEARNER_VARIANTS[variant]), PARTS)
    assert scores(result) == FULL, [(c.name, c.message) for c in result.checks if not c.passed]
    assert result.tampering == []


SWITCHED_BACK_ON = """

import torch._dynamo  # noqa: E402

torch._dynamo.config.disable = False
torch.compiler.set_stance("default")
"""


def test_a_module_that_switches_compiling_back_on_compiles_no_call_of_another_part(engine, tmp_path):
    """causal.py switches torch.compile back on at import (torch._dynamo.config.disable = False, the default
    stance); mha.py, which imports it, compiles its forward with @torch.compile. Expected: causal 22 and mha 22
    (the switch is put back before every operation, part_reset.restore). Before, mha's every call raised
    inductor's error (no C++ compiler in the room): another part's code cost mha its marks."""
    folder = submission(tmp_path, *LEARNER_VARIANTS["compile_decorates_forward"],
                        ("causal", "        return attn_weights @ values\n        ### END SOLUTION\n",
                         "        return attn_weights @ values\n        ### END SOLUTION\n" + SWITCHED_BACK_ON))
    result = grade(engine, folder, PARTS)
    assert scores(result) == FULL, [(c.name, c.message) for c in result.checks if not c.passed]


COMPILE_IN_THE_ROOM = '''import os
import threading

import torch


@torch.compile(fullgraph=True)
def doubled_softmax(x):
    return torch.softmax(x, dim=-1) * 2


def work():
    compiled_module = torch.compile(torch.nn.Linear(3, 3), backend="inductor")
    y = doubled_softmax(torch.zeros(3))
    compiled_module(torch.ones(2, 3))
    others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())]
    left = {"tmp": os.listdir("/tmp"), "threads": threading.active_count(), "tasks": len(os.listdir("/proc/self/task")),
            "processes": others, "eager": torch.allclose(y, torch.full((3,), 2 / 3)),
            "cache": os.environ.get("TORCHINDUCTOR_CACHE_DIR")}
    if left == {"tmp": [], "threads": 1, "tasks": 1, "processes": [], "eager": True, "cache": "/tmp"}:
        return "done"
    raise ValueError(repr(left))
'''


@pytest.mark.quick
def test_torch_compile_in_the_room_runs_the_code_as_written_and_leaves_nothing(engine, tmp_path):
    """Expected: the check passes: a function compiled with fullgraph=True and a module compiled with inductor
    return eager's values, and nothing is left (no file in /tmp, no thread, no other process; inductor's cache
    folder the part's own /tmp, which exists), within 5 s of CPU. Before, the first call raised InductorError
    (no working C++ compiler in the room) after seconds of the part's CPU time; with torch's switch alone, each
    torch.compile made /tmp/torchinductor_<user> in the part's /tmp."""
    run = run_one(engine, tmp_path, COMPILE_IN_THE_ROOM, timeout=5)
    assert [r.passed for r in run.results] == [True], [(r.message, r.student_text) for r in run.results]
    assert not run.timed_out and not run.problem


OWN_OPERATOR = '''

def _heads(queries, keys, values, mask, p):
    """Each head's context vectors, one head at a time."""
    context = []
    for h in range(queries.shape[1]):
        scores = (queries[:, h] @ keys[:, h].transpose(1, 2)).masked_fill(mask, -torch.inf)
        weights = torch.softmax(scores / queries.shape[-1] ** 0.5, dim=-1)
        context.append(torch.nn.functional.dropout(weights, p) @ values[:, h])
    return torch.stack(context, 1)


@torch.library.custom_op("learner::heads", mutates_args=())
def heads(queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, mask: torch.Tensor,
          p: float) -> torch.Tensor:
    return _heads(queries, keys, values, mask, p)


def _keep(ctx, inputs, output):
    ctx.save_for_backward(*inputs[:4])


def _backward(ctx, grad):
    queries, keys, values, mask = ctx.saved_tensors
    inputs = [t.detach().requires_grad_() for t in (queries, keys, values)]
    with torch.enable_grad():
        out = _heads(*inputs, mask, 0.0)
    return (*torch.autograd.grad(out, inputs, grad), None, None)


heads.register_autograd(_backward, setup_context=_keep)
'''
MHA_BATCHED = """        attn_scores = queries @ keys.transpose(2, 3)  # (b, num_heads, num_tokens, num_tokens)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / self.head_dim**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context = (attn_weights @ values).transpose(1, 2)  # (b, num_tokens, num_heads, head_dim)"""
MHA_THROUGH_THE_OPERATOR = """        mask = self.mask.bool()[:num_tokens, :num_tokens]
        p = self.dropout.p if self.training else 0.0
        context = torch.ops.learner.heads(queries, keys, values, mask, p).transpose(1, 2)"""


def test_a_head_loop_in_an_operator_of_its_own_earns_no_measured_point(engine, tmp_path):
    """mha.py runs its heads one by one in a torch.library.custom_op, called as torch.ops.learner.heads: the
    counter saw one 'heads' call and none of its per-head matmuls, and the reading cannot follow torch.ops to
    the loop. Before: mha 22 of 22. Expected now: mha 19: the batching check (2) names the call of an operator of
    its own (the child's count, inside/counting.own_kernels), the device check (1) says the measurement is not
    evidence (the grader's reading: the registration, listed for the instructor as tampering); causal 22."""
    folder = submission(tmp_path, ("mha", MHA_BATCHED, MHA_THROUGH_THE_OPERATOR),
                        ("mha", "from causal import CausalAttention\n", "from causal import CausalAttention\n" + OWN_OPERATOR))
    result = grade(engine, folder, PARTS)
    failed = {c.name: c for c in result.checks if not c.passed}
    assert scores(result) == {"causal": 22, "mha": 19}, {n: c.message for n, c in failed.items()}
    assert sorted(failed) == ["mha_batches_the_heads", "mha_runs_on_the_inputs_device"]
    assert "its forward calls an operator whose kernel the submission registered itself" in \
        failed["mha_batches_the_heads"].message  # the child's word: checked first
    assert "reaches into the machinery the measurement relies on" in failed["mha_runs_on_the_inputs_device"].message
    assert "(mha.py, line 18: an operator kernel of its own)" in failed["mha_runs_on_the_inputs_device"].detail
    assert result.tampering == ["mha.py, line 18: an operator kernel of its own (custom_op)"]


SCRIPTED_FROM_TEXT = '''

_scripted = torch.jit.CompilationUnit("""
def scores_per_head(queries, keys):
    heads = []
    for h in range(queries.shape[1]):
        heads.append(torch.matmul(queries[:, h], keys[:, h].transpose(1, 2)))
    return torch.stack(heads, 1)
""")
'''


def test_a_head_loop_in_torchscript_made_from_text_loses_the_batching_point(engine, tmp_path):
    """mha.py computes each head's scores in a loop written in a TorchScript string (torch.jit.CompilationUnit),
    which the grader's reading cannot see into. Expected: mha 20, the batching check failed for growing matmuls:
    TorchScript's operations go through torch's dispatcher, which the counter sees (passed before too: a guard)."""
    folder = submission(tmp_path, ("mha", "from causal import CausalAttention\n",
                                   "from causal import CausalAttention\n" + SCRIPTED_FROM_TEXT),
                        ("mha", "        attn_scores = queries @ keys.transpose(2, 3)",
                         "        attn_scores = _scripted.scores_per_head(queries, keys)"))
    result = grade(engine, folder, PARTS)
    failed = {c.name: c.message for c in result.checks if not c.passed}
    assert scores(result) == {"causal": 22, "mha": 20}, failed
    assert list(failed) == ["mha_batches_the_heads"]
    assert "more matrix multiplications" in failed["mha_batches_the_heads"]


OWN_MASKING = '''import torch.nn as nn


@torch.library.custom_op("learner::causal_weights", mutates_args=())
def causal_weights(scores: torch.Tensor) -> torch.Tensor:
    n = scores.shape[-1]
    future = torch.triu(torch.ones(n, n), diagonal=1).bool()
    return torch.softmax(scores.masked_fill(future, -torch.inf), dim=-1)


@causal_weights.register_fake
def _(scores):
    return torch.empty_like(scores)


def _keep(ctx, inputs, output):
    ctx.save_for_backward(output)


def _backward(ctx, grad):
    weights, = ctx.saved_tensors
    return weights * (grad - (grad * weights).sum(-1, keepdim=True))


causal_weights.register_autograd(_backward, setup_context=_keep)
'''
CAUSAL_MASKING = """        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)"""


def test_a_cpu_mask_in_an_operator_of_its_own_earns_no_device_point(engine, tmp_path):
    """causal.py masks in a custom op whose kernel makes its mask on the CPU (torch.ones without device=: it
    fails on a GPU) and whose fake version, which is all the emulated GPU runs, returns a tensor like its input.
    Before: causal 22 of 22. Expected now: causal 21, its device check failed, not evidence; mha (the grader's
    CausalAttention under it where it needs one) 22."""
    folder = submission(tmp_path, ("causal", CAUSAL_MASKING, "        attn_weights = torch.ops.learner.causal_weights("
                                   "attn_scores / keys.shape[-1] ** 0.5)"),
                        ("causal", "import torch.nn as nn\n", OWN_MASKING))
    result = grade(engine, folder, PARTS)
    failed = {c.name: c.message for c in result.checks if not c.passed}
    assert scores(result) == {"causal": 21, "mha": 22}, failed
    assert list(failed) == ["causal_runs_on_the_inputs_device"]
    assert "reaches into the machinery the measurement relies on" in failed["causal_runs_on_the_inputs_device"]


@pytest.fixture
def own_operator(monkeypatch):
    """An operator of a test namespace defined here, with a CPU kernel and a fake version; torch's operators as
    they were before it (counting.settle, the fork server's) -> the operator; removed afterwards."""
    monkeypatch.setitem(counting.TORCH_OPERATORS, "namespaces", counting.TORCH_OPERATORS["namespaces"])
    monkeypatch.setitem(counting.TORCH_OPERATORS, "kernels", None)
    counting.settle()
    library = torch.library.Library("ch03_own_kernel_test", "FRAGMENT")
    library.define("twice(Tensor x) -> Tensor")
    library.impl("twice", lambda x: torch.cat([x, x], -1)[..., :x.shape[-1]] * 2, "CPU")
    library._register_fake("twice", lambda x: torch.empty_like(x))
    try:
        yield torch.ops.ch03_own_kernel_test.twice
    finally:
        library._destroy()


class TwiceLinear(torch.nn.Module):
    def __init__(self, operator=None):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)
        self.operator = operator

    def forward(self, x):
        y = self.linear(x)
        return self.operator(y) if self.operator is not None else y * 2


def test_the_child_names_a_call_of_an_operator_of_its_own(own_operator, monkeypatch):
    """Expected: count_ops of a forward that calls an operator torch did not have when the child settled answers
    "elsewhere": OWN_KERNEL, on the CPU and on the emulated GPU, and read_counts fails it in the grader's words;
    the same forward with torch's own operations answers no OWN_KERNEL on either. (Work outside the counting
    thread is not looked for here: this test process has the engine's fork server as a child.)"""
    monkeypatch.setattr(counting.Elsewhere, "ran", lambda self: "")
    x = torch.rand(2, 3, 4)
    own = counting.count_ops(TwiceLinear(own_operator).eval(), [x], {})
    assert own["elsewhere"] == counting.OWN_KERNEL == efficiency.OWN_KERNEL
    assert counting.count_ops(TwiceLinear(own_operator).eval(), [x], {}, device=EMULATED)["elsewhere"] == counting.OWN_KERNEL
    with pytest.raises(AssertionError, match="an operator whose kernel the submission registered itself"):
        efficiency.read_counts(own, "MultiHeadAttention")
    assert counting.count_ops(TwiceLinear().eval(), [x], {})["elsewhere"] == ""
    assert counting.count_ops(TwiceLinear().eval(), [x], {}, device=EMULATED)["elsewhere"] == ""


def test_a_kernel_of_its_own_for_one_of_torch_s_operators_is_named_too(own_operator):
    """Expected: after a CPU kernel for aten::_softmax is registered from Python (here in a test namespace's stead,
    the registry as torch.library keeps it), a forward that calls aten::_softmax is named OWN_KERNEL; one that
    does not call it is not."""
    counter = counting.Counter()
    counter.operators.add(torch.ops.aten._softmax.default)
    assert counting.own_kernels(counter.operators) == ""
    for key in ("aten/_softmax/CPU", "aten/_softmax.out/CPU"):  # (an impl given an overload's name: its key names it)
        torch.library._impls.add(key)
        try:
            assert counting.own_kernels(counter.operators) == counting.OWN_KERNEL
            assert counting.own_kernels({torch.ops.aten.bmm.default}) == ""
        finally:
            torch.library._impls.discard(key)


VALUE_READ_THEN_CPU_MASK = """        if float(attn_scores.abs().max()) >= 0:
            future = torch.triu(torch.ones(num_tokens, num_tokens, device="cpu"), diagonal=1).bool()
        attn_scores.masked_fill_(future, -torch.inf)
"""


def test_a_mask_made_on_the_cpu_by_name_costs_the_device_point(engine, tmp_path):
    """causal.py reads a value in forward (float(...)) and makes its mask with device="cpu" written out: on a GPU the
    mask meets the scores on the GPU and forward fails. Before: causal 22 of 22 (the reading took device= as following
    the inputs, and the emulation was cut short by the value read, which a fake tensor cannot answer). Expected:
    causal 21, its device check failed: the emulated run goes past the value read (the fake tensors' real twins
    answer it, tests/test_device_evidence.py) and sees the mask meet the scores; the grader's reading names it
    too (test_the_reading_names_tensors_put_on_the_cpu_by_name). mha 22."""
    folder = submission(tmp_path, ("causal", "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, "
                                   ":num_tokens], -torch.inf)\n", VALUE_READ_THEN_CPU_MASK))
    result = grade(engine, folder, PARTS)
    failed = {c.name: c for c in result.checks if not c.passed}
    assert scores(result) == {"causal": 21, "mha": 22}, {n: c.message for n, c in failed.items()}
    assert list(failed) == ["causal_runs_on_the_inputs_device"]
    assert "CausalAttention.forward mixes devices" in failed["causal_runs_on_the_inputs_device"].detail
    assert source_reading.cpu_tensors({"causal": (folder / "causal.py").read_text()}, "CausalAttention", "causal")


CPU_BY_NAME = """import torch


class A(torch.nn.Module):
    def forward(self, x):
        a = torch.ones(3, device=torch.device("cpu"))
        b = x.cpu()
        c = x.to("cpu")
        d = torch.zeros(3, device="cpu:0")
        e = torch.ones(3, device="cpu").to(x.device)
        f = x.to(x.device) + torch.zeros(2, device=x.device) + x.to(device=x.device)
        return a, b, c, d, e, f
"""


@pytest.mark.quick
def test_the_reading_names_tensors_put_on_the_cpu_by_name():
    """Expected: the reading lists a factory given the CPU written out (device="cpu", "cpu:0",
    torch.device("cpu")) and a move to the CPU (.cpu(), .to("cpu")); not a CPU tensor moved on to x.device,
    nor anything made or moved to x.device."""
    assert source_reading.cpu_tensors({"m": CPU_BY_NAME}, "A", "m") == [
        ("m", 6, "torch.ones"), ("m", 7, ".cpu"), ("m", 8, ".to"), ("m", 9, "torch.zeros")]


NATIVE_FROM_TMP = '''import importlib
import importlib.util
import os
import shutil
import sys


def work():
    # a small extension module of Python's own, copied to /tmp as a submission would write one from its data
    for name in ("xxlimited_35", "xxlimited", "_uuid", "_crypt", "_bisect", "_json"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin and spec.origin.endswith(".so"):
            break
    else:
        return "done"  # (a Python with every extension built in: nothing to copy)
    shutil.copy(spec.origin, os.path.join("/tmp", os.path.basename(spec.origin)))
    sys.path.insert(0, "/tmp")
    sys.modules.pop(name, None)
    try:
        loaded = importlib.import_module(name)
    except ImportError as e:
        return "done" if "failed to map segment" in str(e) else repr(e)
    return "native code loaded from " + loaded.__file__
'''


@pytest.mark.quick
def test_no_native_code_of_the_submission_s_own_runs_in_the_room(engine, tmp_path):
    """A shared object written into the part's /tmp (here a copy of one of Python's own extension modules; a
    submission would write its own from base64 in a module or a .txt) and imported from there: expected refused
    by the kernel ("failed to map segment": /tmp is noexec), the check passes. Before, the import loaded it and ran
    its native code, which neither the reading nor the counter sees (an extension built for this Python, written
    from a string, no name the reading lists)."""
    run = run_one(engine, tmp_path, NATIVE_FROM_TMP, timeout=5)
    assert [r.passed for r in run.results] == [True], [(r.message, r.student_text) for r in run.results]
