"""Efficiency and device-safety, judged from what a forward pass does, never from how long it takes.

The child runs the student's module under a dispatch mode that counts every tensor operation it
issues (RemoteObject.count_ops) and sends the counts back as plain data; the judgments here are
the grader's own:

- batching (book 3.6.2): the number of matmul-like calls of a forward must not grow with
  num_heads when d_out stays the same. A Python loop over the heads issues one matmul (and one
  softmax) per head; views, transposes, einsum and scaled_dot_product_attention do not. Nor may
  any other operation that computes (per_head_work): a loop that only gathers the heads' results
  issues more views and selects with more heads, and nothing else.
  Counts are compared between two head counts, never against absolute numbers, so any correct
  spelling keeps full marks.
- devices: the module runs on an emulated GPU (inside/emulated_gpu.py: torch's FakeTensorMode, its
  parameters, buffers and inputs on cuda:0 as fake tensors, no data). A tensor made in forward on
  the default device (torch.ones(T, T) without device=), or a mask kept as a plain attribute (it
  does not follow .to()), meets a tensor on cuda and torch raises the error a GPU raises. Code
  that asks which device it is on (`x.is_meta`) sees cuda, as on a GPU. A value read (.item(),
  `if mask.any():`) is answered by each fake tensor's real twin on the CPU (emulated_gpu.Twins), so the
  run goes on past it; a forward that still raises there what it did not raise on the CPU earns
  nothing: what it would have done after is unobserved.

The counts and the emulated run come from the student's own process, which could report anything (a
head loop run inside torch's _disable_current_modes() hides its operations from the counter). So
the grader also reads the submitted source itself (source_reading.py: parsed with ast here,
never run): no Python loop over the heads in what MultiHeadAttention runs, no tensor made in forward
without device= or on the CPU by name (device="cpu", .cpu()), no device taken from the machine
(torch.cuda.is_available(), torch.version.cuda: on the emulated GPU, a CPU-only build, such code can take
another path than on a GPU; source_reading.machine_devices). A check passes only when the child's measurement and the grader's reading both
do; code that reaches into the grader's machinery is reported to the instructor as tampering
(grading.Grade.tampering). The checks also require the right output from the same module on the
same inputs before they judge anything, so their diagnosis is about code that computes the right thing.
"""
import functools
import re

import torch

from autograder import source_reading
from autograder.student import Step, StudentError
from autograder.suites import expect

# aten ops (overload packet names) that multiply matrices; einsum, linear and matmul reach the
# dispatcher as mm / bmm / addmm / baddbmm; scaled_dot_product_attention is counted whole by the child
# (inside/counting.WholeAttention), whichever kernel runs it
MATMUL_LIKE = {"mm", "bmm", "addmm", "baddbmm", "addbmm", "addmm_", "baddbmm_", "matmul", "mv", "addmv", "dot",
               "vdot", "linear", "einsum", "tensordot", "_addmm_activation", "convolution", "_convolution",
               "conv1d", "conv2d", "_int_mm", "_scaled_mm"}
ATTENTION_KERNEL = re.compile(r"scaled_dot_product|flash_attention|efficient_attention|cudnn_attention|"
                              r"multi_head_attention")  # inside/counting.WHOLE: each call counted once
SOFTMAX_LIKE = {"_softmax", "softmax", "_log_softmax", "log_softmax", "_safe_softmax"}

LOOP_HINT = ("a Python loop over the heads: batch the heads with .view(b, num_tokens, num_heads, head_dim) and "
             ".transpose(1, 2), then one matmul for all heads' scores and one for their context vectors, as in 3.6.2")


OWN_KERNEL = "an operator of its own"  # inside/counting.OWN_KERNEL: an answer's "elsewhere" when the forward called one


def read_counts(answer, what):
    """The {op name: calls} an answer of count_ops holds (checked: it comes from the student's process)."""
    counts = answer.get("counts") if isinstance(answer, dict) else None
    if not isinstance(counts, dict) or not all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
                                               and v >= 0 for k, v in counts.items()):
        expect.fail(f"{what}: the operations of the forward pass could not be counted")
    if answer.get("elsewhere") == OWN_KERNEL:  # inside/counting.own_kernels
        expect.fail(f"{what}: its forward calls an operator whose kernel the submission registered itself "
                    f"(torch.library: a custom op, or a kernel of its own for one of torch's operators), which runs "
                    f"operations the count cannot see: compute in forward itself, with torch's own operations "
                    f"({LOOP_HINT})")
    if answer.get("elsewhere"):  # inside/counting.Elsewhere, LEAVES_TORCH: work no count holds
        expect.fail(f"{what}: its forward runs work in another thread or process, or on its tensors' values outside "
                    f"torch (NumPy, Python lists), where the operations it issues cannot be counted: compute in "
                    f"forward itself, with torch ({LOOP_HINT})")
    return counts


def matmul_calls(counts):
    return sum(n for op, n in counts.items() if op in MATMUL_LIKE or ATTENTION_KERNEL.search(op))


def softmax_calls(counts):
    return sum(n for op, n in counts.items() if op in SOFTMAX_LIKE)


def growth_problem(few, many, few_heads, many_heads):
    """'' when the forward with many_heads issues no more matmuls and softmaxes than with few_heads
    (same d_out, same inputs' shape); else what grows, in words for the student."""
    a, b = matmul_calls(few), matmul_calls(many)
    if b > a:
        return (f"its forward issues more matrix multiplications with {many_heads} heads than with {few_heads} "
                f"(one matmul per head): {LOOP_HINT}")
    a, b = softmax_calls(few), softmax_calls(many)
    if b > a:
        return ("its forward calls softmax once per head (more softmax calls with more heads): apply one softmax "
                "to the (b, num_heads, num_tokens, num_tokens) scores of all heads at once")
    return ""


# aten ops that only view, pick, copy or collect tensors: a loop that gathers the heads' results (source_reading.
# gathers_only: torch.cat([context[:, h] for h in range(self.num_heads)], -1)) issues more of them with more heads
# and computes nothing per head
GATHERING = {"view", "_unsafe_view", "reshape", "_reshape_alias", "transpose", "permute", "t", "select", "slice",
             "narrow", "unsqueeze", "squeeze", "expand", "alias", "detach", "as_strided", "clone", "copy_", "_to_copy",
             "cat", "stack", "split", "split_with_sizes", "unbind", "chunk", "flatten", "unflatten", "lift_fresh"}


def per_head_work(few, many):
    """'' when the forward with more heads (same d_out, same inputs' shape) issues no more of any operation
    that computes (anything but GATHERING's) than with fewer; else what it does, in words for the student.
    The source's reading exempts a loop whose calls are named like gathering (view, append); the counts
    tell one that gathers from one whose calls only look so (a helper's method named view that masks
    each head's scores)."""
    if any(op not in GATHERING and n > few.get(op, 0) for op, n in many.items()):
        return ("its forward computes something once per head (more operations with more heads, besides those "
                f"that only pick and collect the heads): {LOOP_HINT}")
    return ""


SLACK_MATMULS = 2  # over the reference's count: a fused qkv, einsum, sdpa or nn.MultiheadAttention issue no more
SLACK_SOFTMAX = 1


@functools.lru_cache(maxsize=8)
def reference_counts(d_in, d_out, context_length, num_heads, shape):
    """{op: calls} of the reference solution's MultiHeadAttention (the grader's own, run here) on inputs
    of the given shape: the batched computation of 3.6.2, counted as the child counts."""
    from autograder import stand_ins
    from autograder.inside.counting import count_ops

    with torch.random.fork_rng(devices=[]):
        module = stand_ins.solutions()["mha"].MultiHeadAttention(d_in, d_out, context_length, 0.0, num_heads)
        return count_ops(module.eval(), [torch.zeros(shape)], {})["counts"]


def bound_problem(counts, reference):
    """'' when a forward issues no more matmuls and softmaxes than the reference's batched computation
    (plus SLACK): a bound the student's own head count does not move (a loop padded to fixed slots
    keeps its count the same for any number of heads, and exceeds it)."""
    if matmul_calls(counts) > matmul_calls(reference) + SLACK_MATMULS:
        return (f"its forward issues more matrix multiplications than the batched computation of all heads needs "
                f"(a loop over heads or fixed slots, one matmul each): {LOOP_HINT}")
    if softmax_calls(counts) > softmax_calls(reference) + SLACK_SOFTMAX:
        return ("its forward calls softmax more often than once for all heads: apply one softmax to the (b, "
                "num_heads, num_tokens, num_tokens) scores of all heads at once")
    return ""


def counted_output(answer, what):
    """The output tensor of a count_ops answer."""
    if not isinstance(answer, dict):
        expect.fail(f"{what}: the forward pass could not be observed")
    return expect.as_tensor(answer.get("output"), what)


EMULATED = "emulated-cuda"  # inside/emulated_gpu.EMULATED: count_ops runs the module on the emulated GPU


def device_problem(module, x, want_shape, class_name, mask_is_plain_attribute, machine_query=None):
    """Run module (already right on the CPU with these inputs) on the emulated GPU (inside/emulated_gpu.py:
    its parameters, buffers and x on cuda:0 as fake tensors, which follow torch's device rules) -> ''
    or the misconception. mask_is_plain_attribute: the module keeps a tensor 'mask' outside its buffers;
    machine_query: (module, line) where what the class runs takes a device from the machine (machine_query),
    which names the likelier mistake when devices mix."""
    try:
        answer = module.count_ops(x, device=EMULATED)
    except StudentError:
        return ""  # raised outside the emulated forward (what it raises inside is in the answer): not about devices
    if isinstance(answer, dict) and answer.get("elsewhere") == OWN_KERNEL:  # inside/counting.own_kernels
        return (f"{class_name}.forward calls an operator whose kernel the submission registered itself (torch.library: "
                f"a custom op, or a kernel of its own for one of torch's operators): where that kernel makes its "
                f"tensors cannot be checked without a GPU; compute in forward itself, with torch's own operations, "
                f"making tensors with device=x.device")
    if isinstance(answer, dict) and answer.get("not_about_devices"):
        # it raised there what it did not raise on the CPU: a value read is answered (each fake tensor's twin,
        # inside/emulated_gpu.Twins), so this is code that runs otherwise on a GPU (a branch on x.is_cuda, .numpy()
        # of a cuda tensor) or an operation the emulation cannot run. Either way nothing after it was seen: a value
        # read that stopped the run earned the point with a CPU mask made after it (tests/test_device_evidence.py)
        return (f"{class_name}.forward did not run to its end on the grader's emulated GPU (its parameters, buffers "
                f"and inputs on cuda): it raised an exception there that it did not raise on the CPU, so where its "
                f"tensors are made could not be observed, and this point needs that observation. Code that takes "
                f"another path when its inputs are on a GPU (x.is_cuda, x.device.type) must work there too, with "
                f"every tensor on x.device")
    mixed = answer.get("mixed_devices") if isinstance(answer, dict) else None
    if mixed:  # a tensor on the CPU met one on cuda: the error a GPU raises
        if mask_is_plain_attribute:
            return (f"{class_name}'s mask does not move with the module: it is a plain attribute, so after "
                    f".to('cuda') it stays on the CPU and forward fails on a GPU. Register it with "
                    f"self.register_buffer('mask', ...): buffers follow .to(device)")
        if machine_query:
            return machine_message(class_name, *machine_query)
        return (f"{class_name}.forward mixes devices: it makes a tensor on the default device (the CPU), e.g. "
                f"torch.ones(num_tokens, num_tokens) or torch.zeros(...) without device=, and combines it with "
                f"the inputs; that works on a CPU and fails on a GPU. Create tensors with device=x.device (and "
                f"dtype=x.dtype where it matters), or slice the registered mask buffer, which moves with the module")
    if not isinstance(answer, dict) or answer.get("device") != "cuda" or list(answer.get("shape") or ()) != \
            list(want_shape):
        return (f"{class_name}'s output does not stay on the inputs' device: the result comes back on another device "
                f"(a .cpu() or a tensor made on the CPU in forward?): keep every tensor on x.device")
    return ""


def machine_query(sources, class_name, module, pointer=None):
    """(module, line) of the first place where what class_name runs takes a device from the machine
    (source_reading.machine_devices: torch.cuda.is_available() asked there, or read through a name or attribute bound
    from it); None where it takes none, or where it also makes a tensor on the CPU (source_reading.cpu_tensors: the
    usual message names that)."""
    if source_reading.cpu_tensors(sources, class_name, module, pointer):
        return None
    asked = source_reading.machine_devices(sources, class_name, module, pointer)
    return asked[0] if asked else None


def has_plain_mask(module):
    """True when 'mask' is a tensor attribute of the module that is not a registered buffer or parameter."""
    info = module.describe()
    registered = {name for name, _, _ in info["buffers"]} | {name for name, _, _ in info["parameters"]}
    if "mask" in registered:
        return False
    try:
        return isinstance(module.get("mask"), torch.Tensor)
    except StudentError:
        return False


UNREAD = "the grader's reading of the module finds no class bound to the name"


def unread(class_name, module):
    return (f"the grader reads {class_name} in {module}.py itself to confirm what the measurement says, and found no "
            f"class bound to the name {class_name} written in the submission (a class statement, or a name bound to "
            f"one: {class_name} = OtherClass, from other_module import OtherClass as {class_name}): define it in "
            f"{module}.py (class {class_name}(nn.Module): ...)")


def where_bound(student, module, class_name):
    """The child's word on the class module.class_name is bound to: {"module", "qualname", "line",
    "line_module"} (the class's __module__ and __qualname__, the first line of its forward's code and
    that function's module), plain data the grader's own reading must agree with (source_reading.find);
    None where the child does not say (then the reading alone decides).

    A forward wrapped by a decorator from outside the submission (@torch.enable_grad(), functools.wraps)
    runs the decorator's code; the function it wraps is the one written in the submission, so the
    innermost of forward.__wrapped__.__wrapped__, forward.__wrapped__ and forward whose code has a
    first line gives it. The line is only a pointer: the reading must still find it among what the
    class runs. Asked in three plans (Student.plan; one for a forward wrapped twice): each stops where
    an attribute is missing, which is where the one-by-one questions would have moved on."""
    def ask(*paths):
        answers = student.plan([Step("getattr", {"module": module, "attr": f"{class_name}.{path}"}) for path in paths])
        return [_plain(answer) for answer in answers] + [None] * (len(paths) - len(answers))

    wrapped_twice = "forward.__wrapped__.__wrapped__"
    name, qualname, line, line_module = ask("__module__", "__qualname__", f"{wrapped_twice}.__code__.co_firstlineno",
                                            f"{wrapped_twice}.__module__")
    for path in ("forward.__wrapped__", "forward"):
        if line is not None:
            break
        line, line_module = ask(f"{path}.__code__.co_firstlineno", f"{path}.__module__")
    if not isinstance(name, str) or not isinstance(qualname, str):
        return None
    if not isinstance(line, int) or not isinstance(line_module, str):
        line = line_module = None
    return {"module": name, "qualname": qualname, "line": line, "line_module": line_module}


def _plain(answer):
    """A getattr's answer as where_bound reads it: a string or an int (not a bool), else None (an
    exception the attribute raised, a handle, anything else)."""
    return answer if isinstance(answer, (str, int)) and not isinstance(answer, bool) else None


def sources_run(student):
    """The submission's sources whose code runs in the student's child: a module the grader's stand-ins
    replace there (Student.given: causal.py, found wrong or leaving something behind, for mha) is left out,
    so that its code never makes another part's measurement untrusted (causal.py's exec cost mha its
    batching and device points though none of it ran in mha's child)."""
    replaced = {module for module, _ in getattr(student, "given", ())}
    return {name: text for name, text in student.sources().items() if name not in replaced}


def untrusted(sources, module):
    """'' or why the child's measurement cannot be taken as evidence: the code of the module (or of the
    submission's modules it imports) reaches into what the measurement relies on (dispatch modes, torch's
    private bindings, frames, the counting machinery, ...: source_reading.tampering, read from the parsed
    code). Such code earns no efficiency or device point; the instructor sees it listed as tampering."""
    found = source_reading.tampering({m: sources[m] for m in source_reading.imported_modules(sources, module)})
    if not found:
        return ""
    where = found[0].rsplit(" (", 1)[0]  # 'mha.py, line 12: a dispatch mode': no name the code chose
    return (f"the grader cannot take its measurement of this code as evidence: the code reaches into the machinery "
            f"the measurement relies on ({where})")


def source_loop_problem(sources, class_name, module, pointer=None):
    """'' when what class_name runs has no Python loop over the heads (the grader's own reading) and
    nothing the module imports reaches into the measurement (untrusted)."""
    problem = untrusted(sources, module)
    if problem:
        return problem
    found = source_reading.loops_over_heads(sources, class_name, module, pointer)
    if found is None:
        expect.fail(unread(class_name, module), cause=UNREAD)
    if found:
        where, line = found
        return f"{class_name} loops over its heads in Python ({where}.py, line {line}): {LOOP_HINT}"
    return ""


def source_device_problem(sources, class_name, module, pointer=None):
    """'' when nothing class_name runs makes a tensor without device= or puts one on the CPU by name, nor takes a
    device from the machine (source_reading.machine_devices) (the grader's own reading), and nothing the module
    imports reaches into the measurement (untrusted)."""
    problem = untrusted(sources, module)
    if problem:
        return problem
    found = source_reading.cpu_tensors(sources, class_name, module, pointer)
    if found is None:
        expect.fail(unread(class_name, module), cause=UNREAD)
    if found:
        where, line, call = found[0]
        if call.startswith("."):  # source_reading._to_the_cpu: .cpu(), .to("cpu")
            return (f"{class_name} moves a tensor to the CPU when it runs: {call}(...) ({where}.py, line {line}); "
                    f"that works on a CPU and fails on a GPU, where it meets the inputs on the GPU. Keep every tensor "
                    f"on x.device")
        return (f"{class_name} makes a tensor on the default device (the CPU) when it runs: {call}(...) without "
                f"device= or with device='cpu' ({where}.py, line {line}); that works on a CPU and fails on a GPU. "
                f"Create tensors with device=x.device (and dtype=x.dtype where it matters), or slice the registered "
                f"mask buffer, which moves with the module")
    asked = source_reading.machine_devices(sources, class_name, module, pointer)
    if asked:
        where, line = asked[0]
        return machine_message(class_name, where, line)
    return ""


def machine_message(class_name, where, line):
    """What a class that picks its tensors' device from the machine is told."""
    return (f"{class_name}.forward takes a device from the machine (torch.cuda.is_available() or the like, {where}.py, "
            f"line {line}), not from its inputs: the tensors it puts there meet inputs on another device whenever the "
            f"two differ (a GPU machine given inputs on the CPU; the grader's GPU, emulated on a CPU machine), and code "
            f"that asks can take another path on a GPU than the one observed here. The device comes from the machine, "
            f"so take it from the inputs instead: device=x.device, .to(x.device), or slice the registered mask "
            f"buffer, which moves with the module")
