"""Where one submission's grading CPU goes, in one process: the grader's side and the sandbox's side.

    .venv/bin/python benchmarks/bench_grade_cpu.py [--repeats 5] [--fixed 10]

One engine (Engine.open: the production path, no environment check) grades the reference solutions
once to warm up, then --repeats times more, and prints per submission (median, least and most):

grader:   this process's CPU time (time.process_time) inside Engine.grade: staging, source reading,
          the suites' own math and judging, encoding and decoding, the sandbox's door;
sandbox:  the CPU time of the fork server's control group (cgroup v1 cpuacct.usage, v2 cpu.stat):
          the fork server's forks, each session's intermediate and leader, the part child (the
          student's code, the per-operation resets, the child's end of the codec) and their exits.
          None where no control group can be made (no root, no delegated controllers).
round trips: request/reply exchanges with the child, by operation (Sandbox.round_trips), and the
          part children opened (Session.part).

and, with --fixed N, the sandbox's costs that do not depend on the checks (each the median of N):
a session opened and closed (its intermediate and leader: forks, namespaces, exits), a session with
one part child started and closed, and 100 trivial round trips (an import of a module already
imported) in one part child, less that child's own start: the cost of one round trip on each side.

Run it on an otherwise quiet machine, or compare only A/B pairs run side by side: every figure is
CPU time, but a busy machine still moves it (caches, migrations, the kernel's wake-ups).
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def spread(values, scale=1.0, digits=1):
    """{median, least, most} of values times scale, rounded."""
    return {"median": round(statistics.median(values) * scale, digits), "least": round(min(values) * scale, digits),
            "most": round(max(values) * scale, digits)}


def group_seconds(sandbox):
    """CPU seconds the fork server's control group has used so far (None: no group)."""
    return sandbox.group.cpu_seconds() if sandbox.group else None


def measured(sandbox, action):
    """(grader CPU seconds, sandbox CPU seconds or None) of action()."""
    group, start = group_seconds(sandbox), time.process_time()
    action()
    grader = time.process_time() - start
    return grader, (group_seconds(sandbox) - group if group is not None else None)


def fixed_costs(sandbox, folder, repeats):
    """The costs that do not depend on the checks, in milliseconds of CPU (median, least, most)."""
    def session():
        sandbox.session(folder).close()

    def part(trips=0):
        def action():
            opened = sandbox.session(folder)
            child = opened.part(20, 2048)
            for _ in range(trips):
                child.call({"op": "import", "target": {"module": "causal"}})
            child.close()
            opened.close()
        return action

    out = {}
    for name, action in (("session", session), ("session_and_part_child", part(1)),
                         ("session_and_part_child_101_round_trips", part(101))):
        action()  # warm
        samples = [measured(sandbox, action) for _ in range(repeats)]
        out[name] = {"grader_ms": spread([g for g, _ in samples], 1e3),
                     "sandbox_ms": spread([s for _, s in samples], 1e3) if samples[0][1] is not None else None}
    one, many = out["session_and_part_child"], out["session_and_part_child_101_round_trips"]
    out["one_round_trip_ms"] = {side: round((many[side]["median"] - one[side]["median"]) / 100, 3)
                                for side in ("grader_ms", "sandbox_ms") if one[side] is not None}
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--fixed", type=int, default=10, help="repeats of each fixed cost (0: not measured)")
    args = parser.parse_args()
    from autograder import settings as settings_mod
    from autograder.engine import Engine
    from autograder.sandbox import client

    opened = []
    part = client.Session.part

    def counting(self, *a, **k):
        opened.append(1)
        return part(self, *a, **k)

    client.Session.part = counting
    work = Path(tempfile.mkdtemp(prefix="bench-grade-cpu-"))
    folder = work / "student"
    shutil.copytree(ROOT / "solutions" / "ch03", folder, ignore=shutil.ignore_patterns("__pycache__"))
    engine = Engine.open(settings_mod.from_environment(), check=False)
    try:
        sandbox = engine.sandbox
        sandbox.ready()
        grade = engine.grade(folder)  # warm: the first grading pays for this process's lazy imports
        assert grade.score == grade.max_score, [(c.part, c.name, c.message) for c in grade.checks if not c.passed]
        sandbox.round_trips.clear()
        opened.clear()
        samples = []
        for _ in range(args.repeats):
            samples.append(measured(sandbox, lambda: engine.grade(folder)))
        checks = sum(len(p.checks) for p in engine.rubric.parts.values())
        result = {"repeats": args.repeats, "checks": checks,
                  "grader_cpu_ms": spread([g for g, _ in samples], 1e3),
                  "sandbox_cpu_ms": spread([s for _, s in samples], 1e3) if samples[0][1] is not None else None,
                  "total_cpu_ms": spread([g + s for g, s in samples], 1e3) if samples[0][1] is not None else None,
                  "round_trips": sum(sandbox.round_trips.values()) / args.repeats,
                  "round_trips_by_op": {op: n / args.repeats for op, n in sandbox.round_trips.most_common()},
                  "part_children": len(opened) / args.repeats}
        if args.fixed:
            result["fixed"] = fixed_costs(sandbox, folder, args.fixed)
        result["load_average_at_end"] = round(os.getloadavg()[0], 2)
        print(json.dumps(result, indent=1))
    finally:
        client.Session.part = part
        engine.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
