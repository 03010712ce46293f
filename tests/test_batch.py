"""Batch grading end to end, through `python -m autograder batch DIR --out OUT`.

One class of eight submissions (full marks as a folder and as a zip, wrong math in two parts, a
stub, missing modules, an empty folder, a file that is not a zip) is graded:

- cleanly with --jobs 2: the reference run;
- with --jobs 2, SIGKILLed (the whole process tree) right after the first grade is committed,
  then run again: every student is in the gradebook exactly once with the reference run's
  results, and nothing committed before the kill is graded again;
- then with --force --jobs 1: everything is regraded, to the same results;
- under other names that reverse the grading order, with --jobs 2: the same results.

Broken submissions never stop a batch: they get zero with the reason. grades.csv has the
columns student, score, max_score, one per part and problem (why a submission was not graded).
"""
import csv
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from datetime import datetime, timezone

import process_ends
import pytest
from in_process import run_plain

from autograder import PARTS, PROJECT_ROOT, grading, scratch

SOLUTIONS = PROJECT_ROOT / "solutions" / "ch03"
STUDENTS = ("alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi")

UNSCALED_CAUSAL = '''

def masked_attention_weights(scores, d_k):  # forgets the 1/sqrt(d_k) scaling
    return torch.softmax(scores.masked_fill(causal_mask(scores.shape[-1]), -torch.inf), dim=-1)
'''
UNSHIFTED_SOFTMAX = '''

def softmax(z, axis=-1):  # no max-shift: overflows for large scores
    e = np.exp(z)
    return e / np.sum(e, axis=axis, keepdims=True)
'''
STUB_SIMPLE_ATTENTION = '''import torch


def softmax_naive(x):
    raise NotImplementedError


def context_vector(inputs, query_index):
    raise NotImplementedError


def attention_scores(inputs):
    raise NotImplementedError


def attention_weights(scores):
    raise NotImplementedError


def context_vectors(inputs):
    raise NotImplementedError
'''


def make_class(folder, names=None):
    """The eight submissions, each under names[student] (default: its own name)."""
    names = names or {s: s for s in STUDENTS}
    folder.mkdir(parents=True)

    def copy(student, skip=()):
        target = folder / names[student]
        target.mkdir()
        for module in SOLUTIONS.glob("*.py"):
            if module.stem not in skip:
                shutil.copyfile(module, target / module.name)
        return target

    copy("alice")
    with zipfile.ZipFile(folder / f"{names['bob']}.zip", "w") as archive:
        for module in sorted(SOLUTIONS.glob("*.py")):
            archive.write(module, f"bob-ch03/{module.name}")
    with open(copy("carol") / "causal.py", "a") as f:
        f.write(UNSCALED_CAUSAL)
    copy("dave", skip={"mha", "exercises"})
    (folder / f"{names['erin']}.zip").write_bytes(b"PK\x03\x04 this is not really a zip archive" * 10)
    (copy("frank") / "simple_attention.py").write_text(STUB_SIMPLE_ATTENTION)
    with open(copy("grace") / "numpy_attention.py", "a") as f:
        f.write(UNSHIFTED_SOFTMAX)
    (folder / names["heidi"]).mkdir()
    return folder


def batch(folder, out, *options):
    """`python -m autograder batch` as cli.main in this process (tests/in_process.py, issue 38 item 6: the
    interpreter's start and torch import are read by no test); its fork server and workers start as on
    the command line. The runs a test kills are real processes (test_kill_and_resume, below)."""
    status, stdout, stderr = run_plain(["batch", folder, "--out", out, *options])
    assert status == 0, stderr[-3000:]
    return stdout


def gradebook(out):
    """student -> {score, max_score, problem, graded_at, parts: {part: score}, checks: {(part, name): ...}}"""
    db = sqlite3.connect(f"file:{out / 'gradebook.db'}?mode=ro", uri=True)
    try:
        rows = {}
        for student, score, max_score, problem, graded_at in db.execute(
                "SELECT student, score, max_score, problem, graded_at FROM submissions"):
            rows[student] = {"score": score, "max_score": max_score, "problem": problem, "graded_at": graded_at,
                             "parts": {}, "checks": {}}
        for student, part, score in db.execute("SELECT student, part, score FROM part_scores"):
            rows[student]["parts"][part] = score
        for student, part, name, ok, score, message in db.execute(
                "SELECT student, part, check_name, passed, score, message FROM check_results"):
            rows[student]["checks"][(part, name)] = (bool(ok), score, message)
        return rows
    finally:
        db.close()


def results(rows, folder=None, names=None):
    """What must not depend on how or when the grading ran: everything but the time stamp, with
    the submission's path (in the messages of broken submissions) written as <submission>."""
    def same(student, text):
        if folder is None:
            return text
        return text.replace(f"{folder}/{(names or {}).get(student, student)}", "<submission>")

    return {s: {"score": r["score"], "max_score": r["max_score"], "problem": same(s, r["problem"]), "parts": r["parts"],
                "checks": {k: (ok, score, same(s, m)) for k, (ok, score, m) in r["checks"].items()}}
            for s, r in rows.items()}


def second_after(rows):
    """Wait until the clock the gradebook stamps with (UTC, whole seconds) is past every graded_at of rows,
    so that a grade made from now on has a later stamp (issue 38 item 6: the fixed 1.1 s sleeps this
    replaces waited even when the kill and its clean-up had already taken that long)."""
    last = max(datetime.fromisoformat(row["graded_at"]) for row in rows.values())
    while datetime.now(timezone.utc).replace(microsecond=0) <= last:
        time.sleep(0.05)


@pytest.fixture(scope="module")
def rubric():
    return grading.load_rubric()[0]


@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    return make_class(tmp_path_factory.mktemp("batch") / "class")


FORKS: list[list[str]] = []  # the clean run's forks: the threads of this process at each (their names)


@pytest.fixture(scope="module")
def clean(classroom, tmp_path_factory):
    """The reference: one uninterrupted run with --jobs 2 (each os.fork it makes noted in FORKS)."""
    out = tmp_path_factory.mktemp("clean") / "out"
    real = os.fork

    def fork():
        FORKS.append(sorted(t.name for t in threading.enumerate()))
        return real()

    os.fork = fork
    try:
        batch(classroom, out, "--jobs", "2")
    finally:
        os.fork = real
    return out, gradebook(out)


def test_the_workers_are_forked_from_one_thread(clean):
    """Expected: the batch forks its two workers while its process runs no other Python thread (a
    thread holding a lock at the fork leaves the child that lock held for ever; Python 3.12 warns
    "multi-threaded, use of fork() may lead to deadlocks"). The slots' queue is written at once
    (SimpleQueue): multiprocessing.Queue's feeder thread was running at every fork."""
    assert len(FORKS) == 2 and all(threads == ["MainThread"] for threads in FORKS), FORKS


@pytest.mark.quick
def test_clean_run_grades_everyone(clean, rubric):
    """Every student once; full marks where deserved; each mistake costs its own part (and the
    parts that import it) only; broken submissions get zero with the reason."""
    out, rows = clean
    assert sorted(rows) == sorted(STUDENTS)
    full = rubric.max_score
    for student in ("alice", "bob"):
        assert rows[student]["score"] == rows[student]["max_score"] == full, rows[student]["parts"]
    part_max = {name: part.max_score for name, part in rubric.parts.items()}

    def only_lost(student, lost, zero=False):
        for part, score in rows[student]["parts"].items():
            if part in lost:
                assert score == 0 if zero else score < part_max[part], (student, part, score)
            else:
                assert score == part_max[part], (student, part, score)

    only_lost("carol", {"causal"})  # mha and exercises use CausalAttention, not masked_attention_weights
    assert rows["carol"]["parts"]["causal"] > 0
    only_lost("dave", {"mha", "exercises"}, zero=True)
    only_lost("frank", {"simple_attention"}, zero=True)
    only_lost("grace", {"numpy_attention"})
    for student in ("erin", "heidi"):
        assert rows[student]["score"] == 0 and rows[student]["max_score"] == full
    assert rows["erin"]["problem"] == "not a valid zip file (no end record)"
    # an empty folder is one problem, the same for every check (not one "X.py was not found" per module)
    assert rows["heidi"]["problem"].startswith("nothing to grade: the submission is empty")
    assert {m for _, _, m in rows["heidi"]["checks"].values()} == {rows["heidi"]["problem"]}
    assert sorted(p.stem for p in (out / "results").glob("*.json")) == sorted(STUDENTS)
    assert sorted(p.stem for p in (out / "feedback").glob("*.md")) == sorted(STUDENTS)
    for student in STUDENTS:
        data = json.loads((out / "results" / f"{student}.json").read_text())
        assert data["score"] == rows[student]["score"]
        # the batch checked its environment once, before anyone: every record says so (unstageable ones too)
        check = data["environment_check"]
        assert check["passed"] and check["reference_score"] == check["max_score"] == full and check["device"] == "cpu"


def test_grades_csv(clean):
    """grades.csv: student, score, max_score, then one column per part, then problem; one row per student."""
    out, rows = clean
    with open(out / "grades.csv", newline="") as f:
        table = list(csv.reader(f))
    assert table[0] == ["student", "score", "max_score", *PARTS, "problem"]
    assert [r[0] for r in table[1:]] == sorted(STUDENTS)
    for student, score, max_score, *parts, problem in table[1:]:
        assert float(score) == rows[student]["score"] and float(max_score) == rows[student]["max_score"]
        assert [float(p) for p in parts] == [rows[student]["parts"][p] for p in PARTS]
        assert problem == rows[student]["problem"]
        assert bool(problem) == (student in ("erin", "heidi")), student


# Runs `python -m autograder` with one change: right after the gradebook's first commit the batch process
# stops itself (SIGSTOP), so the test's kill comes after exactly one commit however the machine schedules
# the test (a test polling for that commit could be descheduled while the batch committed everyone).
STOP_AFTER_FIRST_COMMIT = """\
import os, runpy, signal, sys
from autograder.course.gradebook import Gradebook
record = Gradebook.record
def record_then_stop(self, *args, **kwargs):
    record(self, *args, **kwargs)
    os.kill(os.getpid(), signal.SIGSTOP)
Gradebook.record = record_then_stop
sys.argv[0] = "autograder"
runpy.run_module("autograder", run_name="__main__", alter_sys=True)
"""


def stopped_at_first_commit(process):
    """Wait until the batch run with STOP_AFTER_FIRST_COMMIT has stopped itself."""
    deadline = time.monotonic() + 300  # a bound on a hang only
    while (seen := process_ends.read(process.pid)) is not None and seen.state != "T":
        assert process.poll() is None, "the batch ended before committing anything"
        assert time.monotonic() < deadline, "no grade was committed in 5 minutes"
        time.sleep(0.02)
    assert seen is not None, "the batch ended before committing anything"


def test_kill_and_resume(classroom, clean, tmp_path):
    """SIGKILL the batch (and its whole process tree) right after the first grade is committed;
    run it again: nothing committed is graded again, nothing is lost, every student is there
    exactly once with the reference results. Then --force --jobs 1 regrades all, identically."""
    out = tmp_path / "out"
    process = subprocess.Popen([sys.executable, "-c", STOP_AFTER_FIRST_COMMIT, "batch", str(classroom), "--out",
                                str(out), "--jobs", "2"], cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        stopped_at_first_commit(process)
        tree = process_ends.descendants(process.pid)
        os.killpg(process.pid, signal.SIGKILL)  # the batch and its workers; fork servers have sessions of their own
    finally:
        process.kill()
        process.wait()
    left = process_ends.wait_ended(tree)
    process_ends.kill_all(left)
    assert not left, "fork servers or sandboxed children of the killed batch kept running"

    before = gradebook(out)
    assert len(before) == 1 < len(STUDENTS), before  # stopped at its first commit
    second_after(before)  # graded_at has whole seconds: a regrade would show
    batch(classroom, out, "--jobs", "2")
    # what the killed processes were writing (a worker's staged folder, a partial output) is swept by this run
    killed = tuple(f"{kind}-{pid}." for kind in (*scratch.KINDS, scratch.PARTIAL) for pid in tree | {process.pid})
    left = [n for n in os.listdir(tempfile.gettempdir()) if n.startswith(killed)]
    left += [str(p) for p in out.rglob(f"{scratch.PARTIAL}-*")]
    assert not left, f"the killed batch's temporary files outlived the next run: {left}"
    after = gradebook(out)
    assert sorted(after) == sorted(STUDENTS)
    for student, row in before.items():
        assert after[student] == row, f"{student} was graded again after the restart"
    assert results(after) == results(clean[1])
    assert sorted(p.stem for p in (out / "results").glob("*.json")) == sorted(STUDENTS)

    second_after(after)
    batch(classroom, out, "--force", "--jobs", "1")
    forced = gradebook(out)
    assert sorted(forced) == sorted(STUDENTS)
    assert all(forced[s]["graded_at"] > after[s]["graded_at"] for s in STUDENTS), "--force skipped someone"
    assert results(forced) == results(clean[1])


def test_same_results_in_any_order(classroom, clean, tmp_path):
    """The same submissions under names that reverse the grading order give the same results."""
    names = {student: f"{chr(ord('z') - i)}_{student}" for i, student in enumerate(STUDENTS)}
    folder = make_class(tmp_path / "class", names)
    out = tmp_path / "out"
    batch(folder, out, "--jobs", "2")
    rows = gradebook(out)
    renamed = {student: rows[name] for student, name in names.items()}
    assert results(renamed, folder, names) == results(clean[1], classroom)


def test_killing_only_the_batch_process_leaves_no_workers(tmp_path):
    """SIGKILL the batch process alone (as the OOM killer would): its workers, fork servers and
    sandboxed children must not outlive it."""
    folder = tmp_path / "class"
    folder.mkdir()
    for student in ("ann", "ben", "cat"):
        shutil.copytree(SOLUTIONS, folder / student)
    out = tmp_path / "out"
    process = subprocess.Popen([sys.executable, "-c", STOP_AFTER_FIRST_COMMIT, "batch", str(folder), "--out",
                                str(out), "--jobs", "2"], cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    tree = set()
    try:
        stopped_at_first_commit(process)  # its workers and fork servers are still there
        tree = process_ends.descendants(process.pid)
        process.kill()
        process.wait()
        left = process_ends.wait_ended(tree)
    finally:
        process_ends.kill_all(tree | process_ends.descendants(process.pid))
    assert tree and not left, f"{len(left)} processes outlived the killed batch"


def test_a_worker_grades_with_the_rubric_and_suites_the_batch_read(monkeypatch):
    """Issue 38 item 7: a batch's worker (Engine.for_worker, in the forked process) takes the parent's
    rubric and suites, the ones the run's fingerprint was taken of, instead of reading and checking
    grading.yml again in every worker; an engine that has read none reads them then."""
    from autograder.engine import Engine

    engine = Engine()
    engine.load_rubric()

    def read_again(*args, **kwargs):
        raise AssertionError("the worker read the rubric again")

    monkeypatch.setattr(grading, "load_rubric", read_again)
    worker = engine.for_worker(object(), 1)
    assert worker.rubric is engine.rubric and worker.suites is engine.suites
    assert worker.environment_check is engine.environment_check and worker.chapter is engine.chapter
    with pytest.raises(AssertionError, match="read the rubric again"):
        Engine().for_worker(object(), 1)
