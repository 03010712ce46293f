"""Issue 11 items 4 and 6 through `python -m autograder batch`: one class holding one of each broken
or hostile submission among correct ones. Every student is recorded with the right score and
problem, grades.csv lists everyone (with a `problem` column), each student gets a results JSON with
the keys of any other and a feedback file, no message names the grader's paths, the summary says
what happened, and a rerun resumes.

The class is graded with two failures of the grader itself, made in the batch's own process (its
workers are forked from it): a worker that dies on "crasher" (batch.workers._grade_one replaced by one that
kills its process) and an exception while grading "raiser" (grading.grade_submission raising). Both
are recorded with the problem, the others are graded. The rerun, without the replacements, grades
only those two; the run after it has nothing to do (both as cli.main in the test's process:
tests/in_process.py).
"""
import csv
import json
import os
import shutil
import struct
import subprocess
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from in_process import run_plain
from rubric_points import TOTAL, g

from autograder import PARTS, PROJECT_ROOT, batch, grading, text

SOLUTIONS = PROJECT_ROOT / "solutions" / "ch03"
LOCAL, CENTRAL = b"PK\x03\x04", b"PK\x01\x02"
CRASHING = """
import os, sys
import autograder.batch.workers as workers
import autograder.grading as grading
original, original_grade = workers._grade_one, grading.grade_submission
def crash(student, path):
    if student == "crasher":
        os._exit(3)  # the worker dies, as under the OOM killer
    return original(student, path)
def grade(path, *args, **kwargs):
    if os.path.basename(path) == "raiser":
        raise RuntimeError("a bug in the grader")
    return original_grade(path, *args, **kwargs)
workers._grade_one, grading.grade_submission = crash, grade
from autograder.cli import main
sys.exit(main(sys.argv[1:]))
"""
FULL = ("ann", "ben", "cat")  # correct: a folder, a zip inside a folder, a 64 GiB sparse file beside
WORKER_DIED = f"{batch.INTERNAL} (its worker process died while grading it)"
RAISED = f"{batch.INTERNAL} (RuntimeError: a bug in the grader)"


def solutions_zip(path, prefix="ch03/"):
    with zipfile.ZipFile(path, "w") as archive:
        for module in sorted(SOLUTIONS.glob("*.py")):
            archive.write(module, prefix + module.name)
    return path


def notebook(path, module="simple_attention"):
    cell = {"cell_type": "code", "execution_count": None, "outputs": [], "source": (SOLUTIONS / f"{module}.py").read_text(),
            "metadata": {"nbgrader": {"grade": False, "grade_id": module, "locked": False, "solution": True}}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))


def flag_every(data, signature, offset, bit):
    data = bytearray(data)
    at = data.find(signature)
    while at >= 0:
        struct.pack_into("<H", data, at + offset, struct.unpack_from("<H", data, at + offset)[0] | bit)
        at = data.find(signature, at + 1)
    return bytes(data)


def make_class(folder):
    """-> {student: the problem expected (an exact string, or a prefix ending in '...'), '' for none}"""
    folder.mkdir(parents=True)
    shutil.copytree(SOLUTIONS, folder / "ann")
    (folder / "ben").mkdir()
    solutions_zip(folder / "ben" / "ch03 work.zip")  # Gradescope's folder holding the uploaded zip
    shutil.copytree(SOLUTIONS, folder / "cat")
    with open(folder / "cat" / "weights.bin", "wb") as f:
        f.truncate(64 << 30)  # sparse: never read, neither by staging nor by the fingerprint
    shutil.copytree(SOLUTIONS, folder / "crasher")
    shutil.copytree(SOLUTIONS, folder / "raiser")
    (folder / "badzip.zip").write_bytes(b"PK\x03\x04 this is not really a zip archive" * 10)
    (folder / "emptyzip.zip").write_bytes(b"")
    plain = solutions_zip(folder.parent / "plain.zip").read_bytes()
    (folder / "encrypted.zip").write_bytes(flag_every(flag_every(plain, LOCAL, 6, 1), CENTRAL, 8, 1))
    at = plain.find(b"import")
    (folder / "badcrc.zip").write_bytes(plain[:at] + b"I" + plain[at + 1:])
    with zipfile.ZipFile(folder / "clash.zip", "w") as archive:
        archive.writestr("ch03/causal.py", "x = 1\n")
        archive.writestr("ch03/causal.py/mha.py", "x = 1\n")
    (folder / "nonjson" / "ch03").mkdir(parents=True)
    (folder / "nonjson" / "ch03" / "01_self_attention.ipynb").write_text("this is not JSON")
    (folder / "emptydir").mkdir()
    notebook(folder / "dupnb" / "a" / "ch03.ipynb")
    notebook(folder / "dupnb" / "b" / "ch03.ipynb")
    shutil.copytree(SOLUTIONS, folder / "twosets" / "attempt1")
    shutil.copytree(SOLUTIONS, folder / "twosets" / "final")
    shutil.copytree(SOLUTIONS, folder / "hugemodule")
    with open(folder / "hugemodule" / "causal.py", "r+b") as f:
        f.truncate(64 << 30)
    return {
        "ann": "", "ben": "", "cat": "", "crasher": WORKER_DIED, "raiser": RAISED,
        "badzip": "not a valid zip file (no end record)",
        "emptyzip": "not a valid zip file (no end record)",
        "encrypted": "ch03/causal.py is encrypted (password-protected): hand in a zip without a password",
        "badcrc": "ch03/", "clash": "ch03/causal.py is both a file and a folder in the zip",
        "nonjson": "ch03/01_self_attention.ipynb: not valid JSON: ...",
        "emptydir": "nothing to grade: the submission is empty ...",
        "dupnb": "b/ch03.ipynb: a second solution cell for simple_attention (the first is in a/ch03.ipynb)",
        "twosets": "the chapter's modules are in 2 folders (attempt1/, final/): hand in one set of modules (remove or "
                   "rename the other folders)",
        "hugemodule": "more than 8 MiB of source files in the top folder",
    }


def matches(problem, expected):
    if expected == "ch03/":  # the CRC error names the first member it unpacks
        return problem.startswith("ch03/") and "cannot be unpacked (Bad CRC-32" in problem
    return problem.startswith(expected[:-3]) if expected.endswith("...") else problem == expected


def run(args, code=None):
    command = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "autograder", *args]
    done = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def run_here(args):
    """`python -m autograder ARGS` as cli.main in this process (tests/in_process.py, issue 38 item 6), for the
    reruns: what they print and write is read, not an interpreter's start and torch import (the
    first run, with its crashing worker, stays a process of its own, as on the command line); their
    fork server and workers start as on the command line -> the printed text (.stdout)."""
    status, stdout, stderr = run_plain(args)
    assert status == 0, stderr[-3000:]
    return SimpleNamespace(stdout=stdout, stderr=stderr)


def read_csv(out):
    with open(out / "grades.csv", newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], {row[0]: dict(zip(rows[0], row, strict=True)) for row in rows[1:]}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    expected = make_class(base / "class")
    out = base / "out"
    first = run(["batch", str(base / "class"), "--out", str(out), "--jobs", "2"], code=CRASHING)
    return base, expected, out, first


def test_every_student_is_recorded_with_the_right_problem(graded):
    base, expected, out, first = graded
    header, rows = read_csv(out)
    assert header == ["student", "score", "max_score", *PARTS, "problem"]
    assert sorted(rows) == sorted(expected)
    for student, problem in expected.items():
        row = rows[student]
        assert matches(row["problem"], problem), (student, row["problem"])
        want = 100 if student in FULL else 0
        assert (float(row["score"]), float(row["max_score"])) == (want, TOTAL), (student, row)


def test_every_student_has_results_and_feedback_without_the_graders_paths(graded):
    base, expected, out, first = graded
    keys = set(json.loads((out / "results" / "ann.json").read_text()))
    assert {"score", "max_score", "tests", "parts", "extra_data", "output"} <= keys
    for student in expected:
        results = json.loads((out / "results" / f"{student}.json").read_text())
        assert set(results) == keys, student  # a broken submission's record has the keys of any other
        assert len(results["tests"]) == sum(len(p.checks) for p in grading.load_rubric()[0].parts.values())
        feedback = (out / "feedback" / f"{student}.md").read_text()
        assert str(base) not in feedback and str(base) not in json.dumps(results), student
    broken = json.loads((out / "results" / "emptydir.json").read_text())
    assert {t["output"] for t in broken["tests"]} == {rows_problem(out, "emptydir")}  # one message, not one per module
    for student, problem in expected.items():  # the feedback says a submission's problem once
        fixes = (out / "feedback" / f"{student}.md").read_text().partition("## What to fix")[2]
        items = [line for line in fixes.splitlines() if line.startswith("- ")]
        assert len(items) == (1 if problem else 0), (student, items)


def rows_problem(out, student):
    return read_csv(out)[1][student]["problem"]


def test_the_summary_says_what_happened(graded):
    base, expected, out, first = graded
    lines = first.stdout.splitlines()
    assert lines[0] == f"batch: {len(expected)} submission(s) in {base / 'class'}"
    assert lines[1] == f"  graded now: {len(expected)}; up to date: 0"
    broken = [student for student, problem in expected.items() if problem]
    assert lines[2] == f"  not graded, scored 0 ({len(broken)}):"
    listed = dict(line.strip().split(": ", 1) for line in lines[3:3 + len(broken)])
    assert sorted(listed) == sorted(broken)
    assert all(matches(listed[s], expected[s]) for s in broken), listed
    assert lines[3 + len(broken)] == f"  scores (of {g(TOTAL)}): min 0, median 0, max {g(TOTAL)}"
    assert "\r[" not in first.stderr  # no progress bar where stderr is not a terminal


def test_a_rerun_resumes(graded):
    """Only the students the grader failed on are graded again (now fully); then nothing is left to
    do. A student whose submission left the class folder is named and left out of grades.csv."""
    base, expected, out, first = graded
    again = run_here(["batch", str(base / "class"), "--out", str(out), "--jobs", "2"])
    assert again.stdout.splitlines()[1] == f"  graded now: 2; up to date: {len(expected) - 2}"
    header, rows = read_csv(out)
    for student in ("crasher", "raiser"):
        assert (rows[student]["score"], rows[student]["problem"]) == (g(TOTAL), ""), student
    shutil.rmtree(base / "class" / "ann")
    last = run_here(["batch", str(base / "class"), "--out", str(out), "--jobs", "2"])
    lines = last.stdout.splitlines()
    assert lines[1] == f"  nothing to grade: {len(expected) - 1} up to date (unchanged since they were graded)"
    assert f"  in the gradebook but no longer in {base / 'class'} (left out of grades.csv): ann" in lines
    assert sorted(read_csv(out)[1]) == sorted(set(expected) - {"ann"})


def test_the_fingerprint_never_reads_what_staging_never_takes(tmp_path, monkeypatch):
    """digest() opens the modules and never the 64 GiB sparse file beside them (judged by the files
    it opens); that file still counts by its size."""
    folder = tmp_path / "cat"
    shutil.copytree(SOLUTIONS, folder)
    huge = folder / "weights.bin"
    with open(huge, "wb") as f:
        f.truncate(64 << 30)
    opened = []
    real_open = open
    monkeypatch.setattr(batch.plan, "open", lambda path, *a, **k: opened.append(Path(path)) or real_open(path, *a, **k),
                        raising=False)
    first = batch.digest(folder)
    assert huge not in opened and sorted(p.name for p in opened) == sorted(p.name for p in SOLUTIONS.glob("*.py"))
    os.truncate(huge, 32 << 30)
    assert batch.digest(folder) != first
    assert batch.digest(folder) == batch.digest(folder)


@pytest.mark.quick
def test_student_names_from_any_file_names(tmp_path):
    """Folder names that are not UTF-8, or that only differ in characters a name cannot keep, become
    distinct safe names (neither takes the name both would clean up to: tests/test_student_names.py);
    a name a spreadsheet would read as a formula is written as text."""
    (tmp_path / os.fsdecode(b"caf\xe9")).mkdir()
    (tmp_path / "caf_").mkdir()
    (tmp_path / "-bob").mkdir()
    names = [name for name, _, _ in batch.find_submissions(tmp_path)]
    assert names[0] == "-bob" and all(n.startswith("caf_~") for n in names[1:]) and len(set(names)) == 3
    assert text.csv_cell("-bob") == "'-bob" and text.csv_cell("=1+1") == "'=1+1" and text.csv_cell("bob") == "bob"
