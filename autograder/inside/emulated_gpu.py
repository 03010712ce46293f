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
It does nothing on a CUDA build.

A fake tensor holds no value, so reading one (.item(), float(t), `if mask.any():`, .tolist()) raised
DataDependentOutputException, and an operation whose output's shape depends on values (nonzero,
x[mask]) DynamicOutputShapeException. Such an error was not charged, so a value read in forward cut the
run short before anything after it was seen: a mask made on the CPU after it (under any name: `ones =
torch.ones`, a factory kept on self) failed on a GPU and earned the device check
(tests/test_device_evidence.py). Each fake tensor therefore has a twin (`Twins`): a real tensor on the
CPU computed alongside it, operation by operation, from the same inputs' values; a value read is
answered from the twin (what a GPU answers), and an output whose shape depends on values is made, fake,
with its twin's shape on the device the fake operation would have used. The device rules stay torch's
own (the fake run's); the twins only answer what a fake tensor cannot. A move to 'cuda' without an index
(.to('cuda'), .cuda()), which torch resolves through the guard install_guard() lent CUDA (meta's), lands on
cuda:0, the current device of a GPU machine (it landed on meta and met cuda:0 as another device: correct
code, `if x.is_cuda: mask = mask.cuda()`, lost the device check). A device given by its index (.cuda(0),
`.cuda(x.get_device())`, .to(0), device=0), which a CPU-only build cannot resolve (it has no current
accelerator, and raised), is cuda:0 too, as on a machine with one GPU (OneGPU). What stays unlike a GPU
machine: torch.cuda.is_available() is False here, so code that picks its device from the machine (rather
than from its inputs) picks the CPU and meets cuda: charged as mixing devices, which it does on a GPU
machine given inputs on the CPU.

Used by the device checks in the child (counting.count_ops with device=EMULATED) and by the
project's tests (tests/fake_cuda.py), which run the reference, every selftest variant and
every device mutant under it.
"""
import ctypes
import logging
import os
import re

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes
from torch.utils._pytree import tree_flatten, tree_map
from torch.utils.weak import WeakTensorKeyDictionary

CUDA = torch.device("cuda", 0)
_META = torch.device("meta")
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


class Twins(TorchDispatchMode):
    """Every fake tensor's real twin on the CPU (see the module's docstring): pushed above FakeTensorMode,
    it runs each operation twice, on the fake tensors (torch's device rules: what raises there raises) and
    on their twins with every device put to the CPU; a value read (aten._local_scalar_dense) is answered by
    the twin, an output whose shape depends on values is made with its twin's shape. A real tensor the code
    meets (a module-level tensor, a plain attribute) is copied once for the twins' run, so nothing the
    emulation does in place changes it."""

    def __init__(self):
        super().__init__()
        self.real = WeakTensorKeyDictionary()  # fake tensor -> its twin
        self.copies = WeakTensorKeyDictionary()  # a real tensor met -> the twins' copy of it

    @classmethod
    def _should_skip_dynamo(cls):
        return False  # (as counting.Counter: nothing here is ever compiled, no import of torch._dynamo asked)

    def pair(self, fake, real):
        """fake's twin is real (the grader's tensors: their values)."""
        self.real[fake] = real

    def _twin(self, value):
        from torch._subclasses.fake_tensor import FakeTensor

        if isinstance(value, FakeTensor):
            twin = self.real.get(value)
            if twin is None:  # made where no twin was kept: its shape, no value
                twin = self.real[value] = torch.zeros(value.shape, dtype=value.dtype)
            return twin
        if isinstance(value, torch.Tensor):
            if value not in self.copies:
                self.copies[value] = value.clone()
            return self.copies[value]
        if isinstance(value, torch.device) and value.type != "cpu":
            return torch.device("cpu")
        return value

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        from torch._subclasses.fake_tensor import DynamicOutputShapeException

        kwargs = kwargs or {}
        if func is torch.ops.aten._to_copy.default and kwargs.get("device") == _META and \
                not any(isinstance(a, torch.Tensor) and a.device == _META for a in args):
            # .cuda(), .to('cuda'): the index a GPU machine takes (its current device, 0) came here as meta, the
            # device of the guard install_guard() lent CUDA (a CPU-only build has no current CUDA device)
            kwargs = {**kwargs, "device": CUDA}
        if func is torch.ops.aten._local_scalar_dense.default:  # a value read: the twin's value
            return self._real_run(func, args, kwargs)
        try:
            fake_out = func(*args, **kwargs)
        except DynamicOutputShapeException:  # nonzero, x[mask]: the twin's shape, on the inputs' device
            real_out = self._real_run(func, args, kwargs)
            device = next((a.device for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)), CUDA)
            fake_out = tree_map(lambda r: torch.empty_strided(r.shape, r.stride(), dtype=r.dtype, device=device)
                                if isinstance(r, torch.Tensor) else r, real_out)
        else:
            real_out = self._real_run(func, args, kwargs)
        for fake, real in zip(tree_flatten(fake_out)[0], tree_flatten(real_out)[0], strict=False):  # (a list and a tuple alike)
            if isinstance(fake, torch.Tensor) and isinstance(real, torch.Tensor):
                self.real[fake] = real
        return fake_out

    def _real_run(self, func, args, kwargs):
        with _disable_current_modes():
            real_args, real_kwargs = tree_map(self._twin, (args, kwargs))
            return func(*real_args, **real_kwargs)


def _index_zero(value):
    """Is value the index 0 (an int, not a bool)?"""
    return isinstance(value, int) and not isinstance(value, bool) and value == 0


def _first_gpu(device):
    """Is device the first GPU, named by its index (0, "cuda:0", torch.device("cuda", 0)) or by none (.cuda()'s None),
    which this build cannot resolve by itself?"""
    if device is None or _index_zero(device):
        return True
    if isinstance(device, (str, torch.device)):
        try:
            device = torch.device(device)
        except RuntimeError:
            return False
        return device.type == "cuda" and device.index in (None, 0)
    return False


class OneGPU(TorchFunctionMode):
    """A device given by its index, as a machine with one GPU reads it: .cuda(0) (and .cuda(i) for any spelling of
    the first GPU) is .to(cuda:0); .to(0), device=0 are cuda:0. On a CPU-only build an index names the current
    accelerator, and there is none: those raised, and correct code (`mask.cuda(x.get_device())` where x.is_cuda)
    lost the device check. Any other index stays as it is and raises, as a second GPU that is not there does."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func is torch.Tensor.cuda:
            device = args[1] if len(args) > 1 else kwargs.pop("device", None)
            if _first_gpu(device):
                rest = dict(zip(("non_blocking", "memory_format"), args[2:], strict=False))
                return args[0].to(CUDA, **{**rest, **kwargs})
        else:
            if _index_zero(kwargs.get("device")):
                kwargs["device"] = CUDA
            if func is torch.Tensor.to and len(args) > 1 and _index_zero(args[1]):
                args = (args[0], CUDA, *args[2:])
        return func(*args, **kwargs)


class EmulatedGPU:
    """`with EmulatedGPU() as gpu:` runs in FakeTensorMode without autograd, each fake tensor with its real
    twin (Twins); gpu.tensor(t) and gpu.module(m) put the grader's tensors and a module's parameters and
    buffers on the emulated cuda:0 (a plain attribute tensor stays where it is, as it would on .to('cuda'))."""

    def __init__(self):
        from torch._subclasses.fake_tensor import FakeTensorMode

        if not install_guard():
            raise RuntimeError("torch's CUDA device guard could not be emulated here")
        # real tensors the code meets (a module-level or plain attribute tensor) become fake
        # tensors on their own device: a CPU one then meets cuda as it would on a GPU
        self.mode = FakeTensorMode(allow_non_fake_inputs=True)
        self.twins = Twins()
        self.one_gpu = OneGPU()
        self._grad = None
        # FakeTensorMode logs a traceback for each operation whose shapes do not fit (the student's
        # error, raised to the caller anyway): not on the child's stderr
        logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)

    def __enter__(self):
        self._grad = torch.is_grad_enabled()
        torch.set_grad_enabled(False)  # a backward pass on fake cuda tensors would need the driver
        entered = []
        try:
            for mode in (self.mode, self.twins, self.one_gpu):
                mode.__enter__()
                entered.append(mode)
        except BaseException:
            for mode in reversed(entered):
                mode.__exit__(None, None, None)
            torch.set_grad_enabled(bool(self._grad))
            raise
        return self

    def __exit__(self, *exc):
        try:
            self.one_gpu.__exit__(*exc)
            self.twins.__exit__(*exc)
            return self.mode.__exit__(*exc)
        finally:
            torch.set_grad_enabled(bool(self._grad))

    def tensor(self, value):
        """A fake tensor on cuda:0 with value's shape, strides and dtype, its twin value's values (inside the `with`)."""
        fake = torch.empty_strided(tuple(value.shape), value.stride(), dtype=value.dtype, device=CUDA)
        with _disable_current_modes():
            self.twins.pair(fake, value.detach().clone())
        return fake

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
    devices) or NOT_ABOUT_DEVICES (anything else: code that raises only on a GPU, an operation the
    emulation cannot run; the device check earns nothing on a run that did not end, suites/efficiency)."""
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
