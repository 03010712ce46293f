"""A forward pass watched operation by operation, inside the child (efficiency and device checks).

count_ops runs a module under a dispatch mode that counts the aten operations it issues (the
efficiency checks). With device=EMULATED it runs the module on the emulated GPU instead
(inside/emulated_gpu.py: torch's FakeTensorMode, tensors on cuda:0, no data), where a tensor made
on the CPU meeting the inputs raises the error a GPU raises (the device checks; issue 35 replaced
the `meta` stand-in they used, which code could tell from a GPU with `x.is_meta`).
"""
import contextlib
import os
import resource
import sys
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from autograder.inside import emulated_gpu


def count_ops(module, args, kwargs, device=None):
    """module(*args, **kwargs) under a dispatch mode that counts each tensor operation it issues ->
    {"counts": {aten op name: calls}, "mixed_devices": [], "output", "device", "dtype", "shape": the
    output tensor's}. device=EMULATED: run on the emulated GPU instead (emulated_run)."""
    if device == emulated_gpu.EMULATED:
        return emulated_run(module, args, kwargs)
    counter = Counter()
    before = Elsewhere()
    ACTIVE.append(counter)
    try:
        with counter, WholeAttention(counter):
            output = module(*args, **kwargs)
    finally:
        ACTIVE.remove(counter)
    answer = {"counts": dict(counter.counts), "mixed_devices": [], "output": output,
              "elsewhere": before.ran() or counter.left or own_kernels(counter.operators)}
    if isinstance(output, torch.Tensor):
        answer.update(device=output.device.type, dtype=str(output.dtype).replace("torch.", ""),
                      shape=list(output.shape))
    return answer


def emulated_run(module, args, kwargs):
    """module(*args, **kwargs) on the emulated GPU (inside/emulated_gpu.py): the module's parameters
    and buffers and the tensor arguments on cuda:0 as fake tensors -> {"counts": {}, "mixed_devices":
    [the error's type] when a tensor on the CPU met one on cuda, "not_about_devices": the error's
    type when the code raised anything else (a value read does not raise: emulated_gpu.Twins answers it), "device",
    "dtype", "shape": the output tensor's; "output": None (no data); "elsewhere": own_kernels' word on the
    operators it called}."""
    answer: dict[str, Any] = {"counts": {}, "mixed_devices": [], "output": None}
    with emulated_gpu.EmulatedGPU() as gpu:
        if isinstance(module, torch.nn.Module):
            gpu.module(module)
        args, kwargs = gpu.convert(list(args)), gpu.convert(dict(kwargs))
        seen = Counter()  # which operators the forward called (own_kernels): inside the fake mode, which runs them
        try:
            with seen:
                output = module(*args, **kwargs)
        except Exception as e:  # what the student's code raised is the measurement
            key = "mixed_devices" if emulated_gpu.classify(e) == emulated_gpu.MIXED else "not_about_devices"
            answer[key] = [type(e).__name__] if key == "mixed_devices" else type(e).__name__
            answer["elsewhere"] = own_kernels(seen.operators)
            return answer
        # an operator of its own runs its fake version here, never its kernel: what the kernel does on a GPU is unseen
        answer["elsewhere"] = own_kernels(seen.operators)
        if isinstance(output, torch.Tensor):
            answer.update(device=output.device.type, dtype=str(output.dtype).replace("torch.", ""),
                          shape=list(output.shape))
    return answer


# microseconds of CPU time the process's other threads may seem to use while one thread reads its clocks: the
# reads are bounded from below exactly (Elsewhere.ran), so only each reading's truncation to a microsecond is left
ELSEWHERE_NOISE_US = 8


class Elsewhere:
    """Did the forward run work where the counter cannot see it? A dispatch mode counts the operations of
    the thread that pushed it only (torch keeps the mode stack per thread), so a head loop run in another
    thread, or in a process it forks, issues operations no count holds: such a forward looked batched and
    earned the batching check (tests/test_adversarial.py::test_a_head_loop_run_outside_the_counted_thread_earns_nothing).
    The child runs torch with one thread and starts no thread or process of its own; so CPU time used during
    the forward by threads of this process other than the counting one (getrusage: RUSAGE_SELF, every
    thread, ended ones included, less RUSAGE_THREAD) or by children it waited for (RUSAGE_CHILDREN), or any
    other process of the part alive before or after it (a child not waited for, a helper forked at import,
    one orphaned to the session's leader: _processes), is work outside the count. The functions are bound
    here, in the fork server, before any student code: replacing resource.getrusage or open later changes
    nothing here."""

    def __init__(self):
        self.others = self._others()[1]
        self.children = _cpu_us(_getrusage(_CHILDREN))
        self.processes = _processes()

    @staticmethod
    def _others():
        """(least, most) CPU microseconds of the other threads so far: RUSAGE_SELF read between two reads of
        this thread's own time, which only grows, bounds them on both sides."""
        first = _cpu_us(_getrusage(_THREAD))
        every = _cpu_us(_getrusage(_SELF))
        last = _cpu_us(_getrusage(_THREAD))
        return every - last, every - first

    def ran(self):
        """'' or where work ran outside the counting thread since this was made: 'thread' or 'process'.
        Where CUDA runs (grade --device cuda), its driver's own threads use CPU time of their own: there the
        threads' time is not read (a thread's work stays unseen on a GPU; processes and NumPy are still seen)."""
        if self._others()[0] - self.others > ELSEWHERE_NOISE_US and not _cuda_started():
            return "thread"
        if self.processes or _cpu_us(_getrusage(_CHILDREN)) > self.children or _processes():
            return "process"
        return ""


_getrusage, _SELF, _THREAD, _CHILDREN = resource.getrusage, resource.RUSAGE_SELF, resource.RUSAGE_THREAD, \
    resource.RUSAGE_CHILDREN
_listdir, _getpid, _open = os.listdir, os.getpid, open
# the part's session leader, as child.serve found it (its parent) before any student code ran: its other
# descendants are the part's too. Empty where count_ops runs outside a part's child (the benchmarks' in-process
# floor, whose parent's other children, a test runner's fork servers, are nobody's part)
LEADER: list[str] = []


def _cuda_started():
    try:
        return torch.cuda.is_initialized()
    except Exception:  # a torch built without CUDA
        return False


def _cpu_us(usage):
    return round((usage.ru_utime + usage.ru_stime) * 1e6)


def _processes():
    """The pids of the part's other processes: this process's descendants and those of its session leader
    (LEADER; a subreaper: a process the part orphans, a double fork's, comes back to it), running or ended
    and not waited for. Read from every process's parent in /proc, whatever their uid: the same in the
    room, container mode and --unsafe-no-sandbox."""
    children: dict[str, list] = {}
    for entry in _listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with _open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            parent = stat[stat.rindex(")") + 2:].split()[1]  # (the name, in parentheses, may hold spaces)
        except (OSError, ValueError, IndexError):  # a process that ended meanwhile
            continue
        children.setdefault(parent, []).append(entry)
    own = f"{_getpid()}"
    found: set[str] = set()
    todo = [own, *LEADER]
    while todo:
        for pid in children.get(todo.pop(), ()):
            if pid not in found and pid != own and pid not in LEADER:
                found.add(pid)
                todo.append(pid)
    return found


# the counter of the count_ops running now: a stand-in's call (inside/stand_in.py) is the grader's work, done in
# the grader's process; the child's side of it (the tensors written to the channel, read back) is not counted
# (uncounted) and the call counts as the operations the grader's own run of it issued (add)
ACTIVE: list["Counter"] = []


@contextlib.contextmanager
def uncounted():
    """Operations the child issues for the grader (a stand-in's question and answer): not the forward's."""
    for counter in ACTIVE:
        counter.paused += 1
    try:
        yield
    finally:
        for counter in ACTIVE:
            counter.paused -= 1


def add(counts):
    """The operations the grader's run of a stand-in's call issued ({aten op name: calls}, counted there as
    Counter counts), counted as if the call had issued them here."""
    for counter in ACTIVE:
        if not counter.paused and isinstance(counts, dict):
            for name, calls in counts.items():
                if isinstance(name, str) and isinstance(calls, int) and calls > 0:
                    counter.counts[name] = counter.counts.get(name, 0) + calls


OWN_KERNEL = "an operator of its own"  # (suites/efficiency.OWN_KERNEL: the same words, the grader's)
# torch's own operators as they were when the fork server was ready, before any student code (settle): the
# namespaces its dispatcher knows ("aten", "prims", "profiler", ...; "prim", TorchScript's, which the emulated GPU
# meets as prim::device) and torch.library's registry of the kernels registered from Python ("namespace/name/
# dispatch key": its meta functions, decompositions, ...). Empty where no fork server settled them (the grader's
# own count of the reference): torch's core namespaces then, and no registry to compare with
TORCH_OPERATORS: dict = {"namespaces": frozenset({"aten", "prim", "prims"}), "kernels": None}


def settle():
    """Remember torch's own operators (the fork server, after its warm-up and before any student code)."""
    names = getattr(torch._C, "_dispatch_get_all_op_names", lambda: ())()
    TORCH_OPERATORS.update(namespaces=TORCH_OPERATORS["namespaces"] | {name.split("::")[0] for name in names},
                           kernels=frozenset(_registered()))


def _registered():
    return set(getattr(sys.modules.get("torch.library"), "_impls", ()) or ())


def own_kernels(operators):
    """'' or OWN_KERNEL: the forward called an operator that is not torch's own (a namespace torch did not have
    when the fork server settled), or one of torch's whose kernel was registered from Python since (torch.library:
    Library.impl, custom_op, torch.library.impl). Such a kernel runs below the dispatch mode, which counts the call
    once and none of the operations the kernel issues, and on the emulated GPU only its fake version runs: a head
    loop in a torch.library.custom_op called as torch.ops.learner.heads counted one 'heads' and no per-head matmul,
    and earned the batching check; a mask made on the CPU in one passed the device check
    (tests/test_compiled_code.py)."""
    if any(op.namespace not in TORCH_OPERATORS["namespaces"] for op in operators):
        return OWN_KERNEL
    if TORCH_OPERATORS["kernels"] is not None:
        # (a key names the operator as its impl was given it: "masked_fill.Tensor", an overload, or "masked_fill")
        added = {(key.split("/")[0], key.split("/")[1].split(".")[0]) for key in _registered() - TORCH_OPERATORS["kernels"]
                 if key.count("/") == 2}
        if any((op.namespace, op._opname) in added for op in operators):
            return OWN_KERNEL
    return ""


class Counter(TorchDispatchMode):
    """Counts operations by name (none while `paused`: inside a call counted whole), and keeps which
    operators it saw (`operators`: own_kernels reads them)."""

    def __init__(self):
        super().__init__()
        self.counts: dict[str, int] = {}
        self.operators: set = set()
        self.paused = 0
        self.left = ""  # 'outside torch': the forward read a tensor's values out as NumPy's or Python's (LEAVES_TORCH)

    @classmethod
    def _should_skip_dynamo(cls):
        # recent torch wraps a mode's __torch_dispatch__ in torch._dynamo.disable (importing
        # torch._dynamo, about a second) unless this says False; nothing here is ever compiled
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not self.paused:
            name = func.overloadpacket.__name__
            self.counts[name] = self.counts.get(name, 0) + 1
        self.operators.add(func)  # (inside a call counted whole too: a kernel of its own may hide there)
        return func(*args, **(kwargs or {}))


class WholeAttention(TorchFunctionMode):
    """scaled_dot_product_attention (and nn.MultiheadAttention's forward, which calls it) counted as
    one call, whatever kernel torch picks for it. Which
    one depends on the device, the head size and the build: on the CPU one fused operation, on a GPU
    for small heads the math fallback (two bmm and a softmax per call), for larger ones a fused
    kernel. Counted by what ran beneath, the same code issued more "matmuls" with 4 heads (head size
    2: the fallback) than with 2 (head size 4: fused), and correct SDPA classes lost the batching
    check on issue 35's H200 only. Counted here, the count is the code's, not the kernel's."""

    def __init__(self, counter: Counter):
        super().__init__()
        self.counter = counter

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = WHOLE.get(func)
        if name is None:
            if getattr(func, "__name__", "") in LEAVES_TORCH and not self.counter.paused:
                self.counter.left = self.counter.left or "outside torch"
            return func(*args, **(kwargs or {}))
        counts = self.counter.counts
        counts[name] = counts.get(name, 0) + 1
        self.counter.paused += 1
        try:
            return func(*args, **(kwargs or {}))
        finally:
            self.counter.paused -= 1


# the Tensor methods (by name, as a function mode sees them) that hand a tensor's values to something other than
# torch: what NumPy or Python computes with them issues no operation the counter sees. A head loop in NumPy
# (x.detach().numpy(), np.matmul per head, torch.from_numpy) counted only the projections and earned the
# batching check (tests/test_adversarial.py::test_a_head_loop_run_outside_the_counted_thread_earns_nothing[numpy])
LEAVES_TORCH = frozenset({"numpy", "__array__", "tolist", "untyped_storage", "storage", "_typed_storage", "data_ptr",
                          "__dlpack__"})


# the calls counted whole, by their count's name (suites/efficiency.ATTENTION_KERNEL matches each):
# SDPA, and nn.MultiheadAttention's functional forward (under a function mode it takes no fast path)
WHOLE = {torch.nn.functional.scaled_dot_product_attention: "scaled_dot_product_attention",
         torch.nn.functional.multi_head_attention_forward: "multi_head_attention_forward"}
