"""The device checks (`*_runs_on_the_inputs_device`) earn their point on what the emulated GPU observed, never
on its silence.

The child runs the student's class on an emulated GPU (inside/emulated_gpu.py: FakeTensorMode, tensors on cuda:0
without data). A fake tensor holds no value, so a value read in forward (.item(), float(t), `if t.tolist():`) or an
operation whose output's shape depends on values (nonzero) raised there, and such an error was not charged: the
run stopped before anything after it, and the grader's reading of the source names only the factories it
recognises (torch.ones(...) without device=, device="cpu", .cpu()). So a mask made on the CPU after a value read,
with a factory under another name (`ones = torch.ones`, `from torch import ones as make`, `getattr(torch,
"ones")`, a factory kept on self in __init__), was seen by neither, and the device point was given to code that
fails on a GPU: causal 22 of 22 for each case below before. Now each fake tensor has a real twin on the CPU
(emulated_gpu.Twins) which answers the value reads, the run goes on to the CPU mask, and the mismatch is torch's
own observation; and a forward that raises on the emulated GPU what it did not raise on the CPU earns nothing
(what it would have done after is unobserved).

Each grading test grades a copy of the solutions with edits (tests/part_edits.py) and states the scores, the
failed checks and their messages.
"""
import pytest
import torch
from part_edits import grade, scores, submission

from autograder import source_reading
from autograder.inside import counting
from autograder.inside.emulated_gpu import EMULATED

CAUSAL_MASK = "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
CAUSAL_IMPORTS = "import torch.nn as nn\n"
CAUSAL_INIT = "        self.d_out = d_out\n"
MASKED = "        attn_scores.masked_fill_(future, -torch.inf)\n"
MIXES = "forward mixes devices: it makes a tensor on the default device (the CPU)"

# (module-level code, __init__ code, forward code before the masking): a value read, then a mask made on the CPU
# by a factory the reading does not see as one
HIDDEN_CPU_MASKS = {
    "an alias after float()": ("ones = torch.ones\n", "",
                               "        if float(attn_scores.abs().max()) >= 0:\n"
                               "            future = torch.triu(ones(num_tokens, num_tokens), diagonal=1).bool()\n"),
    "an imported name after .item()": ("from torch import ones as make\n", "",
                                       "        if attn_scores.abs().max().item() >= 0:\n"
                                       "            future = make(num_tokens, num_tokens).triu(1).bool()\n"),
    "getattr after .tolist()": ("", "", "        if attn_scores.tolist():\n"
                                        "            future = getattr(torch, 'ones')(num_tokens, num_tokens).triu(1).bool()\n"),
    "a factory kept on self after a bool()": ("", "        self.make = torch.ones\n",
                                              "        if (attn_scores > -1e9).all():\n"
                                              "            future = self.make(num_tokens, num_tokens).triu(1).bool()\n"),
    "an alias after nonzero()": ("ones = torch.ones\n", "",
                                 "        if attn_scores.nonzero().shape[0] >= 0:\n"
                                 "            future = ones(num_tokens, num_tokens).triu(1).bool()\n"),
}


def causal_with(module_code, init_code, forward_code):
    return [("causal", CAUSAL_IMPORTS, CAUSAL_IMPORTS + module_code), ("causal", CAUSAL_INIT, CAUSAL_INIT + init_code),
            ("causal", CAUSAL_MASK, forward_code + MASKED)]


@pytest.mark.parametrize("case", [pytest.param(name, marks=pytest.mark.quick) if name == "an alias after float()"
                                  else name for name in HIDDEN_CPU_MASKS])
def test_a_cpu_mask_after_a_value_read_costs_the_device_point(engine, tmp_path, case):
    """Expected: causal 21, causal_runs_on_the_inputs_device failed with 'mixes devices' (the emulated run went
    past the value read and saw the CPU mask meet the scores on cuda), nothing listed as tampering. Before: 22."""
    result = grade(engine, submission(tmp_path, *causal_with(*HIDDEN_CPU_MASKS[case])), ["causal"])
    failed = {c.name: c.message for c in result.checks if not c.passed}
    assert scores(result) == {"causal": 21}, failed
    assert list(failed) == ["causal_runs_on_the_inputs_device"]
    assert MIXES in failed["causal_runs_on_the_inputs_device"]
    assert result.tampering == []


MHA_MASK = "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
MHA_INIT = "        self.dropout = nn.Dropout(dropout)\n"


def test_a_factory_kept_on_self_after_a_value_read_costs_mha_its_device_point(engine, tmp_path):
    """MultiHeadAttention keeps torch.ones on self in __init__ and, after reading a value in forward, makes its mask
    with it on the CPU. Expected: mha 21, its device check failed with 'mixes devices'. Before: 22."""
    folder = submission(tmp_path, ("mha", MHA_INIT, MHA_INIT + "        self.make = torch.ones\n"),
                        ("mha", MHA_MASK, "        if attn_scores.abs().sum().item() >= 0:\n"
                                          "            future = self.make(num_tokens, num_tokens).triu(1).bool()\n"
                                          "        attn_scores.masked_fill_(future, -torch.inf)\n"))
    result = grade(engine, folder, ["mha"])
    failed = {c.name: c.message for c in result.checks if not c.passed}
    assert scores(result) == {"mha": 21}, failed
    assert list(failed) == ["mha_runs_on_the_inputs_device"] and MIXES in failed["mha_runs_on_the_inputs_device"]


def test_a_forward_that_raises_only_on_the_gpu_earns_no_device_point(engine, tmp_path):
    """forward raises when its inputs are on a GPU (`if x.is_cuda: raise ...`): it fails there. Expected: causal 21,
    the device check failed saying forward did not run to its end on the emulated GPU and the point needs that
    observation. Before: 22 (an error other than mixed devices was not charged)."""
    folder = submission(tmp_path, ("causal", CAUSAL_MASK, "        if x.is_cuda:\n            raise ValueError('later')\n"
                                   + CAUSAL_MASK))
    result = grade(engine, folder, ["causal"])
    failed = {c.name: c.message for c in result.checks if not c.passed}
    assert scores(result) == {"causal": 21}, failed
    assert list(failed) == ["causal_runs_on_the_inputs_device"]
    assert "did not run to its end on the grader's emulated GPU" in failed["causal_runs_on_the_inputs_device"]
    assert "where its tensors are made could not be observed" in failed["causal_runs_on_the_inputs_device"]


VALUE_READS_ON_THE_DEVICE = ("        if float(attn_scores.abs().max()) >= 0 and attn_scores.nonzero().shape[0] >= 0 "
                             "and len(attn_scores.tolist()) == b:\n"
                             "            future = torch.ones(num_tokens, num_tokens, device=x.device).triu(1).bool()\n")


@pytest.mark.quick
def test_value_reads_with_tensors_on_the_inputs_device_keep_full_marks(engine, tmp_path):
    """The same value reads (float(), nonzero(), .tolist()) with the mask made on x.device: correct on a GPU.
    Expected: causal 22 of 22, no check failed."""
    result = grade(engine, submission(tmp_path, *causal_with("", "", VALUE_READS_ON_THE_DEVICE)), ["causal"])
    assert scores(result) == {"causal": 22}, {c.name: c.message for c in result.checks if not c.passed}


@pytest.mark.quick
def test_the_twins_answer_value_reads_with_the_inputs_values():
    """Expected: on the emulated GPU a value read gives the value the CPU gives (the twin's), an output whose shape
    depends on values gets its real shape on cuda, and a CPU tensor made after a value read meets cuda as mixed
    devices, from an FX graph made by hand too; the grader's tensor is left as it was."""
    x = torch.tensor([[1.0, -2.0], [3.0, 0.0]])
    seen = {}

    def forward(t):
        seen["sum"] = float(t.sum())
        seen["list"] = (t * 2).tolist()
        seen["nonzero"] = (tuple(t.nonzero().shape), t.nonzero().device.type, tuple(t[t > 0].shape))
        t.mul_(10)  # in place on the fake input: the grader's x is not touched
        return t + 1

    answer = counting.count_ops(forward, [x], {}, device=EMULATED)
    assert (answer["mixed_devices"], answer["device"], answer["shape"]) == ([], "cuda", [2, 2])
    assert seen == {"sum": 2.0, "list": [[2.0, -4.0], [6.0, 0.0]], "nonzero": ((3, 2), "cuda", (2,))}
    assert x.tolist() == [[1.0, -2.0], [3.0, 0.0]]
    ones = torch.ones
    after_a_read = counting.count_ops(lambda t: t + ones(2, 2) if t.max().item() > 0 else t, [x], {}, device=EMULATED)
    assert after_a_read["mixed_devices"] == ["FakeTensorDeviceMismatchError"]
    graph = torch.fx.Graph()  # torch.ones called from an FX graph made by hand: the reading sees no call of it
    n = graph.placeholder("n")
    graph.output(graph.call_function(torch.ones, (n, n)))
    make = torch.fx.GraphModule(torch.nn.Module(), graph)
    in_a_graph = counting.count_ops(lambda t: t + make(2) if t.max().item() > 0 else t, [x], {}, device=EMULATED)
    assert in_a_graph["mixed_devices"] == ["FakeTensorDeviceMismatchError"]


PROFILE_HOOK = '''import sys
SHAPE = []


def _hook(frame, event, arg):
    if event == "return" and frame.f_code.co_name == "count_ops" and isinstance(arg, dict):
        arg.update(mixed_devices=[], device="cuda", shape=list(SHAPE[-1]))
        arg.pop("not_about_devices", None)
        sys.setprofile(None)


ones = torch.ones
'''
HOOKED_FORWARD = ("        SHAPE.append((b, num_tokens, self.d_out))\n        sys.setprofile(_hook)\n"
                  "        future = ones(num_tokens, num_tokens).triu(1).bool()\n" + MASKED)


def test_a_hook_on_the_interpreter_s_calls_earns_no_measured_point(engine, tmp_path):
    """forward sets a profile hook (sys.setprofile) that sees the child's count_ops return its answer and rewrites it
    (no mixed devices, on cuda, the right shape), and makes its mask on the CPU. Before: causal 22 of 22 (the child's
    answer forged, the reading saw neither the hook nor the aliased factory). Expected: causal 21, the device check
    failed as not evidence, the hook listed for the instructor as tampering."""
    folder = submission(tmp_path, ("causal", CAUSAL_IMPORTS, CAUSAL_IMPORTS + PROFILE_HOOK),
                        ("causal", CAUSAL_MASK, HOOKED_FORWARD))
    result = grade(engine, folder, ["causal"])
    failed = {c.name: c.message for c in result.checks if not c.passed}
    assert scores(result) == {"causal": 21}, failed
    assert list(failed) == ["causal_runs_on_the_inputs_device"]
    assert "reaches into the machinery the measurement relies on" in failed["causal_runs_on_the_inputs_device"]
    assert result.tampering == ["causal.py, line 12: a hook on the interpreter's calls (setprofile)"]


@pytest.mark.quick
def test_the_reading_lists_hooks_on_the_interpreter_s_calls():
    """Expected: sys.setprofile, threading.settrace, a literal getattr of settrace, sys.monitoring, dynamo's
    set_eval_frame, sys.addaudithook and vars(sys)['setprofile'] are each listed as a hook on the interpreter's
    calls; inspect.getargvalues (a frame's locals) as stack frames."""
    for code in ("sys.setprofile(h)", "threading.settrace(h)", "getattr(sys, 'settrace')(h)",
                 "sys.monitoring.register_callback(1, 2, h)", "torch._dynamo.eval_frame.set_eval_frame(h)",
                 "sys.addaudithook(h)", "vars(sys)['setprofile'](h)"):
        found = source_reading.tampering({"m": f"import sys, threading, torch\n\n\ndef f(h):\n    {code}\n"})
        assert any("a hook on the interpreter's calls" in f for f in found), (code, found)
    assert source_reading.tampering({"m": "import inspect\n\n\ndef f(frame):\n    return inspect.getargvalues(frame)\n"}) \
        == ["m.py, line 5: stack frames (getargvalues)"]


@pytest.mark.quick
def test_the_reading_lists_a_look_at_torch_s_function_modes():
    """The counter (counting.WholeAttention) and the emulated GPU (emulated_gpu.OneGPU) run torch function modes
    around the code they measure: code that looks at their stack (torch.overrides._get_current_function_mode_stack,
    _get_current_function_mode, torch._C._get_function_stack_at) can tell it is measured, as it could by the dispatch
    modes. Each is listed as a dispatch mode (it was listed as nothing)."""
    for code in ("torch.overrides._get_current_function_mode_stack()", "torch.overrides._get_current_function_mode()",
                 "torch._C._get_function_stack_at(0)"):
        found = source_reading.tampering({"m": f"import torch\n\n\ndef f():\n    return {code}\n"})
        assert any("a dispatch mode" in f for f in found), (code, found)


def test_a_move_to_cuda_without_an_index_lands_on_the_emulated_gpu_s_device():
    """.cuda() and .to('cuda') go to a GPU machine's current device, cuda:0. torch resolves the index through the
    CUDA device guard, which the emulation lends meta's on a CPU-only build, so both landed on meta, met cuda:0 as
    another device, and `if x.is_cuda: mask = mask.cuda()` (right on a GPU) lost causal's device check (21 of 22;
    the corpus variant learner-masks-made-in-forward-moved-to-the-gpu-when-the-inputs-are-there keeps 22 now). A
    move to the CPU stays one."""
    from autograder.inside.emulated_gpu import EmulatedGPU

    with EmulatedGPU() as gpu:
        x = gpu.tensor(torch.rand(2, 3))
        moved = {"cuda()": torch.ones(2).cuda(), "to('cuda')": torch.ones(2).to("cuda"),
                 "to(device=torch.device('cuda'))": torch.ones(2).to(device=torch.device("cuda")),
                 "to(x.device)": torch.ones(2).to(x.device), "x.cpu()": x.cpu(), "to('cpu')": torch.ones(2).to("cpu")}
        devices = {how: str(t.device) for how, t in moved.items()}
    assert devices == {"cuda()": "cuda:0", "to('cuda')": "cuda:0", "to(device=torch.device('cuda'))": "cuda:0",
                       "to(x.device)": "cuda:0", "x.cpu()": "cpu", "to('cpu')": "cpu"}


def test_the_reading_takes_cuda_as_a_move_and_a_factory_left_on_the_cpu_as_none():
    """The grader's own reading: a mask made without device= and then moved with .cuda() (in a branch on
    x.is_cuda) is not a tensor left on the CPU; the same mask never moved is."""
    moved = ("import torch\nclass A:\n    def forward(self, x):\n"
             "        mask = torch.ones(3, 3).triu(1).bool()\n        if x.is_cuda:\n            mask = mask.cuda()\n"
             "        return x.masked_fill(mask, 0)\n")
    left = moved.replace("        if x.is_cuda:\n            mask = mask.cuda()\n", "")
    assert source_reading.cpu_tensors({"causal": moved}, "A", "causal") == []
    assert source_reading.cpu_tensors({"causal": left}, "A", "causal") == [("causal", 4, "torch.ones")]


READ_MODULE = """import torch
{top}
class CausalAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        {init}
    def forward(self, x):
        {body}
        return x
"""
ASKS = "'cuda' if torch.cuda.is_available() else 'cpu'"


@pytest.mark.parametrize("top, made, expected", [
    ("dev = 'cuda' if torch.cuda.is_available() else 'cpu'", "torch.ones(3, device=dev)", ("causal", 8)),
    ("from torch import cuda\nn = cuda.device_count()", "torch.ones(3, device=x.device)[:n]", ("causal", 9)),
    ("dev = 'cuda' if torch.cuda.is_available() else 'cpu'", "torch.ones(3)", None),  # without device=: that message
    ("print(torch.cuda.is_available())", "torch.ones(3, device=x.device)", None),  # asked, never read by the class
    ("", "torch.ones(3, device='cuda:0')", None)])
def test_a_device_picked_from_the_machine_is_named_where_it_is_read(top, made, expected):
    """efficiency.machine_query: the first place where what the class runs takes a device from the machine (a name
    bound from torch.cuda.is_available(), device_count(), ...), which the mixed-devices message then names (selftest
    mutant learner-causal-mask-on-the-machine-s-device: "comes from the machine"); none where what the class runs
    also makes a tensor on the CPU by the reading, whose own message names it, or where it reads no such answer."""
    from autograder.suites import efficiency

    sources = {"causal": READ_MODULE.format(top=top, init="pass", body=f"m = {made}")}
    assert efficiency.machine_query(sources, "CausalAttention", "causal") == expected


@pytest.mark.parametrize("top, init, body, expected", [
    (f"device = torch.device({ASKS})", "pass", "m = torch.ones(3, device=device)", [("causal", 8)]),
    (f"device = torch.device({ASKS})", "pass", "device = x.device\n        m = torch.ones(3, device=device)", []),
    ("", f"self.dev = {ASKS}", "m = torch.ones(3, device=self.dev)", [("causal", 8)]),
    ("", f"self.dev = {ASKS}", "m = torch.ones(3, device=x.device)", []),  # asked in __init__, never used
    ("import torch as th", "pass", "m = torch.ones(3, device='cpu' if th.version.cuda else x.device)", [("causal", 8)]),
    (f"if __name__ == '__main__':\n    device = {ASKS}", "pass", "m = torch.ones(3, device=device)", []),  # a demo's
    ("from torch import cuda\nn = cuda.device_count()", "pass", "m = x[:n]", [("causal", 9)]),
    ("", "pass", "m = x if getattr(torch.cuda, 'is_available')() else x", [("causal", 8)]),
    ("", "pass", "m = torch.ones(3, device=x.device)", [])])
def test_the_reading_finds_a_device_taken_from_the_machine(top, init, body, expected):
    """source_reading.machine_devices: where what the class runs asks the machine about its devices, or reads a name
    the module's top level (not its __main__ demo) bound from such a question, or an attribute of self an __init__
    set from one; a local name or an unused attribute is not such a read. The mutants
    learner-mha-mask-device-from-a-machine-query-kept-in-init and learner-causal-mask-device-from-a-module-level-
    machine-query kept full marks before (the emulated GPU, a CPU-only build, saw their masks follow the inputs)."""
    source = {"causal": READ_MODULE.format(top=top, init=init, body=body)}
    assert source_reading.machine_devices(source, "CausalAttention", "causal") == expected
