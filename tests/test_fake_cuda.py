"""Issue 35 items 1-2: device bugs caught without a GPU. The reference, every selftest variant and
every device mutant run on the emulated GPU (autograder/inside/emulated_gpu.py, torch's
FakeTensorMode with tensors on cuda:0; tests/fake_cuda.py runs each part's functions and classes).
What a CUDA card refused in the reference (issue 35's H100 run) is refused here too."""
import re
import shutil

import fake_cuda
import pytest
import torch

from autograder import selftest
from autograder.inside import counting, emulated_gpu

SOLUTIONS = selftest.SOLUTIONS
DEVICE_MESSAGES = ("default device", "register_buffer")  # scripts/gpu_check.py's device_mutants reads the same
# parts that only ever use modules of these chapter modules (a variant of one is run in each that imports it)
IMPORTERS = {"self_attention_v1": {"weight_transfer"}, "self_attention_v2": {"weight_transfer"},
             "causal": {"mha", "exercises"}, "mha": {"exercises"}}
# device bugs of parts whose functions the grader does not run on a device (simple_attention: the book's
# loops keep their marks on the CPU, tests/test_false_alarms.py): the emulation still finds each
FUNCTION_BUGS = {
    "simple_attention.context_vector": [
        ("simple_attention", "torch.empty(inputs.shape[0], dtype=inputs.dtype, device=inputs.device)",
         "torch.empty(inputs.shape[0], dtype=inputs.dtype)"),
        ("simple_attention", "torch.zeros(query.shape, dtype=inputs.dtype, device=inputs.device)",
         "torch.zeros(query.shape, dtype=inputs.dtype)")],  # the reference before issue 35, which the H100 refused
    "causal.masked_attention_weights": [
        ("causal", "masked = scores.masked_fill(causal_mask(num_tokens, device=scores.device), -torch.inf)",
         "masked = scores.masked_fill(causal_mask(num_tokens), -torch.inf)")],  # ditto
}


def edited(tmp_path, edits):
    folder = tmp_path / "edited"
    shutil.copytree(SOLUTIONS, folder)
    for module, find, replace in edits:
        path = folder / f"{module}.py"
        text = path.read_text(encoding="utf-8")
        assert text.count(find) == 1, (module, find)
        path.write_text(text.replace(find, replace), encoding="utf-8")
    return folder


def parts_of(entry):
    """The parts an entry's edits can reach: the modules it edits and those importing them."""
    parts = {edit.module for edit in entry.edits}
    for _ in range(2):
        parts |= {p for module in set(parts) for p in IMPORTERS.get(module, ())}
    return [p for p in fake_cuda.PARTS if p in parts]


@pytest.mark.quick
def test_the_emulated_gpu_follows_torchs_device_rules():
    with emulated_gpu.EmulatedGPU() as gpu:
        x = gpu.tensor(torch.rand(2, 4, 4))
        assert x.device == torch.device("cuda", 0)
        # what the CPU-only build refuses without the guard: indexing, select, dot, SDPA on cuda
        mask = torch.ones(4, 4, dtype=torch.bool, device=x.device).triu(1)[:3, :3]
        assert mask.device.type == "cuda" and torch.dot(x[0, 0], x[0, 1]).device.type == "cuda"
        out = torch.nn.functional.scaled_dot_product_attention(x, x, x, is_causal=True)
        assert out.device.type == "cuda" and out.shape == (2, 4, 4)
        assert (x / torch.tensor(2.0)).device.type == "cuda"  # a CPU scalar is allowed, as on a GPU
        with pytest.raises(Exception) as cpu_mask:
            x.masked_fill(torch.ones(4, 4, dtype=torch.bool).triu(1), 0.0)
        assert emulated_gpu.classify(cpu_mask.value) == emulated_gpu.MIXED
        with pytest.raises(Exception) as forged:  # issue 34.3: a mask on the input's device only on meta
            x.masked_fill(torch.ones(4, 4, dtype=torch.bool, device=x.device if x.is_meta else "cpu").triu(1), 0.0)
        assert emulated_gpu.classify(forged.value) == emulated_gpu.MIXED
        with pytest.raises(Exception) as read:
            x.sum().item()
        assert emulated_gpu.classify(read.value) == emulated_gpu.NOT_ABOUT_DEVICES  # no value: never charged
    assert torch.is_grad_enabled()


@pytest.mark.parametrize("move", [
    lambda t, x: t.cuda(0), lambda t, x: t.cuda(x.get_device()), lambda t, x: t.cuda("cuda:0", non_blocking=True),
    lambda t, x: t.cuda(device=torch.device("cuda", 0)), lambda t, x: t.to(x.get_device()),
    lambda t, x: t.to(0, torch.bool), lambda t, x: t.to(device=0), lambda t, x: torch.ones_like(t, device=0)],
    ids=["cuda(0)", "cuda(x.get_device())", "cuda('cuda:0')", "cuda(device=cuda:0)", "to(x.get_device())",
         "to(0, dtype)", "to(device=0)", "ones_like(device=0)"])
def test_the_first_gpu_named_by_its_index_is_cuda_0_as_on_a_one_gpu_machine(move):
    """A CPU-only build has no current accelerator for an index to name: .cuda(0) and .to(x.get_device())
    raised on the emulated GPU, and correct code moving its mask there lost the device point
    (selftest variant learner-masks-moved-to-the-inputs-gpu-by-its-index). Each spelling lands on cuda:0; a
    mask left on the CPU still mixes devices, and a second GPU, which a one-GPU machine lacks, still raises."""
    with emulated_gpu.EmulatedGPU() as gpu:
        x = gpu.tensor(torch.rand(2, 4, 4))
        mask = move(torch.ones(4, 4, dtype=torch.bool).triu(1), x)
        assert mask.device == torch.device("cuda", 0) and x.masked_fill(mask, 0.0).device == mask.device
        with pytest.raises(Exception) as left:
            x.masked_fill(torch.ones(4, 4, dtype=torch.bool).triu(1), 0.0)
        assert emulated_gpu.classify(left.value) == emulated_gpu.MIXED
        with pytest.raises(RuntimeError):
            torch.ones(4).cuda(1)
    assert torch.ones(2).to(torch.float64).device.type == "cpu"  # outside the emulation nothing is changed


def test_torch_s_older_words_for_two_devices_are_a_device_bug_too(monkeypatch):
    """torch 2.11 (the GPU image's) has no FakeTensorDeviceMismatchError: a tensor on the CPU meeting one on
    the emulated cuda raises a plain RuntimeError in other words, which the emulation took for an error
    not about devices, so device bugs went uncharged under --device cpu there. Those words, raised here
    by this torch as torch 2.11 raises them, are a mixed-devices answer as torch's newer error is."""
    from torch._subclasses import fake_tensor

    def older(func, common_device, device):
        return RuntimeError(f"Unhandled FakeTensor Device Propagation for {func}, found two different devices "
                            f"{common_device}, {device}")

    monkeypatch.setattr(fake_tensor, "FakeTensorDeviceMismatchError", older, raising=False)
    cpu_mask = torch.ones(6, 6, dtype=torch.bool).triu(1)
    answer = counting.count_ops(lambda t: t.masked_fill(cpu_mask, 0.0), [torch.rand(6, 6)], {}, emulated_gpu.EMULATED)
    assert answer["mixed_devices"] == ["RuntimeError"] and answer["output"] is None
    answer = counting.count_ops(lambda t: torch.zeros(6, 6).add_(t), [torch.rand(6, 6)], {}, emulated_gpu.EMULATED)
    assert answer["mixed_devices"] == ["RuntimeError"]
    error = RuntimeError("Unhandled FakeTensor Device Propagation for aten.add_.Tensor, found two different devices "
                         "cpu, cuda:0")
    assert emulated_gpu.classify(error) == emulated_gpu.MIXED


@pytest.mark.quick
def test_the_reference_runs_on_the_emulated_gpu_in_every_part():
    assert fake_cuda.device_problems(SOLUTIONS) == {}


@pytest.mark.parametrize("where", sorted(FUNCTION_BUGS))
def test_a_tensor_made_on_the_cpu_in_a_function_is_found(tmp_path, where):
    found = fake_cuda.device_problems(edited(tmp_path, FUNCTION_BUGS[where]), [where.split(".")[0]])
    # torch's own words name both devices ("... at least two devices, cuda:0 and cpu!"; torch 2.11:
    # "... found two different devices cuda:0, cpu")
    assert set(found) == {where} and found[where].startswith("mixed devices: ") and \
        {"cuda:0", "cpu"} <= set(re.findall(r"cuda:0|cpu", found[where]))


def test_every_selftest_variant_runs_on_the_emulated_gpu(tmp_path):
    problems = {}
    for entry in selftest.load(selftest.VARIANTS, "variant"):
        folder = selftest.apply(entry, tmp_path / entry.id)
        found = fake_cuda.device_problems(folder, parts_of(entry))
        if found:
            problems[entry.id] = found
    assert problems == {}


def test_every_device_mutant_fails_on_the_emulated_gpu_in_its_own_part(tmp_path):
    mutants = [e for e in selftest.load(selftest.MUTANTS, "mutant") if e.message in DEVICE_MESSAGES]
    assert len(mutants) >= 6 and {e.part for e in mutants} == {"causal", "mha"}
    missed = {}
    for entry in mutants:
        folder = selftest.apply(entry, tmp_path / entry.id)
        found = fake_cuda.device_problems(folder, [entry.part])
        if not any(what.startswith(f"{entry.part}.") and problem.startswith("mixed devices")
                   for what, problem in found.items()):
            missed[entry.id] = found
    assert missed == {}


def test_a_gpu_s_device_error_is_named_in_every_check_it_breaks():
    """On a real GPU a tensor made on the CPU breaks every check that runs the code, not only the device
    check: each says what it is (a device mutant then keeps its diagnosis on the GPU, issue 35's 2/6)."""
    from autograder.student import StudentError
    from autograder.suites.misconceptions import error_diagnosis

    for kind, text in GPU_DEVICE_ERRORS:
        error = StudentError(kind, text, "causal.py, line 3")
        assert "default device" in error_diagnosis(error) and "device=x.device" in error_diagnosis(error), text
        assert emulated_gpu.mixes_devices(kind, text)
    for kind, text in [("RuntimeError", "shape mismatch"), ("ValueError", "not on the same device"),
                       ("RuntimeError", "mat1 and mat2 shapes cannot be multiplied (6x4 and 6x4)")]:
        assert error_diagnosis(StudentError(kind, text)) == "" and not emulated_gpu.mixes_devices(kind, text)


# what torch 2.x raises on a CUDA card when a tensor made on the CPU meets the inputs (its messages,
# by the check that raises them); the second is issue 35's H200 for causal-mask-made-in-forward-on-cpu
GPU_DEVICE_ERRORS = [
    ("RuntimeError", "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"),
    ("RuntimeError", "expected self and mask to be on the same device, but got mask on cpu and self on cuda:0"),
    ("RuntimeError", "Expected all tensors to be on the same device, but got mat2 is on cpu, different from other "
                     "tensors on cuda:0 (when checking argument in method wrapper_CUDA_bmm)"),
    ("IndexError", "indices should be either on cpu or on the same device as the indexed tensor (cpu)"),
]
