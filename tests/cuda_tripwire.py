"""Tripwires on torch's CUDA entry points: nothing before the fork initialises CUDA (issue 24).

    python tests/cuda_tripwire.py     # prints one JSON line; exit 0 when the check holds

Replaces torch's CUDA entry points (and the autograd engine, whose first run counts the CUDA
devices, initialising the driver) with wrappers that note "pid name" in a log before going on,
in the grader and in its fork server. Then does what a batch does before its workers fork
(imports, the rubric and suites, the fork server with a door per worker, --device cuda), opens a
session and a part, and reads the log: the grader and the fork server must have noted nothing,
the part's child must have initialised CUDA itself.

On a CUDA build of torch with NVIDIA's driver at hand the wrappers call the real functions
(scripts/gpu-check.sh runs this on a GPU). Without one (a CPU-only build, as in the tests; or a CUDA
build on a machine without a GPU: pip's own index gives only CUDA builds of torch for Python 3.10)
torch is made to look like a CUDA build with one device, and the wrappers answer in CUDA's place
once the log line is written.
"""
import importlib
import json
import os
import sys
import tempfile
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENTRY_POINTS = ("torch.cuda._lazy_init", "torch.cuda.init", "torch.cuda.is_available", "torch.cuda.device_count",
                "torch.cuda.get_device_properties", "torch.cuda.get_device_capability", "torch.cuda.current_device",
                "torch.cuda.mem_get_info", "torch.cuda.synchronize", "torch.cuda.set_per_process_memory_fraction",
                "torch._C._cuda_init", "torch._C._cuda_getDeviceCount")
STAND_INS = {"get_device_properties": types.SimpleNamespace(total_memory=80 << 30, name="stand-in"),
             "is_available": True, "device_count": 1, "_cuda_getDeviceCount": 1, "current_device": 0,
             "get_device_capability": (9, 0), "mem_get_info": (80 << 30, 80 << 30)}
LOG_ENV = "CH03_CUDA_TRIPWIRE_LOG"


def install(log):
    """Wrap every entry point in this process; on a CPU-only build, stand in for CUDA."""
    import torch

    real = a_driver_is_here()
    if not real:
        # torch._dynamo's CUDA interface imports CUDA's C functions once torch looks like a CUDA build
        # (torch._C._cuda_getDeviceCount, wrapped below), which a CPU-only build has not: what the fork
        # server's warm-up imports on a CUDA build is imported before the pretence (on a real CUDA
        # build, under the wrappers: scripts/gpu-check.sh)
        from autograder.inside import zygote

        for module in zygote.EMULATION_IMPORTS:
            importlib.import_module(module)
    for dotted in ENTRY_POINTS:
        owner_name, name = dotted.rsplit(".", 1)
        owner = sys.modules[owner_name]
        setattr(owner, name, _wire(log, dotted, getattr(owner, name, None) if real else None, name))
    if not real:
        torch._C._has_cuda = True  # a CUDA build as far as the grader's code can tell
        torch.cuda._device_count_nvml = lambda: 1  # NVML's count (never initialises CUDA)
    engine = torch.autograd.variable.Variable._execution_engine
    torch.autograd.variable.Variable._execution_engine = _Engine(log, engine)


def a_driver_is_here():
    """A CUDA build of torch and NVIDIA's driver: NVML counts a device, or the kernel module is loaded
    (neither initialises CUDA). A CUDA build without them fails at its first CUDA call ("Found no
    NVIDIA driver"), so there the tripwires stand in for CUDA as on a CPU-only build."""
    import torch

    return torch.backends.cuda.is_built() and (torch.cuda._device_count_nvml() > 0
                                               or os.path.exists("/proc/driver/nvidia/version"))


def _wire(log, dotted, original, name):
    def tripwire(*args, **kwargs):
        note(log, dotted)
        return original(*args, **kwargs) if original is not None else STAND_INS.get(name)
    return tripwire


def note(log, what):
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        os.write(fd, f"{os.getpid()} {what}\n".encode())
    finally:
        os.close(fd)


class _Engine:
    """The autograd engine, noting each run (its first counts every device type's devices)."""

    def __init__(self, log, engine):
        self.log, self.engine = log, engine

    def run_backward(self, *args, **kwargs):
        note(self.log, "autograd engine")
        return self.engine.run_backward(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.engine, name)


def check(log):
    """Run the batch's start and one part under tripwires -> {"ok", "grader", "fork_server", "child"}."""
    sys.path.insert(0, ROOT)  # before install, which imports the grader's warm-up list where it stands in for CUDA
    install(log)
    os.environ["CH03_DEVICE"], os.environ["CH03_UNSAFE_NO_SANDBOX"] = "cuda", "1"
    from autograder import batch, grading, settings
    from autograder.reports import plots
    from autograder.sandbox import client

    client._PLAN.update(room=False, user_namespace=False, seccomp=None, why="tripwire check: no room")
    wires = f"sys.path.append({os.path.dirname(os.path.abspath(__file__))!r}); import cuda_tripwire; " \
            f"cuda_tripwire.install({log!r}); "
    client.BOOT = client.BOOT.replace("from autograder.inside.zygote", wires + "from autograder.inside.zygote")
    doors = batch.start_fork_servers(2, settings.from_environment())
    try:
        grading.load_rubric(os.path.join(ROOT, "grading.yml"))
        plots.warm_up()  # the batch loads matplotlib before it forks its workers
        server = doors[0].process.pid
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "probe.py"), "w") as f:
                f.write("VALUE = 3\n")
            part = doors[1].open(folder, timeout=60, memory_mb=512)
            reply, _ = part.call({"op": "getattr", "target": {"module": "probe", "attr": "VALUE"}})
            part.close()
    finally:
        batch.stop_fork_servers(doors)
    return verdict(log, os.getpid(), server, reply)


def verdict(log, grader, server, reply):
    by_pid = {}
    with open(log) as f:
        for line in f:
            pid, what = line.rstrip("\n").split(" ", 1)
            by_pid.setdefault(int(pid), []).append(what)
    children = sorted({w for pid, calls in by_pid.items() if pid not in (grader, server) for w in calls})
    result = {"grader": by_pid.get(grader, []), "fork_server": by_pid.get(server, []), "child": children,
              "reply": reply}
    result["ok"] = (not result["grader"] and not result["fork_server"] and "torch.cuda.init" in children
                    and reply.get("result") == 3)
    return result


def main():
    with tempfile.TemporaryDirectory() as folder:
        log = os.path.join(folder, "tripwire.log")
        result = check(log)
    print(json.dumps(result, default=str))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
