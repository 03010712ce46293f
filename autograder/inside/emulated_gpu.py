"""A GPU emulated on the CPU: torch's FakeTensorMode with tensors on device cuda:0 (issue 35).

A fake tensor has a shape, a dtype and a device but no data; every operation on fake tensors
computes the result's metadata and applies torch's own device rules, the rules a GPU applies:
a tensor made on the CPU (torch.ones(T, T) without device=, a mask kept as a plain attribute)
meeting a tensor on cuda raises "Expected all tensors to be on the same device", while a CPU
scalar (a 0-dim tensor) is allowed, as on a real GPU. Nothing is computed and no GPU is needed.

On a CPU-only build of torch no device guard is registered for CUDA, and torch's Python bindings
take one for every indexing (`x[0]`, `mask[:T, :T]`) and for many methods (select, dot,
scaled_dot_product_attention) of a tensor on cuda: they would fail with "PyTorch is not linked
with support for cuda devices" whatever the code. FakeTensorMode installs a no-op guard only
on a CUDA build without a device (torch._C._ensureCUDADeviceGuardSet); on a CPU-only build
install_guard() puts torch's own no-op guard of the meta device in CUDA's empty slot of c10's
guard registry (c10::impl::device_guard_impl_registry), which is all those bindings need.
It does nothing on a CUDA build. What stays unlike a GPU: reading a value (.item(), `if
mask.any():`) raises DataDependentOutputException (a fake tensor holds no value), and a move to
the string 'cuda' without an index (.to('cuda'), .cuda()) lands on meta; neither is a device
bug, and callers charge neither (`classify`).

Used by the device checks in the child (counting.count_ops with device=EMULATED) and by the
project's tests (tests/fake_cuda.py), which run the reference, every selftest variant and
every device mutant under it.
"""
import ctypes
import logging
import os
import re

import torch

CUDA = torch.device("cuda", 0)
EMULATED = "emulated-cuda"  # the device name a count_ops request gives to ask for this emulation
_REGISTRY = "_ZN3c104impl26device_guard_impl_registryE"  # c10::impl::device_guard_impl_registry
_CUDA_SLOT, _META_SLOT = 1, 14  # c10::DeviceType::CUDA, c10::DeviceType::Meta

MIXED = "mixed devices"
NOT_ABOUT_DEVICES = "not about devices"


def install_guard():
    """On a CPU-only build, CUDA's slot of c10's guard registry gets meta's no-op guard -> True
    when fake cuda tensors can be indexed here (always on a CUDA build)."""
    if torch.backends.cuda.is_built():
        return True
    try:
        library = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libc10.so"),
                              mode=getattr(os, "RTLD_NOLOAD", 0))
        slots = (ctypes.c_void_p * (_META_SLOT + 1)).in_dll(library, _REGISTRY)
    except (OSError, ValueError):
        return False
    if not slots[_CUDA_SLOT]:
        if not slots[_META_SLOT]:
            return False
        slots[_CUDA_SLOT] = slots[_META_SLOT]
    return True


class EmulatedGPU:
    """`with EmulatedGPU() as gpu:` runs in FakeTensorMode without autograd; gpu.tensor(t) and
    gpu.module(m) put the grader's tensors and a module's parameters and buffers on the
    emulated cuda:0 (a plain attribute tensor stays where it is, as it would on .to('cuda'))."""

    def __init__(self):
        from torch._subclasses.fake_tensor import FakeTensorMode

        if not install_guard():
            raise RuntimeError("torch's CUDA device guard could not be emulated here")
        # real tensors the code meets (a module-level or plain attribute tensor) become fake
        # tensors on their own device: a CPU one then meets cuda as it would on a GPU
        self.mode = FakeTensorMode(allow_non_fake_inputs=True)
        self._grad = None
        # FakeTensorMode logs a traceback for each operation whose shapes do not fit (the student's
        # error, raised to the caller anyway): not on the child's stderr
        logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)

    def __enter__(self):
        self._grad = torch.is_grad_enabled()
        torch.set_grad_enabled(False)  # a backward pass on fake cuda tensors would need the driver
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        try:
            return self.mode.__exit__(*exc)
        finally:
            torch.set_grad_enabled(bool(self._grad))

    def tensor(self, value):
        """A fake tensor on cuda:0 with value's shape, strides and dtype (inside the `with`)."""
        return torch.empty_strided(tuple(value.shape), value.stride(), dtype=value.dtype, device=CUDA)

    def convert(self, value):
        """Tensors in value (lists, tuples, dicts walked) as fake cuda tensors; the rest as is."""
        if isinstance(value, torch.nn.Module):
            return self.module(value)
        if isinstance(value, torch.Tensor):
            return self.tensor(value)
        if isinstance(value, (list, tuple)):
            return type(value)(self.convert(v) for v in value)
        if isinstance(value, dict):
            return {k: self.convert(v) for k, v in value.items()}
        return value

    def module(self, module):
        """module with every parameter and registered buffer (of every submodule) on the emulated
        cuda:0, as module.to('cuda') would leave it; returned."""
        for sub in module.modules():
            for name, parameter in list(sub._parameters.items()):
                if parameter is not None:
                    sub._parameters[name] = torch.nn.Parameter(self.tensor(parameter), requires_grad=False)
            for name, buffer in list(sub._buffers.items()):
                if buffer is not None:
                    sub._buffers[name] = self.tensor(buffer)
        return module


# How torch words a tensor on one device meeting one on another, on a GPU as on this emulation: its
# generic check ("Expected all tensors to be on the same device, but found at least two devices, cuda:0
# and cpu!"), the matrix products' ("... but got mat2 is on cpu, different from other tensors on
# cuda:0 ..."), masked_fill's CUDA kernel ("expected self and mask to be on the same device, but got mask
# on cpu and self on cuda:0": issue 35's H200 gave it for a mask made in forward), indexing's ("indices
# should be either on cpu or on the same device as the indexed tensor"), and the emulation's own in a torch
# without FakeTensorDeviceMismatchError, a plain RuntimeError (torch 2.11, the GPU image's: "Unhandled
# FakeTensor Device Propagation for aten.masked_fill.Scalar, found two different devices cuda:0, cpu";
# unmatched, device bugs went uncharged there). One pattern for the child (classify) and the grader's
# diagnosis (suites/misconceptions.error_diagnosis).
DEVICE_MISMATCH = re.compile(r"same device|at least two devices|different from other tensors on|two different devices",
                             re.IGNORECASE)
DEVICE_ERROR_KINDS = ("RuntimeError", "IndexError")  # the emulation's own FakeTensorDeviceMismatchError: always


def mixes_devices(kind, text):
    """Does an error (its type's name and its text) say that tensors on two devices met?"""
    return kind == "FakeTensorDeviceMismatchError" or (kind in DEVICE_ERROR_KINDS and
                                                        DEVICE_MISMATCH.search(text) is not None)


def classify(error):
    """An exception raised under the emulation -> MIXED (what a GPU refuses: tensors on two
    devices) or NOT_ABOUT_DEVICES (a value read, an unsupported operation: never charged)."""
    return MIXED if mixes_devices(type(error).__name__, str(error)) else NOT_ABOUT_DEVICES


def on_cuda(value):
    """True when every tensor in value (lists, tuples, dicts walked) is on cuda."""
    if isinstance(value, torch.Tensor):
        return value.device.type == "cuda"
    if isinstance(value, (list, tuple)):
        return all(on_cuda(v) for v in value)
    if isinstance(value, dict):
        return all(on_cuda(v) for v in value.values())
    return True
