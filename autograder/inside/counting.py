"""A forward pass watched operation by operation, inside the child (efficiency and device checks).

count_ops runs a module under a dispatch mode that counts the aten operations it issues and
notes every operation given non-scalar tensors on two devices (an error on a GPU).

The device check moves the module and its inputs to the `meta` device, a stand-in for a GPU
that holds shapes and dtypes but no data. Many of torch's meta kernels are written in Python
and their first call imports torch._dynamo and sympy (over a second of CPU time, once per
process); here no operation runs on meta at all: the mode runs each one on zero-filled CPU
tensors of the same shapes, strides and dtypes and hands back empty meta tensors shaped like
the results. Views and in-place operations keep their meaning (a view is taken on meta, where
it is a metadata change; an in-place operation hands back the tensor it was given), and an
operation with an explicit device= makes its result there, as on a real device. Reading a
value (.item(), `if mask.any():`) reads a zero, where a GPU would read the true value: such
code is never charged for devices.
"""
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

STAND_IN = "meta"
MOVES = {"_to_copy", "copy_", "index", "index_put", "index_put_", "_index_put_impl_"}  # allowed across devices


def count_ops(module, args, kwargs, device=None):
    """module(*args, **kwargs) under a dispatch mode that counts each tensor operation it issues ->
    {"counts": {aten op name: calls}, "mixed_devices": [ops given non-scalar tensors on several
    devices], "output": the output (None on the meta device: no data to send), "device", "dtype",
    "shape": the output tensor's}. device: move the tensor arguments there first (e.g. "meta")."""
    if device:
        args = [a.to(device) if isinstance(a, torch.Tensor) else a for a in args]
    counter = Counter(watch_devices=bool(device))
    with counter:
        output = module(*args, **kwargs)
    answer = {"counts": dict(counter.counts), "mixed_devices": sorted(counter.mixed), "output": output}
    if isinstance(output, torch.Tensor):
        answer.update(device=output.device.type, dtype=str(output.dtype).replace("torch.", ""),
                      shape=list(output.shape))
        if output.device.type == STAND_IN:  # no data to send (a GPU's output is sent, copied to the CPU)
            answer["output"] = None
    return answer


class Counter(TorchDispatchMode):
    """Counts operations by name; with watch_devices, notes mixed devices and stands in for meta."""

    def __init__(self, watch_devices):
        super().__init__()
        self.counts, self.mixed, self.watch_devices = {}, set(), watch_devices

    @classmethod
    def _should_skip_dynamo(cls):
        # recent torch wraps a mode's __torch_dispatch__ in torch._dynamo.disable (importing
        # torch._dynamo, about a second) unless this says False; nothing here is ever compiled
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        self.counts[name] = self.counts.get(name, 0) + 1
        if not self.watch_devices:
            return func(*args, **kwargs)
        leaves = tree_flatten((args, kwargs))[0]
        devices = {t.device.type for t in leaves if isinstance(t, torch.Tensor) and t.dim()}
        if len(devices) > 1 and name not in MOVES:
            self.mixed.add(name)
        if not any(_on_stand_in(leaf) for leaf in leaves):
            return func(*args, **kwargs)
        return _stand_in(func, args, kwargs)


def _on_stand_in(value):
    if isinstance(value, torch.Tensor):
        return value.device.type == STAND_IN
    return isinstance(value, torch.device) and value.type == STAND_IN


def _stand_in(func, args, kwargs):
    """func as the meta device would give it, computed on zero-filled CPU tensors."""
    schema = func._schema
    if any(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns):
        return func(*args, **kwargs)  # a view: a change of metadata, which meta does in C++
    result = func(*tree_map(_to_cpu, args), **tree_map(_to_cpu, kwargs))
    written = [a for a, s in zip(args, schema.arguments) if s.alias_info is not None and s.alias_info.is_write]
    if written and any(r.alias_info is not None for r in schema.returns):
        return written[0] if len(schema.returns) == 1 else tuple(written)  # in place: the tensor given
    target = kwargs.get("device")
    if target is not None and torch.device(target).type != STAND_IN:
        return result  # made or moved where device= says (e.g. .cpu())
    return tree_map(_to_stand_in, result)


def _to_cpu(value):
    if isinstance(value, torch.Tensor) and value.device.type == STAND_IN:
        # as many zeros as the strides reach (an expanded tensor shares elements)
        size = 1 + sum((n - 1) * step for n, step in zip(value.shape, value.stride())) if value.numel() else 0
        return torch.zeros(size, dtype=value.dtype).as_strided(value.shape, value.stride())
    if isinstance(value, torch.device) and value.type == STAND_IN:
        return torch.device("cpu")
    return value


def _to_stand_in(value):
    if isinstance(value, torch.Tensor) and value.device.type == "cpu":
        return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device=STAND_IN)
    return value
