"""Issue 24 item 1: nothing before the fork initialises CUDA; each part's child does it itself.

Proved on a CPU-only machine with tripwires on torch's CUDA entry points (tests/cuda_tripwire.py):
torch is made to look like a CUDA build, the batch's start and one part run, and the log says who
called what. scripts/gpu-check.sh runs the same check against a real CUDA build on a GPU.
"""
import json
import os
import subprocess
import sys

import pytest

from autograder import PROJECT_ROOT

TRIPWIRE = PROJECT_ROOT / "tests" / "cuda_tripwire.py"


def _python(code, folder):
    """Run code in a fresh interpreter under tripwires (logging to folder/tripwire.log) -> the log's lines."""
    log = folder / "tripwire.log"
    script = f"import sys; sys.path[:0] = [{str(TRIPWIRE.parent)!r}, {str(PROJECT_ROOT)!r}]\n" \
             f"import cuda_tripwire; cuda_tripwire.install({str(log)!r})\n" + code
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return log.read_text().split("\n")[:-1] if log.exists() else []


# What three tests ask of a fresh interpreter under tripwires, asked of one (issue 38 item 6: each start
# imports torch and what the tripwires stand in for, sympy and torch._dynamo, about 5 s of CPU), in this
# order, each step's calls read apart (a line the process writes between steps): the device check first,
# then the warm-up without a backward pass, then with one. The warm-up with a backward pass runs the
# warm-up without one again and adds the backward, so a call of the first-use code in the warm-up shows
# in the second step, and the third step's calls are the backward's own.
STEPS = {"check_device": "from autograder.sandbox import client\n"
                         "assert client.check_device('cuda') == 'cuda' and client.cuda_devices() == 1",
         "warm_up_without_autograd": "from autograder.inside import zygote\nzygote.warm_up(autograd=False)",
         "warm_up_with_autograd": "from autograder.inside import zygote\nzygote.warm_up(autograd=True)"}
STEP = "step "  # the log line the process writes before each step: its pid, then STEP and the step's name


@pytest.fixture(scope="module")
def tripwire_calls(tmp_path_factory):
    """{step: the calls noted in it, as "pid entry point"} for each of STEPS, run in order in one
    interpreter under tripwires."""
    folder = tmp_path_factory.mktemp("tripwire")
    log = folder / "tripwire.log"
    code = "".join(f"cuda_tripwire.note({str(log)!r}, {STEP + name!r})\n{step}\n" for name, step in STEPS.items())
    calls: dict[str, list[str]] = {}
    for line in _python(code, folder):
        what = line.split(" ", 1)[1]
        if what.startswith(STEP):
            calls[what.removeprefix(STEP)] = []
        else:
            calls[list(calls)[-1]].append(line)
    assert list(calls) == list(STEPS), calls  # every step ran, in order
    return calls


def test_the_batch_start_and_the_fork_server_leave_cuda_to_the_part_child():
    done = subprocess.run([sys.executable, str(TRIPWIRE)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "CH03_SANDBOX_DEBUG": "0"})
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["grader"] == [] and result["fork_server"] == []
    # the child initialised CUDA and capped its memory before it answered the first request
    assert {"torch.cuda.init", "torch.cuda.set_per_process_memory_fraction"} <= set(result["child"])
    assert result["reply"] == {"result": 3} and result["ok"] and done.returncode == 0
    sys.path.insert(0, str(PROJECT_ROOT / "scripts"))
    import gpu_check

    assert gpu_check.tripwire_ok(done.stdout + done.stderr)  # as scripts/gpu-check.sh reads it


def test_the_tripwire_sees_a_backward_pass_in_the_warm_up(tripwire_calls):
    """The warm-up's backward pass is what initialised CUDA in the fork server on the H200: the
    check would see it, and the warm-up leaves it out wherever a driver is reachable."""
    assert tripwire_calls["warm_up_without_autograd"] == []
    assert [c.split(" ", 1)[1] for c in tripwire_calls["warm_up_with_autograd"]] == ["autograd engine"]


def test_a_cuda_build_s_fork_server_imports_what_the_emulated_gpu_needs():
    """Issue 35's H200 run: on a CUDA build the warm-up may not enter FakeTensorMode (it asks
    torch.cuda.is_available()), so every child running a device check imported sympy and
    torch._dynamo itself (seconds, on every submission). The warm-up now imports them (nothing in
    torch.cuda is called by that: the tripwire check above and scripts/gpu-check.sh on a real card),
    and the child's first emulated run, after the warm-up of a CUDA build, imports nothing more."""
    script = ("import json, sys\n"
              "import torch\n"
              "torch.backends.cuda.is_built = lambda: True  # the warm-up's CUDA-build branch\n"
              "from autograder.inside import counting, emulated_gpu, zygote\n"
              "zygote.warm_up(autograd=False)\n"
              "before = set(sys.modules)\n"
              "answer = counting.count_ops(torch.nn.Linear(4, 4), [torch.rand(2, 4)], {}, device=emulated_gpu.EMULATED)\n"
              "assert answer['device'] == 'cuda', answer\n"
              "print(json.dumps(sorted(set(sys.modules) - before)))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=PROJECT_ROOT)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []  # nothing left for the child to import


def test_the_fork_server_runs_no_backward_where_a_cuda_driver_is_reachable(monkeypatch):
    import torch

    from autograder.inside import zygote

    monkeypatch.setattr(torch.backends.cuda, "is_built", lambda: True)
    assert zygote.cuda_reachable({"device": "cuda", "namespaces": True})
    assert zygote.cuda_reachable({"device": "cpu", "namespaces": False})  # no room hides the devices
    assert not zygote.cuda_reachable({"device": "cpu", "namespaces": True})  # the room holds no NVIDIA node
    monkeypatch.setattr(torch.backends.cuda, "is_built", lambda: False)
    assert not zygote.cuda_reachable({"device": "cuda", "namespaces": False})


def test_checking_the_device_asks_nvml_and_never_initialises_cuda(tripwire_calls):
    assert tripwire_calls["check_device"] == []


@pytest.mark.quick
def test_a_machine_where_nvml_and_torch_see_no_gpu_refuses_cuda(monkeypatch):
    import pytest
    import torch

    from autograder.sandbox import client

    monkeypatch.setattr(client, "_CUDA", {})
    monkeypatch.setattr(torch.backends.cuda, "is_built", lambda: True)
    monkeypatch.setattr(torch.cuda, "_device_count_nvml", lambda: 0)
    with pytest.raises(ValueError, match="torch sees no CUDA device here"):
        client.check_device("cuda")


def test_a_child_that_cannot_start_cuda_refuses_the_grading_instead_of_charging_the_student(monkeypatch, tmp_path):
    """Without a GPU torch cannot start CUDA in the child (a CPU-only build: "Torch not compiled with
    CUDA"; a CUDA build without NVIDIA's driver, as pip's own index gives for Python 3.10: "Found no
    NVIDIA driver"): the sandboxed child says so before any student code runs, and the grader refuses
    (SandboxUnavailable, as for a missing sandbox), naming the cause, rather than failing the student's part."""
    import pytest

    from autograder.sandbox import client

    monkeypatch.setattr(client, "_CUDA", {"count": 1})  # the grader's check passes: a GPU as far as NVML says
    (tmp_path / "probe.py").write_text("VALUE = 3\n")
    with client.Sandbox(device="cuda") as box:
        if box.unsafe:
            pytest.skip("no sandbox on this machine")
        with pytest.raises(client.SandboxUnavailable, match=r"--device cuda: the GPU cannot be used inside the "
                                                            r"sandbox \((AssertionError: Torch not compiled with CUDA|"
                                                            r"RuntimeError: Found no NVIDIA driver)"):
            box.open(str(tmp_path), timeout=60, memory_mb=512)
