"""A forward pass watched operation by operation, inside the child (efficiency and device checks).

count_ops runs a module under a dispatch mode that counts the aten operations it issues (the
efficiency checks). With device=EMULATED it runs the module on the emulated GPU instead
(inside/emulated_gpu.py: torch's FakeTensorMode, tensors on cuda:0, no data), where a tensor made
on the CPU meeting the inputs raises the error a GPU raises (the device checks; issue 35 replaced
the `meta` stand-in they used, which code could tell from a GPU with `x.is_meta`).
"""
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from autograder.inside import emulated_gpu


def count_ops(module, args, kwargs, device=None):
    """module(*args, **kwargs) under a dispatch mode that counts each tensor operation it issues ->
    {"counts": {aten op name: calls}, "mixed_devices": [], "output", "device", "dtype", "shape": the
    output tensor's}. device=EMULATED: run on the emulated GPU instead (emulated_run)."""
    if device == emulated_gpu.EMULATED:
        return emulated_run(module, args, kwargs)
    counter = Counter()
    with counter:
        output = module(*args, **kwargs)
    answer = {"counts": dict(counter.counts), "mixed_devices": [], "output": output}
    if isinstance(output, torch.Tensor):
        answer.update(device=output.device.type, dtype=str(output.dtype).replace("torch.", ""),
                      shape=list(output.shape))
    return answer


def emulated_run(module, args, kwargs):
    """module(*args, **kwargs) on the emulated GPU (inside/emulated_gpu.py): the module's parameters
    and buffers and the tensor arguments on cuda:0 as fake tensors -> {"counts": {}, "mixed_devices":
    [the error's type] when a tensor on the CPU met one on cuda, "not_about_devices": the error's
    type when the code raised anything else (a value read: a fake tensor holds none), "device",
    "dtype", "shape": the output tensor's; "output": None (no data)}."""
    answer: dict[str, Any] = {"counts": {}, "mixed_devices": [], "output": None}
    with emulated_gpu.EmulatedGPU() as gpu:
        if isinstance(module, torch.nn.Module):
            gpu.module(module)
        args, kwargs = gpu.convert(list(args)), gpu.convert(dict(kwargs))
        try:
            output = module(*args, **kwargs)
        except Exception as e:  # what the student's code raised is the measurement
            key = "mixed_devices" if emulated_gpu.classify(e) == emulated_gpu.MIXED else "not_about_devices"
            answer[key] = [type(e).__name__] if key == "mixed_devices" else type(e).__name__
            return answer
        if isinstance(output, torch.Tensor):
            answer.update(device=output.device.type, dtype=str(output.dtype).replace("torch.", ""),
                          shape=list(output.shape))
    return answer


class Counter(TorchDispatchMode):
    """Counts operations by name."""

    def __init__(self):
        super().__init__()
        self.counts = {}

    @classmethod
    def _should_skip_dynamo(cls):
        # recent torch wraps a mode's __torch_dispatch__ in torch._dynamo.disable (importing
        # torch._dynamo, about a second) unless this says False; nothing here is ever compiled
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        self.counts[name] = self.counts.get(name, 0) + 1
        return func(*args, **(kwargs or {}))
