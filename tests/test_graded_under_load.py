"""Issue 30 item 1 (d), issue 37 item 1: the same scores alone, in a batch, under load and under two seeds.

Twelve busy processes per core run (plain Python loops at normal priority, half of them holding
300 MB, started and ended by this test, by pid) while `grade`, `ci` and `batch --jobs 2` grade at the
same time (each grader beside two others, as other courses' jobs on a shared runner would be), all of
them on one core of the machine (LOADED_CPU: the loops, the three commands and everything they start,
sandboxes included, inherit the core):
a correct submission gets full marks in each (load makes grading slower, never cheaper and never
ungraded: a part is "not graded" only on proof, benchmarks/bench_load_deaths.py counts it); a
submission with one bug scores what it scores alone. Nothing here waits for the load to peak or
measures time: only the verdicts are compared.

Each command is `python -m autograder` (its __main__, run by runpy) in an interpreter that has already
imported what the command imports (torch, the grader's modules) and waits on its stdin: the load starts
once all three are waiting, then each is told to go (issue 38 item 6: the three torch imports were a
third of this test's work under load, and an import is not grading). Everything the command does, from
reading its arguments and starting its fork servers to writing its results, runs under the load.

Why one core (issue 38 item 6): twelve loops per core of every core (24 on two) held the whole machine for
the window, so the test suite's other workers stood still beside them (the loops' CPU was most of the suite's
longest test's); on one core the graders meet the same twelve loops per core, with no second core to escape
to, and the rest of the machine is left to the rest of the suite.
"""
import csv
import json
import os
import signal
import subprocess
import sys
from contextlib import contextmanager

import pytest
from part_edits import grade, scores, submission
from rubric_points import PART, TOTAL

from autograder import PARTS, PROJECT_ROOT

pytestmark = pytest.mark.load
BUSY_PER_CORE = 12
# the one core the loaded commands and the loops run on (each sets its affinity before anything else, so
# every thread and process it starts inherits it); the others stay with the rest of the test suite
LOADED_CPU = max(os.sched_getaffinity(0))
PINNED = f"import os\nos.sched_setaffinity(0, {{{LOADED_CPU}}})\n"
KEYS_BUG = ("mha", "keys = self.W_key(x)", "keys = self.W_query(x)")


HOLDING = "block = bytearray(300 << 20)\nfor i in range(0, len(block), 4096): block[i] = 1\nwhile True: pass"


@contextmanager
def busy_machine():
    """BUSY_PER_CORE endless loops on LOADED_CPU, the core the commands run on (every other one holding
    300 MB), all ended (SIGKILL to each pid this test started) on the way out. (Issue 38 item 6: the two
    `grade` loops that used to run beside are gone: the three commands graded here run beside each other,
    each one the other courses' jobs of the other two, and each loop cost the load's window a share of the CPU.)"""
    loops = [subprocess.Popen([sys.executable, "-c", PINNED + (HOLDING if i % 2 else "while True: pass")])
             for i in range(BUSY_PER_CORE)]
    try:
        yield
    finally:
        for loop in loops:
            os.kill(loop.pid, signal.SIGKILL)
            loop.wait()


# `python -m autograder ARGS` (sys.argv[1:]) once a line arrives on stdin; "ready" on stdout: its imports are done
STARTER = PINNED + """import runpy, sys
import torch, numpy, yaml
import autograder.cli, autograder.engine, autograder.grading, autograder.reports, autograder.batch
from autograder.commands import batch, ci, grade
print("ready", flush=True)
sys.stdin.readline()
sys.argv = ["python -m autograder", *sys.argv[1:]]
runpy.run_module("autograder", run_name="__main__", alter_sys=True)
"""


@contextmanager
def waiting_commands(**commands):
    """name=ARGS: `python -m autograder ARGS` each, started together, yielded once every one has done its
    imports and waits for go(process); any still running on the way out is ended (SIGKILL, by pid)."""
    runs = {name: subprocess.Popen([sys.executable, "-c", STARTER, *args], cwd=PROJECT_ROOT, stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for name, args in commands.items()}
    try:
        for name, process in runs.items():
            said = process.stdout.readline()  # blocks until its imports are done (or it ended: "")
            assert said == "ready\n", (name, said, process.stderr.read()[-3000:])
            assert os.sched_getaffinity(process.pid) == {LOADED_CPU}, name  # and what it starts inherits it
        yield runs
    finally:
        for process in runs.values():
            if process.poll() is None:
                os.kill(process.pid, signal.SIGKILL)
                process.wait()


def go(process):
    process.stdin.write("go\n")
    process.stdin.flush()  # (communicate() closes it)


def finished(process):
    out, err = process.communicate(timeout=1500)
    return process.returncode, out + err


def full_marks(code, output, results_path):
    """A correct submission: 100 / 100 (never charged, never left ungraded by load alone)."""
    results = json.loads(results_path.read_text())
    assert code == 0 and (results["score"], results["max_score"]) == (TOTAL, TOTAL), output


def test_scores_alone_equal_scores_under_load_in_grade_ci_and_batch(engine, tmp_path):
    good = submission(tmp_path / "good")
    keys = submission(tmp_path / "keys", KEYS_BUG)
    # alone, a correct submission scores full marks (the reference's property every grading test states:
    # test_fairness.py grades it under three secrets), a wrong one what the session's engine gives it
    alone = {"good": dict(PART), "keys": scores(grade(engine, keys, None))}
    assert alone["keys"]["mha"] < PART["mha"]
    classroom = tmp_path / "class"
    classroom.mkdir()
    for name, folder in (("good", good), ("keys", keys)):
        folder.rename(classroom / name)
    # the environment check's cache is filled before the load (grading.yml may be new to this machine),
    # by the session's fork server (a view of the engine: the shared one's grades stay as they were)
    check = engine.with_seed(None).check_environment()
    assert check["passed"], check  # else EnvironmentFailed: the reference lost a point
    with waiting_commands(grade=["grade", str(classroom / "good"), "--seed", "11", "--json", str(tmp_path / "g.json")],
                          ci=["ci", str(classroom / "good"), "--seed", "12", "--json", str(tmp_path / "c.json")],
                          batch=["batch", str(classroom), "--out", str(tmp_path / "out"), "--jobs", "2", "--seed", "12"]
                          ) as runs, busy_machine():
        for process in runs.values():
            go(process)
        ended = {name: finished(process) for name, process in runs.items()}
    full_marks(*ended["grade"], tmp_path / "g.json")
    full_marks(*ended["ci"], tmp_path / "c.json")
    code, output = ended["batch"]
    assert code == 0, output
    with open(tmp_path / "out" / "grades.csv", newline="") as f:
        rows = {row["student"]: row for row in csv.DictReader(f)}
    for name in ("good", "keys"):
        row = rows[name]
        assert row["problem"] == "" and {p: float(row[p]) for p in PARTS} == alone[name], (name, row, output)
