"""Running a folder of chapter modules on an emulated GPU (issue 35): what a CUDA card would say
about its devices, on a CPU-only machine.

`device_problems(folder, parts)` imports the folder's modules (in this process, forgotten after),
builds each part's functions and classes as the book does, on the CPU, and runs them inside
autograder/inside/emulated_gpu.EmulatedGPU with inputs on the emulated cuda:0 (modules moved
there as module.to('cuda') would): -> {"part.what": problem}, empty when every call keeps to the
inputs' device and returns tensors on cuda. A problem is "mixed devices: <error>" (a tensor made
on the CPU met one on cuda), "off the device: ..." (an output left the inputs' device) or
"error: ..." (anything else raised; a value read such as .item() is answered by the fake tensor's
real twin, emulated_gpu.Twins, and the run goes on). numpy_attention makes no torch tensor and is not run.
"""
import importlib
import sys
from contextlib import contextmanager
from pathlib import Path

import torch

from autograder.inside import demo_lines, emulated_gpu

PARTS = ("simple_attention", "self_attention_v1", "self_attention_v2", "weight_transfer", "causal", "mha",
         "exercises")
MODULE_NAMES = PARTS + ("numpy_attention",)


@contextmanager
def imported(folder):
    """The folder's chapter modules importable by name (`from causal import ...`), forgotten after;
    imported as the sandboxed child imports them (inside/demo_lines.Finder: a top-level demo line that
    raises is skipped, as where the submission is graded)."""
    saved = {name: sys.modules.pop(name) for name in MODULE_NAMES if name in sys.modules}
    finder, skipped = demo_lines.Finder(str(folder), MODULE_NAMES), list(demo_lines.SKIPPED)
    sys.path.insert(0, str(folder))
    sys.meta_path.insert(0, finder)
    try:
        yield lambda name: importlib.import_module(name)
    finally:
        sys.meta_path.remove(finder)
        demo_lines.SKIPPED[:] = skipped
        sys.path.remove(str(folder))
        for name in MODULE_NAMES:
            sys.modules.pop(name, None)
        sys.modules.update(saved)


def _cases(load, part):
    """(what, build, call) for part: build() runs on the CPU and returns the arguments (modules
    and tensors), call(*arguments) runs on the emulated GPU."""
    torch.manual_seed(0)
    m = load(part)
    x6 = torch.rand(6, 3)
    batch = torch.rand(2, 6, 3)
    if part == "simple_attention":
        return [("softmax_naive", lambda: [torch.rand(6)], m.softmax_naive),
                ("context_vector", lambda: [x6], lambda x: m.context_vector(x, 1)),
                ("attention_scores", lambda: [x6], m.attention_scores),
                ("attention_weights", lambda: [torch.rand(6, 6)], m.attention_weights),
                ("context_vectors", lambda: [x6], m.context_vectors)]
    if part == "self_attention_v1":
        return [("SelfAttention_v1", lambda: [m.SelfAttention_v1(3, 2), x6], lambda sa, x: sa(x)),
                ("scaling_statistics", lambda: [torch.rand(2, 6, 4), torch.rand(2, 6, 4)],
                 lambda q, k: m.scaling_statistics(q, k))]
    if part == "self_attention_v2":
        return [("SelfAttention_v2", lambda: [m.SelfAttention_v2(3, 2), x6], lambda sa, x: sa(x))]
    if part == "weight_transfer":
        v1, v2 = load("self_attention_v1"), load("self_attention_v2")
        return [("transfer_v2_to_v1", lambda: [v2.SelfAttention_v2(3, 2), v1.SelfAttention_v1(3, 2), x6],
                 lambda a, b, x: m.transfer_v2_to_v1(a, b)(x))]
    if part == "causal":
        return [("masked_attention_weights", lambda: [torch.rand(2, 6, 6)], lambda s: m.masked_attention_weights(s, 2)),
                ("CausalAttention (eval)", lambda: [m.CausalAttention(3, 2, 8, 0.5).eval(), batch], lambda a, x: a(x)),
                ("CausalAttention (training, dropout 0.5)", lambda: [m.CausalAttention(3, 2, 8, 0.5), batch],
                 lambda a, x: a(x))]
    if part == "mha":
        return [("MultiHeadAttentionWrapper", lambda: [m.MultiHeadAttentionWrapper(3, 2, 8, 0.5, num_heads=2), batch],
                 lambda a, x: a(x)),
                ("MultiHeadAttention (eval)", lambda: [m.MultiHeadAttention(3, 4, 8, 0.5, num_heads=2).eval(), batch],
                 lambda a, x: a(x)),
                ("MultiHeadAttention (training, dropout 0.5)",
                 lambda: [m.MultiHeadAttention(3, 4, 8, 0.5, num_heads=2), batch], lambda a, x: a(x))]
    if part == "exercises":
        return [("two_dim_wrapper", lambda: [m.two_dim_wrapper(3, 8), batch], lambda a, x: a(x)),
                ("gpt2_small_attention", lambda: [m.gpt2_small_attention(), torch.rand(1, 4, 768)], lambda a, x: a(x))]
    raise ValueError(f"no device cases for {part}")


def run_case(build, call):
    """'' when call(*build()) keeps to the emulated GPU; else the problem."""
    arguments = build()
    with emulated_gpu.EmulatedGPU() as gpu:
        try:
            output = call(*gpu.convert(arguments))
        except Exception as e:  # what the code raised is the finding
            kind = emulated_gpu.classify(e)
            if kind == emulated_gpu.MIXED:
                return f"mixed devices: {e}"
            return f"error: {type(e).__name__}: {e}"
        if not emulated_gpu.on_cuda(output):
            return f"off the device: the output is on {getattr(output, 'device', type(output).__name__)}"
    return ""


def device_problems(folder, parts=PARTS):
    """{"part.case": problem} for every case of parts run from folder on the emulated GPU."""
    found = {}
    with imported(Path(folder)) as load:
        for part in parts:
            for what, build, call in _cases(load, part):
                problem = run_case(build, call)
                if problem:
                    found[f"{part}.{what}"] = problem
    return found
