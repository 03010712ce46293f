"""The GPU memory cases of scripts/gpu-check.sh, run through the sandbox's own client (--device cuda).

  - bound: a part's child cannot allocate past its part's memory (its allocator's cap), and one
    that lifts the cap and holds more is killed by the grader's watch, the part saying why;
  - no leak: a session fills GPU memory with a pattern and ends; the next session's fresh
    allocation must not hold it. The probe first proves it can see the pattern where it is
    (memory handed back inside one process, by the caching allocator, still holds it);
  - the cost of CUDA per submission: a session's first answer with --device cuda against cpu,
    and the GPU memory the child holds once CUDA is up (its context), as the driver reports it for
    the child's pid; where it names no such pid (issue 35's H100 run: "MiB unknown", the driver's
    process list seen from a container), the card's used memory while that child is the only
    process holding CUDA (torch.cuda.mem_get_info in the child), said so in the log.
"""
import os
import statistics
import tempfile
import time

PROBE = '''
import time
import torch

PATTERN, N = 0x5A17C0DE, 256 << 18  # 256 MiB of int32
KEEP = []


def value():
    return 3


def fill():
    x = torch.full((N,), PATTERN, dtype=torch.int32, device="cuda")
    KEEP.append(x)
    return int((x == PATTERN).sum())


def reuse():
    KEEP.clear()
    return int((torch.empty((N,), dtype=torch.int32, device="cuda") == PATTERN).sum())


def peek():
    return int((torch.empty((N,), dtype=torch.int32, device="cuda") == PATTERN).sum())


def device_used_mib():
    free, total = torch.cuda.mem_get_info()
    return (total - free) >> 20


def over_cap():
    try:
        torch.empty(2048 << 20, dtype=torch.uint8, device="cuda")
        return "allocated"
    except torch.OutOfMemoryError:
        return "refused"


def lift_and_hold():
    torch.cuda.set_per_process_memory_fraction(1.0)
    KEEP.append(torch.ones(4096 << 20, dtype=torch.uint8, device="cuda"))
    torch.cuda.synchronize()
    time.sleep(30)
    return "still alive"
'''


def _call(part, name):
    from autograder.sandbox.client import SessionDied

    try:
        reply, _ = part.call({"op": "call", "target": {"module": "probe", "attr": name}})
    except SessionDied as e:
        return {"died": str(e)}
    return reply


def check_memory(r):
    """Fill r["memory_bound"], r["no_leak"], r["cuda_cost"] and their logs."""
    from autograder.sandbox.client import Sandbox

    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "probe.py"), "w") as f:
            f.write(PROBE)
        with Sandbox(device="cuda") as box:
            r["memory_bound"], r["log"]["memory_bound"] = _bound(box, folder)
            r["no_leak"], r["log"]["no_leak"] = _no_leak(box, folder)
            r["cuda_cost"], r["log"]["cuda_cost"] = _cost(box, folder)


def _bound(box, folder):
    part = box.open(folder, timeout=40, memory_mb=512)
    capped = _call(part, "over_cap")
    lifted = _call(part, "lift_and_hold")
    part.close()
    ok = capped.get("result") == "refused" and "GPU memory" in lifted.get("died", "")
    return ok, {"over_cap": capped, "lift_and_hold": lifted}


def _no_leak(box, folder):
    first = box.open(folder, timeout=60, memory_mb=4096)
    filled, seen = _call(first, "fill"), _call(first, "reuse")
    first.close()
    second = box.open(folder, timeout=60, memory_mb=4096)
    fresh = _call(second, "peek")
    second.close()
    n = filled.get("result")
    # the probe must see the pattern where it is, or its "nothing seen" proves nothing
    ok = bool(n) and seen.get("result") == n and fresh.get("result") == 0
    return ok, {"fill": filled, "reuse in the same process": seen, "fresh in the next session": fresh}


def _cost(box, folder):
    """Seconds from opening a session to its first answer, cuda minus cpu (medians of 3), and the
    MiB of GPU memory a child holds once CUDA is up."""
    from autograder.sandbox import gpu_watch
    from autograder.sandbox.client import Sandbox

    times, held, source = {}, None, "unknown"
    with Sandbox(device="cpu") as cpu:
        for device, sandbox in (("cpu", cpu), ("cuda", box)):
            runs = []
            for _ in range(3):
                started = time.monotonic()
                part = sandbox.open(folder, timeout=60, memory_mb=1024)
                _call(part, "value")
                runs.append(time.monotonic() - started)
                if device == "cuda":
                    seen = gpu_watch.usage().get(part.host_pid)
                    if seen is None:  # the driver names no process for the child's pid here
                        used = _call(part, "device_used_mib").get("result")
                        seen = used if isinstance(used, int) else None
                        source = "the card's used memory while this child alone held CUDA (mem_get_info)"
                    else:
                        source = "the driver's figure for the child's pid"
                    held = seen if seen is not None else held
                part.close()
            times[device] = statistics.median(runs)
    extra = times["cuda"] - times["cpu"]
    return (extra, held), {"seconds": times, "context MiB": held, "MiB measured as": source}
