"""What a part child's first torch.compile costs it, and what restore's check of torch.compile's stance costs.

    .venv/bin/python benchmarks/bench_first_compile.py [--repeats 5]

In a fresh process each repeat (as a child starts from the fork server: torch, torch._dynamo and the emulated
GPU's imports loaded, torch.compile set to run code as written, inside/part_reset.compile_eagerly): the CPU
seconds (time.process_time) and resident MiB (/proc/self/statm) of a first torch.compile(f, fullgraph=True),
which imports inductor's modules whatever the stance, and of calling it; then part_reset._compiling_eagerly's
cost per call (timeit, in microseconds). Medians (least-most) over the repeats.
"""
import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ONE = r"""
import json, sys, time, timeit
sys.path.insert(0, %r)
import torch, torch._dynamo, torch._subclasses.fake_tensor, torch.fx.experimental.symbolic_shapes, sympy
from autograder.inside import part_reset
part_reset.compile_eagerly()
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20
r, t = rss(), time.process_time()
f = torch.compile(lambda x: torch.softmax(x, -1) * 2, fullgraph=True)
first_cpu, first_mib = time.process_time() - t, rss() - r
t = time.process_time()
f(torch.zeros(3))
call_cpu = time.process_time() - t
check_us = min(timeit.repeat(part_reset._compiling_eagerly, number=20000, repeat=5)) / 20000 * 1e6
print(json.dumps({"first_compile_cpu_s": first_cpu, "first_compile_mib": first_mib, "first_call_cpu_s": call_cpu,
                  "stance_check_us": check_us}))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    runs = [json.loads(subprocess.run([sys.executable, "-c", ONE % str(ROOT)], check=True, capture_output=True,
                                      text=True).stdout.strip().splitlines()[-1]) for _ in range(args.repeats)]
    for key in runs[0]:
        values = sorted(run[key] for run in runs)
        print(f"{key}: {statistics.median(values):.3g} ({values[0]:.3g}-{values[-1]:.3g})")


if __name__ == "__main__":
    main()
