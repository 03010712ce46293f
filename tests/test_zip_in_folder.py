"""Issue 11 item 8: a zip inside the folder handed in is graded, by `grade DIR` and on Gradescope
(both commands run in this process, in the session's fork server: tests/in_process.py).

Gradescope puts what a student uploads in /autograder/submission: a student who uploads hw.zip (or
a zip Gradescope did not unpack) leaves one zip there. Staging finds the chapter's modules inside
it (autograder.submission._stage_folder), so both commands grade the zip: full marks for the
reference solutions, where "not found" scored 0 before.
"""
import json
import zipfile

import pytest
from in_process import run_command
from rubric_points import TOTAL

from autograder import PROJECT_ROOT

SOLUTIONS = PROJECT_ROOT / "solutions" / "ch03"


def zipped_solutions(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for module in sorted(SOLUTIONS.glob("*.py")):
            archive.write(module, f"ch03/{module.name}")
    return path


@pytest.mark.quick
def test_grade_dir_holding_one_zip(engine, tmp_path):
    """`grade DIR` in this process, in the session's fork server (tests/in_process.py); the Gradescope
    run below is the real command line."""
    zipped_solutions(tmp_path / "alice" / "alice-ch03.zip")
    status, _, stderr = run_command(engine, ["grade", tmp_path / "alice", "--json", tmp_path / "results.json"])
    assert status == 0, stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text())
    assert (results["score"], results["max_score"]) == (TOTAL, TOTAL)


def test_gradescope_submission_folder_holding_one_zip(engine, tmp_path):
    """`gradescope --run` (what run_autograder runs) in this process, in the session's fork server;
    the bundle's run_autograder is run as Gradescope runs it by test_gradescope and others."""
    root = tmp_path / "autograder"
    zipped_solutions(root / "submission" / "hw.zip")
    status, _, stderr = run_command(engine, ["gradescope", "--run", "--root", root])
    assert status == 0, stderr[-3000:]
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == TOTAL, results.get("output")
    assert all(test["status"] == "passed" for test in results["tests"])
