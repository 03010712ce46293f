"""The reference under load: how many gradings are full marks, charged, or "not graded" (issue 37).

    .venv/bin/python benchmarks/bench_load_deaths.py [--busy 24] [--hold-mb 300] [--beside 2] [--runs 3]

Starts `--busy` endless Python loops (half of them holding `--hold-mb` MB each) and `--beside`
other grading loops (`python -m autograder grade` of the reference, again and again, as other
courses' jobs on a shared runner), then grades the reference (the solutions) `--runs` times with
`python -m autograder grade --json`, one after the other, and prints one line per grading and the
counts: full (100/100), charged (a score below the maximum), not graded (exit 3, no score). Every
process it started is ended by its pid on the way out. It measures verdicts, not time: the load
average it prints is the machine's at the end, for the record.
"""
import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BUSY = "while True: pass"
HOLDING = "block = bytearray({mb} << 20)\nfor i in range(0, len(block), 4096): block[i] = 1\nwhile True: pass"
BESIDE = ("import subprocess, sys\nwhile True:\n    subprocess.run([sys.executable, '-m', 'autograder', 'grade', "
          "sys.argv[1], '--seed', '5'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)")


def start_load(busy, hold_mb, beside, solutions):
    started = []
    for i in range(busy):
        code = HOLDING.format(mb=hold_mb) if i % 2 and hold_mb else BUSY
        started.append(subprocess.Popen([sys.executable, "-c", code]))
    for _ in range(beside):  # its own process group: its grade and that grade's sandbox end with it
        started.append(subprocess.Popen([sys.executable, "-c", BESIDE, str(solutions)], cwd=ROOT,
                                        start_new_session=True))
    return started


def stop_load(started):
    for process in started:
        try:
            os.killpg(process.pid, signal.SIGKILL) if os.getpgid(process.pid) == process.pid else process.kill()
        except (ProcessLookupError, PermissionError):
            pass
        process.wait()


def grade_once(solutions, seed, out):
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(solutions), "--seed", str(seed),
                           "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=3600)
    results = json.loads(out.read_text()) if out.exists() else {}
    if done.returncode == 3 and "score" not in results:
        return "not graded", results.get("output", "")
    score = results.get("score")
    if done.returncode == 0 and score == results.get("max_score"):
        return "full", f"{score}/{results.get('max_score')}"
    failed = [t.get("name", "") + ": " + t.get("output", "")[:160] for t in results.get("tests", [])
              if t.get("score") != t.get("max_score")]
    return "charged", f"exit {done.returncode}, {score}/{results.get('max_score')}; " + " | ".join(failed[:3])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=24)
    parser.add_argument("--hold-mb", type=int, default=300)
    parser.add_argument("--beside", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    from autograder import selftest

    solutions = selftest.SOLUTIONS
    counts = {"full": 0, "charged": 0, "not graded": 0}
    load = start_load(args.busy, args.hold_mb, args.beside, solutions)
    try:
        with tempfile.TemporaryDirectory() as folder:
            for run in range(args.runs):
                kind, said = grade_once(solutions, 100 + run, Path(folder) / f"g{run}.json")
                counts[kind] += 1
                print(f"grading {run + 1}: {kind} ({said})", flush=True)
        average = os.getloadavg()[0]
    finally:
        stop_load(load)
    print(f"machine: {platform.node()}, {os.cpu_count()} CPUs; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          f"load: {args.busy} busy ({args.busy // 2 if args.hold_mb else 0} holding {args.hold_mb} MB), "
          f"{args.beside} grading loops beside; load average at the end {average:.1f}")
    print(f"reference under load: {counts['full']} full, {counts['charged']} charged, "
          f"{counts['not graded']} not graded (of {args.runs})")
    return 0 if counts["full"] == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
