"""Efficiency and device-safety, judged from what a forward pass does, never from how long it takes.

The child runs the student's module under a dispatch mode that counts every tensor operation it
issues (RemoteObject.count_ops) and sends the counts back as plain data; the judgments here are
the grader's own:

- batching (book 3.6.2): the number of matmul-like calls of a forward must not grow with
  num_heads when d_out stays the same. A Python loop over the heads issues one matmul (and one
  softmax) per head; views, transposes, einsum and scaled_dot_product_attention do not.
  Counts are compared between two head counts, never against absolute numbers, so any correct
  spelling keeps full marks.
- devices: the module runs on an emulated GPU (inside/emulated_gpu.py: torch's FakeTensorMode, its
  parameters, buffers and inputs on cuda:0 as fake tensors, no data). A tensor made in forward on
  the default device (torch.ones(T, T) without device=), or a mask kept as a plain attribute (it
  does not follow .to()), meets a tensor on cuda and torch raises the error a GPU raises. Code
  that asks which device it is on (`x.is_meta`) sees cuda, as on a GPU. Reading a value (.item())
  raises there (a fake tensor holds none): errors that have nothing to do with devices are not
  charged.

The counts and the emulated run come from the student's own process, which could report anything (a
head loop run inside torch's _disable_current_modes() hides its operations from the counter). So
the grader also reads the submitted source itself (suites/source_reading.py: parsed with ast here,
never run): no Python loop over the heads in what MultiHeadAttention runs, no tensor made in forward
without device=. A check passes only when the child's measurement and the grader's reading both
do; code that reaches into the grader's machinery is reported to the instructor as tampering
(grading.Grade.tampering). The checks also require the right output from the same module on the
same inputs before they judge anything, so their diagnosis is about code that computes the right thing.
"""
import re

import torch

from autograder.suites import expect, source_reading
from autograder.student import StudentError

# aten ops (overload packet names) that multiply matrices; einsum, linear and matmul reach the
# dispatcher as mm / bmm / addmm / baddbmm, scaled_dot_product_attention as its fused kernels
MATMUL_LIKE = {"mm", "bmm", "addmm", "baddbmm", "addbmm", "addmm_", "baddbmm_", "matmul", "mv", "addmv", "dot",
               "vdot", "linear", "einsum", "tensordot", "_addmm_activation", "convolution", "_convolution",
               "conv1d", "conv2d", "_int_mm", "_scaled_mm"}
ATTENTION_KERNEL = re.compile(r"scaled_dot_product|flash_attention|efficient_attention|cudnn_attention")
SOFTMAX_LIKE = {"_softmax", "softmax", "_log_softmax", "log_softmax", "_safe_softmax"}

LOOP_HINT = ("a Python loop over the heads: batch the heads with .view(b, num_tokens, num_heads, head_dim) and "
             ".transpose(1, 2), then one matmul for all heads' scores and one for their context vectors, as in 3.6.2")


def read_counts(answer, what):
    """The {op name: calls} an answer of count_ops holds (checked: it comes from the student's process)."""
    counts = answer.get("counts") if isinstance(answer, dict) else None
    if not isinstance(counts, dict) or not all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
                                               and v >= 0 for k, v in counts.items()):
        expect.fail(f"{what}: the operations of the forward pass could not be counted")
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


def counted_output(answer, what):
    """The output tensor of a count_ops answer."""
    if not isinstance(answer, dict):
        expect.fail(f"{what}: the forward pass could not be observed")
    return expect.as_tensor(answer.get("output"), what)


EMULATED = "emulated-cuda"  # inside/emulated_gpu.EMULATED: count_ops runs the module on the emulated GPU


def device_problem(module, x, want_shape, class_name, mask_is_plain_attribute):
    """Run module (already right on the CPU with these inputs) on the emulated GPU (inside/emulated_gpu.py:
    its parameters, buffers and x on cuda:0 as fake tensors, which follow torch's device rules) -> ''
    or the misconception. mask_is_plain_attribute: the module keeps a tensor 'mask' outside its buffers."""
    try:
        answer = module.count_ops(x, device=EMULATED)
    except StudentError:
        return ""  # raised outside the emulated forward (what it raises inside is in the answer): not about devices
    if isinstance(answer, dict) and answer.get("not_about_devices"):
        return ""  # e.g. a value read with .item() (a fake tensor holds none; fine on a GPU): nothing to charge here
    mixed = answer.get("mixed_devices") if isinstance(answer, dict) else None
    if mixed:  # a tensor on the CPU met one on cuda: the error a GPU raises
        if mask_is_plain_attribute:
            return (f"{class_name}'s mask does not move with the module: it is a plain attribute, so after "
                    f".to('cuda') it stays on the CPU and forward fails on a GPU. Register it with "
                    f"self.register_buffer('mask', ...): buffers follow .to(device)")
        return (f"{class_name}.forward mixes devices: it makes a tensor on the default device (the CPU), e.g. "
                f"torch.ones(num_tokens, num_tokens) or torch.zeros(...) without device=, and combines it with "
                f"the inputs; that works on a CPU and fails on a GPU. Create tensors with device=x.device (and "
                f"dtype=x.dtype where it matters), or slice the registered mask buffer, which moves with the module")
    if not isinstance(answer, dict) or answer.get("device") != "cuda" or list(answer.get("shape") or ()) != \
            list(want_shape):
        return (f"{class_name}'s output does not stay on the inputs' device: the result comes back on another device "
                f"(a .cpu() or a tensor made on the CPU in forward?): keep every tensor on x.device")
    return ""


def function_device_problem(function, args, want_shape, name):
    """Run a function of the student's module (already right on the CPU with these arguments) on the
    emulated GPU -> '' or the misconception (a tensor it makes on the CPU meets its inputs on cuda)."""
    try:
        answer = function.count_ops(*args, device=EMULATED)
    except StudentError:
        return ""  # what it raises outside the emulated run is not about devices
    if not isinstance(answer, dict) or answer.get("not_about_devices"):
        return ""
    if answer.get("mixed_devices"):
        return (f"{name} mixes devices: it makes a tensor on the default device (the CPU), e.g. a mask from "
                f"torch.ones(num_tokens, num_tokens) without device=, and combines it with its inputs; that works on a "
                f"CPU and fails on a GPU. Make it on the inputs' device (device=scores.device)")
    if answer.get("device") != "cuda" or list(answer.get("shape") or ()) != list(want_shape):
        return f"{name}'s result does not stay on its inputs' device: keep every tensor on the inputs' device"
    return ""


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


def unread(class_name, module):
    return (f"the grader reads {class_name} in {module}.py itself to confirm what the measurement says, and found no "
            f"class {class_name} written there: define it in {module}.py (class {class_name}(nn.Module): ...)")


def source_loop_problem(source, class_name, module):
    """'' when what class_name runs has no Python loop over the heads (the grader's own reading)."""
    line = source_reading.loops_over_heads(source, class_name)
    if line is None:
        return unread(class_name, module)
    if line:
        return f"{class_name} loops over its heads in Python ({module}.py, line {line}): {LOOP_HINT}"
    return ""


def source_device_problem(source, class_name, module):
    """'' when nothing class_name runs makes a tensor without device= (the grader's own reading)."""
    found = source_reading.cpu_tensors(source, class_name)
    if found is None:
        return unread(class_name, module)
    if found:
        line, call = found[0]
        return (f"{class_name} makes a tensor on the default device (the CPU) when it runs: {call}(...) without "
                f"device= ({module}.py, line {line}); that works on a CPU and fails on a GPU. Create tensors with "
                f"device=x.device (and dtype=x.dtype where it matters), or slice the registered mask buffer, which "
                f"moves with the module")
    return ""
