"""Batch throughput of the project's grader vs `nbgrader autograde`, measured in one run.

    .venv/bin/python benchmarks/bench_batch.py [--students 20] [--small 5] [--jobs 2] [--repeats 3]

Builds a class of N submissions (copies of the reference solutions) and a class of `--small` of
them, then, alternating A B A B:
  A: python -m autograder batch CLASS --out OUT --jobs J --force      (modules, sandboxed)
  B: nbgrader autograde ch03 on the notebook versions of the same submissions
For each tool it prints (medians over repeats):
  - whole batch: seconds per submission for the class of N, start-up included;
  - steady state: the cost of one more submission, (time for N - time for small) / (N - small),
    i.e. throughput once the tool has started (start-up is paid once per run, not per student);
the ratios B/A of both (of the medians, and repeat by repeat with their median, least and most:
"ratio_pairs_*"), the load average when it ended, and the peak memory of A (the resident memory of its whole process tree,
summed, sampled every 50 ms). Both tools grade the same number of students.
Needs nbgrader (pip install -e '.[notebooks]'); with --skip-nbgrader only A runs.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def tree_rss(pid):
    """Resident memory (bytes) of pid and all its descendants, from /proc."""
    children, rss = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
            rss[int(entry)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        total += rss.get(p, 0)
        stack.extend(children.get(p, []))
    return total


def timed(cmd, cwd=None, env=None):
    """(seconds, peak tree RSS) of a command; raises if it fails."""
    peak = [0]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    done = threading.Event()

    def sample():
        while not done.wait(0.05):
            peak[0] = max(peak[0], tree_rss(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = proc.communicate()
    done.set()
    elapsed = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{err[-2000:]}")
    return elapsed, peak[0]


def make_class(folder, n):
    for i in range(n):
        shutil.copytree(ROOT / "solutions" / "ch03", folder / f"student{i:03d}",
                        ignore=shutil.ignore_patterns("__pycache__"))


def nbgrader_course(folder, n):
    """A course directory with the released assignment and n submitted notebook sets."""
    source = ROOT / "source" / "ch03"
    course = folder / "course"
    ungraded = [p.name for p in source.glob("*.ipynb")  # the speed lab: stock autograde would time it in a kernel
                if not any(c["metadata"].get("nbgrader", {}).get("grade") for c in json.loads(p.read_text())["cells"])]
    shutil.copytree(source, course / "source" / "ch03", ignore=shutil.ignore_patterns(*ungraded))
    # nbgrader runs `alembic` (and jupyter) by name: the virtual environment's bin must be on PATH
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": f"{Path(PY).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    subprocess.run([PY, "-m", "nbgrader", "generate_assignment", "ch03", "--force", "--create",
                    f"--CourseDirectory.root={course}"], check=True, env=env, capture_output=True)
    for i in range(n):
        target = course / "submitted" / f"student{i:03d}" / "ch03"
        shutil.copytree(course / "source" / "ch03", target)  # the solutions, as if the student solved it
        (target / "timestamp.txt").write_text("2026-11-22 12:00:00.000000 UTC")
    return course, env


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--small", type=int, default=5, help="the smaller class, for the steady-state cost")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-nbgrader", action="store_true")
    args = parser.parse_args()
    if not 0 < args.small < args.students:
        parser.error("--small must be between 0 and --students")
    sizes = (args.small, args.students)

    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        tmp = Path(tmp)
        classes = {n: tmp / f"class{n}" for n in sizes}
        for n, folder in classes.items():
            make_class(folder, n)
        courses = {} if args.skip_nbgrader else {n: nbgrader_course(tmp / f"nb{n}", n) for n in sizes}
        ours = {n: [] for n in sizes}
        theirs = {n: [] for n in sizes}
        peaks = []
        for _ in range(args.repeats):
            for n in sizes:
                seconds, peak = timed([PY, "-m", "autograder", "batch", str(classes[n]), "--out", str(tmp / f"out{n}"),
                                       "--jobs", str(args.jobs), "--force"], cwd=ROOT)
                ours[n].append(seconds)
                peaks.append(peak)
                if n in courses:
                    course, env = courses[n]
                    seconds, _ = timed([PY, "-m", "nbgrader", "autograde", "ch03", "--force",
                                        f"--CourseDirectory.root={course}"], cwd=course, env=env)
                    theirs[n].append(seconds)
        result = {"students": args.students, "small": args.small, "jobs": args.jobs, "repeats": args.repeats,
                  **summary("autograder_batch", ours, sizes),
                  "autograder_batch_peak_rss_mib": round(max(peaks) / 2**20)}
        if courses:
            result.update(summary("nbgrader_autograde", theirs, sizes))
            for what in ("whole_batch", "steady_state"):
                result[f"ratio_nbgrader_over_autograder_{what}"] = round(
                    result[f"nbgrader_autograde_{what}_s_per_submission"] /
                    result[f"autograder_batch_{what}_s_per_submission"], 1)
            result.update(pair_ratios(ours, theirs, sizes))
        result["load_average_at_end"] = round(os.getloadavg()[0], 2)
        print(json.dumps(result, indent=1))


def pair_ratios(ours, theirs, sizes):
    """nbgrader's time / ours, repeat by repeat (each of our runs against nbgrader's run just after it,
    on the same class): {median, least, most} for the whole batch of N and the steady state."""
    small, large = sizes

    def spread(values):
        return {"median": round(statistics.median(values), 1), "least": round(min(values), 1),
                "most": round(max(values), 1)}

    whole = [b / a for a, b in zip(ours[large], theirs[large], strict=True)]
    steady = [(tb - ta) / (ob - oa) for oa, ob, ta, tb in zip(ours[small], ours[large], theirs[small], theirs[large],
                                                              strict=True) if ob > oa]
    return {"ratio_pairs_whole_batch": spread(whole),
            **({"ratio_pairs_steady_state": spread(steady)} if steady else {})}


def summary(name, times, sizes):
    """{name_whole_batch_s_per_submission, name_steady_state_s_per_submission, name_seconds} from
    {class size: [seconds per repeat]}: medians over the repeats."""
    small, large = sizes
    whole = statistics.median(t / large for t in times[large])
    steady = statistics.median((b - a) / (large - small) for a, b in zip(times[small], times[large]))
    return {f"{name}_whole_batch_s_per_submission": round(whole, 3),
            f"{name}_steady_state_s_per_submission": round(steady, 3),
            f"{name}_seconds": {str(n): [round(t, 2) for t in times[n]] for n in sizes}}


if __name__ == "__main__":
    main()
