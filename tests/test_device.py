"""Issue 14 item 4: `--device cuda` runs the student's modules on the GPU inside the sandbox.

What runs everywhere: the refusal where torch sees no GPU, the moves the child makes (checked on
the `meta` device, which needs no GPU) and the room's device nodes. What needs a GPU (skipped
here, saying so): the selftest corpus gives the same verdicts on cuda as on the CPU.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from autograder.inside import child, protocol
from autograder.sandbox import room

ROOT = Path(__file__).resolve().parents[1]
NO_GPU = "no CUDA device on this machine: the GPU verdicts are checked where one is"


def autograder(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU: the refusal cannot be seen")
def test_cuda_without_a_gpu_is_a_usage_error_before_anything_runs():
    done = autograder("grade", "solutions/ch03", "--device", "cuda")
    assert done.returncode == 2
    assert "--device cuda: torch sees no CUDA device here" in done.stderr
    assert "total" not in done.stdout  # nothing was graded


def test_an_unknown_device_is_refused_by_the_command_line():
    done = autograder("grade", "solutions/ch03", "--device", "tpu")
    assert done.returncode == 2 and "invalid choice: 'tpu'" in done.stderr


def test_the_child_moves_the_graders_tensors_and_keeps_parameters(monkeypatch):
    monkeypatch.setattr(child, "DEVICE", "meta")
    weight = torch.nn.Parameter(torch.ones(2, 2))
    handle = object()
    moved = child.on_device([torch.zeros(3), (weight, handle), {"x": torch.ones(1)}, 4, "text"])
    assert moved[0].device.type == "meta"
    assert isinstance(moved[1][0], torch.nn.Parameter) and moved[1][0].device.type == "meta"
    assert moved[1][0].requires_grad and isinstance(moved[1], tuple) and moved[1][1] is handle
    assert moved[2]["x"].device.type == "meta" and moved[3:] == [4, "text"]


@pytest.mark.quick
def test_on_the_cpu_nothing_is_copied():
    x = torch.zeros(3)
    assert child.DEVICE == "cpu" and child.on_device([x])[0] is x


def request(handles, target, *args):
    """One request through the real frame format, answered by child.run."""
    structure, buffers = protocol.encode({"args": list(args), "kwargs": {}}, fallback=handles.store)
    read_end, write_end = os.pipe()
    try:
        protocol.send(write_end, {"op": "call", "target": target, "input": structure}, buffers)
        header, payload = protocol.receive(read_end)
    finally:
        os.close(read_end)
        os.close(write_end)
    return child.run(handles, header, payload)


def test_a_module_built_by_student_code_follows_the_device_and_to_is_obeyed(monkeypatch):
    monkeypatch.setattr(child, "DEVICE", "meta")
    handles = child.Handles()
    layer = request(handles, {"module": "torch.nn", "attr": "Linear"}, 3, 2)  # the student's class, called
    assert isinstance(layer, torch.nn.Linear) and layer.weight.device.type == "meta"
    ref = handles.store(layer)
    output = request(handles, {"handle": ref["__handle__"]}, torch.ones(4, 3))  # a CPU input from the grader
    assert output.device.type == "meta" and tuple(output.shape) == (4, 2)
    on_cpu = torch.nn.Linear(3, 2)  # a module the grader asked to move (as the device check does with "meta"):
    ref = handles.store(on_cpu)     # module.to(...) returns the module itself, which must stay where it was sent
    back = request(handles, {"handle": ref["__handle__"], "attr": "to"}, "cpu")
    assert back is on_cpu and on_cpu.weight.device.type == "cpu"


def test_a_module_built_with_stand_ins_follows_the_device_too(monkeypatch, tmp_path):
    """Issue 35's H200: a wrapper built through `record` (its CausalAttention calls answered with
    stand-in heads) stayed on the CPU, so a layer of its own (an extra out_proj) met the inputs on the
    GPU and raised a device error in place of the bug the check names. Every way a student's code
    builds a module moves it (child.placed)."""
    (tmp_path / "wrapper_probe.py").write_text(
        "import torch\n"
        "class Head(torch.nn.Module):\n"
        "    pass\n"
        "class Wrapper(torch.nn.Module):\n"
        "    def __init__(self, n):\n"
        "        super().__init__()\n"
        "        self.heads = torch.nn.ModuleList([Head() for _ in range(n)])\n"
        "        self.out_proj = torch.nn.Linear(4, 4)\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(child, "DEVICE", "meta")
    handles = child.Handles()
    heads = [torch.nn.Linear(4, 2) for _ in range(2)]  # the grader's stand-ins (built in the child)
    structure, buffers = protocol.encode({"args": [2], "kwargs": {}, "patches": [["wrapper_probe", "Head"]],
                                          "returns": heads}, fallback=handles.store)
    read_end, write_end = os.pipe()
    try:
        protocol.send(write_end, {"op": "record", "target": {"module": "wrapper_probe", "attr": "Wrapper"},
                                  "input": structure}, buffers)
        header, payload = protocol.receive(read_end)
    finally:
        os.close(read_end)
        os.close(write_end)
    answer = child.run(handles, header, payload)
    wrapper = answer["result"]
    assert len(answer["calls"]) == 2 and list(wrapper.heads) == heads
    assert wrapper.out_proj.weight.device.type == "meta"  # on the CPU before child.placed
    assert all(p.device.type == "meta" for p in wrapper.parameters())


def test_the_room_holds_the_gpu_nodes_only_for_cuda(monkeypatch):
    monkeypatch.setattr(room, "gpu_nodes", lambda: ["/dev/nvidiactl", "/dev/nvidia0"])
    on_cpu = room.command(["-c", "pass"], user_namespace=False)
    on_gpu = room.command(["-c", "pass"], user_namespace=False, device="cuda")
    room_nodes = [("/dev/" + n, "/dev/" + n) for n in room.DEVICES]  # the room's own /dev (room.dev_folder)
    assert [(on_cpu[i + 1], on_cpu[i + 2]) for i, a in enumerate(on_cpu) if a == "--dev-bind"] == room_nodes
    pairs = [(on_gpu[i + 1], on_gpu[i + 2]) for i, a in enumerate(on_gpu) if a == "--dev-bind"]
    assert pairs == room_nodes + [("/dev/nvidiactl", "/dev/nvidiactl"), ("/dev/nvidia0", "/dev/nvidia0")]


@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_GPU)
def test_the_selftest_corpus_gives_the_same_verdicts_on_the_gpu():
    verdicts = {}
    for device in ("cpu", "cuda"):
        done = autograder("selftest", "--device", device, "--seed", "11", "--jobs", "2", timeout=1200)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        verdicts[device] = sorted(line.split()[:3] for line in done.stdout.splitlines()
                                  if line.split()[:1] and line.split()[0] in ("killed", "full", "SURVIVED", "WRONG"))
    assert verdicts["cuda"] == verdicts["cpu"]
    assert all(v[0] in ("killed", "full") for v in verdicts["cuda"])
