"""A part's module that leaves something in the child no operation puts back (a hook on every module,
another module put in sys.modules under a name of the submission's) must not cost the parts that use it
(the redteam lane's leftover 1): the dependency probe reads what is left before and after it runs the
module (inside/child.leftovers) and, where it changed, the part that uses it gets the grader's stand-ins
in a fresh child, where that module's code never runs. Each test failed before (mha 0 of 22)."""
import pytest
from part_edits import failed, grade, scores, submission
from rubric_points import PART

HOOK = '''

def _sabotage(module, args, output):
    if type(module).__name__ in ("MultiHeadAttention", "MultiHeadAttentionWrapper"):
        return output + 1
    return None

torch.nn.modules.module.register_module_forward_hook(_sabotage)
'''
FAKE = '''

import sys as _sys
import types as _types
_fake = _types.ModuleType("mha")
exec("""
import torch
class MultiHeadAttentionWrapper(torch.nn.Module):
    def __init__(self, *a, **k):
        super().__init__()
        raise RuntimeError("broken")
MultiHeadAttention = MultiHeadAttentionWrapper
""", _fake.__dict__)
_sys.modules["mha"] = _fake
'''


def with_causal_appended(tmp_path, code):
    folder = submission(tmp_path)
    with open(folder / "causal.py", "a", encoding="utf-8") as f:
        f.write(code)
    return folder


@pytest.mark.quick
def test_a_hook_on_every_module_left_by_causal_costs_mha_nothing(engine, tmp_path):
    """causal.py registers, at import, a forward hook on every module that shifts MultiHeadAttention's
    output: mha.py is right, and keeps every point; causal's own checks meet no MultiHeadAttention."""
    result = grade(engine, with_causal_appended(tmp_path, HOOK), ["causal", "mha"])
    assert scores(result) == {"causal": PART["causal"], "mha": PART["mha"]}, failed(result, "mha")


def test_a_module_put_in_sys_modules_by_causal_costs_mha_nothing(engine, tmp_path):
    """causal.py puts a broken module in sys.modules under mha's name: mha keeps every point (before: its
    checks met the broken module, and causal's exec made mha's measurements untrusted); causal loses its
    device point only, for its own exec (efficiency.untrusted)."""
    result = grade(engine, with_causal_appended(tmp_path, FAKE), ["causal", "mha"])
    assert scores(result)["mha"] == PART["mha"], failed(result, "mha")
    assert set(failed(result, "causal")) == {"causal_runs_on_the_inputs_device"}


LINEAR_GLOBALS = '''

import torch.nn.modules.linear as _linear_module
_real = _linear_module.F


class _Shifted:
    def __getattr__(self, name):
        return getattr(_real, name)

    @staticmethod
    def linear(x, w, b=None):
        out = _real.linear(x, w, b)
        return out if w.shape[0] in (1, 2) else out + 1


_linear_module.F = _Shifted()
'''


def test_torch_s_own_module_globals_replaced_by_one_part_are_back_for_the_next(engine, tmp_path):
    """self_attention_v2.py replaces the F that nn.Linear.forward reads (torch.nn.modules.linear's global):
    before, causal, graded after it in the same child, lost 21 of 22 points (the child was not retired, the
    namespace not watched); now it is put back before every operation (part_reset._torch_modules) and the
    child is retired after the part."""
    folder = submission(tmp_path)
    with open(folder / "self_attention_v2.py", "a", encoding="utf-8") as f:
        f.write(LINEAR_GLOBALS)
    result = grade(engine, folder, ["self_attention_v2", "causal"])
    assert scores(result) == {"self_attention_v2": PART["self_attention_v2"], "causal": PART["causal"]}, \
        failed(result, "causal")


SOFTMAX_CLASS = "\n\ntorch.nn.Softmax.forward = lambda self, x: torch.zeros_like(x)\n"


def test_a_torch_layer_class_replaced_by_one_part_is_back_for_the_next(engine, tmp_path):
    """self_attention_v2.py replaces nn.Softmax.forward when imported (a class of torch's outside the chapter's
    own layers), and causal.py, graded after it in the same child, uses nn.Softmax(dim=-1): causal keeps
    full marks, as its code is right (the class's namespace is put back before every operation:
    part_reset._watched). Before, causal lost the points of every check of its outputs."""
    folder = submission(tmp_path)
    with open(folder / "self_attention_v2.py", "a", encoding="utf-8") as f:
        f.write(SOFTMAX_CLASS)
    causal = (folder / "causal.py").read_text()
    softmax = "torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)"
    assert softmax in causal
    (folder / "causal.py").write_text(causal.replace(softmax, "nn.Softmax(dim=-1)(attn_scores / keys.shape[-1] ** 0.5)"))
    result = grade(engine, folder, ["self_attention_v2", "causal"])
    assert scores(result) == {"self_attention_v2": PART["self_attention_v2"], "causal": PART["causal"]}, \
        failed(result, "causal")


FLAT_SOFTMAX_KERNEL = '''

import torch.library as _library


@_library.impl("aten::_softmax", "CPU")
def _flat_softmax(x, dim, half_to_float):
    return torch.full_like(x, 1.0 / x.shape[dim])
'''


def test_an_operator_kernel_registered_by_one_part_is_gone_for_the_next(engine, tmp_path):
    """self_attention_v2.py registers, at import, its own CPU kernel for aten::_softmax (torch.library.impl,
    which keeps it for good): every softmax is flat. That is v2's own bug (it loses every check of its outputs);
    causal, right and graded after it, keeps full marks. Before, causal lost 18 of 22 points: the kernel lives
    in torch's dispatcher, which no namespace part_reset reads holds, so the child was not retired; now a
    registration left after a part retires it (part_reset.kernels)."""
    folder = submission(tmp_path)
    with open(folder / "self_attention_v2.py", "a", encoding="utf-8") as f:
        f.write(FLAT_SOFTMAX_KERNEL)
    result = grade(engine, folder, ["self_attention_v2", "causal"])
    assert scores(result)["causal"] == PART["causal"], failed(result, "causal")
    assert "v2_unseen_seeds_and_sizes" in failed(result, "self_attention_v2")


def test_an_operator_kernel_registered_by_causal_costs_mha_nothing(engine, tmp_path):
    """causal.py registers the same flat softmax kernel at import: causal loses its output checks (its own
    bug), mha, whose code is right, keeps every point: the dependency probe sees the registration causal.py
    left (child.leftovers reads part_reset.kernels) and mha gets the grader's stand-ins in a fresh child.
    Before, mha lost the checks of its own outputs to causal.py's kernel."""
    result = grade(engine, with_causal_appended(tmp_path, FLAT_SOFTMAX_KERNEL), ["causal", "mha"])
    assert scores(result)["mha"] == PART["mha"], failed(result, "mha")
    assert "causal_attention_unseen_seeds" in failed(result, "causal")


SAVED_TENSOR_HOOKS = '''

import torch.autograd.graph as _graph

_graph.saved_tensors_hooks(lambda t: t, lambda t: t * 0.5).__enter__()
'''


def test_hooks_on_saved_tensors_entered_by_one_part_are_gone_for_the_next(engine, tmp_path):
    """self_attention_v2.py enters, at import and for good, autograd's default hooks on saved tensors, which
    halve every tensor a backward reads: causal, right and graded after it in the same child, lost its
    gradients check (21 of 22, with a diagnosis about its mask) and v2 its own (8 of 10). The hooks are
    autograd's state, no namespace's; now they are popped before every operation, as a dispatch mode pushed
    at import is (part_reset._saved_hooks), and the child is retired after the part: full marks for both."""
    folder = submission(tmp_path)
    with open(folder / "self_attention_v2.py", "a", encoding="utf-8") as f:
        f.write(SAVED_TENSOR_HOOKS)
    result = grade(engine, folder, ["self_attention_v2", "causal"])
    assert scores(result) == {"self_attention_v2": PART["self_attention_v2"], "causal": PART["causal"]}, \
        failed(result, "causal")
