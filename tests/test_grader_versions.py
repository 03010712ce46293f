"""What the release tells students about the grader: its versions (assignments/ch03/tests/
grader_versions.json, warned about at the start of the public tests when theirs differ) and, when
grading.yml sets one, the Gradescope submission limit (README and notebooks, generated)."""
import json
import platform
import shutil
import subprocess
import sys

import numpy
import pytest
import torch
from in_process import run_plain

from autograder import PROJECT_ROOT
from autograder.authoring import notebooks

SOLUTIONS = PROJECT_ROOT / "solutions" / "ch03"
LIMIT_TEXT = "Gradescope grades at most 2 graded submissions in any 24 hours."


@pytest.fixture(scope="module")
def limited_rubric(tmp_path_factory):
    path = tmp_path_factory.mktemp("rubric") / "grading.yml"
    path.write_text((PROJECT_ROOT / "grading.yml").read_text() + "submissions: {limit: 2, window_hours: 24}\n")
    return path


@pytest.fixture(scope="module")
def release(tmp_path_factory, limited_rubric):
    out = tmp_path_factory.mktemp("release") / "ch03-student"
    status, _, stderr = run_plain(["release", "--out", out, "--rubric", limited_rubric])  # tests/in_process.py
    assert status == 0, stderr
    return out


def test_the_release_carries_the_graders_versions(release):
    versions = json.loads((release / "assignments" / "ch03" / "tests" / "grader_versions.json").read_text())
    assert {k: versions[k] for k in ("python", "torch", "numpy")} == {
        "python": platform.python_version(), "torch": torch.__version__, "numpy": numpy.__version__}
    assert not (PROJECT_ROOT / "assignments" / "ch03" / "tests" / "grader_versions.json").exists()  # generated only


def public_tests(folder):
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--submission={SOLUTIONS}",
                           "-m", "causal"], cwd=folder, capture_output=True, text=True, timeout=300)


def test_the_public_tests_warn_at_the_start_when_versions_differ_and_still_pass(release, tmp_path):
    """(The same versions, the release as made: no warning, the tests pass: test_release.py's
    test_public_tests_run_from_the_release, which runs every public test of a release made here.)"""
    other = tmp_path / "other"
    shutil.copytree(release, other)
    (other / "assignments" / "ch03" / "tests" / "grader_versions.json").write_text(json.dumps(
        {"python": platform.python_version(), "torch": "1.13.1", "numpy": numpy.__version__}))
    differs = public_tests(other)
    assert differs.returncode == 0, differs.stdout[-2000:]  # a warning, never a failure
    first = differs.stdout.splitlines()[0]
    assert first.startswith(f"warning: your torch is {torch.__version__} here, 1.13.1 on the grader. ")
    assert "floating-point results" in first and "default dtypes" in first
    assert "Python" not in first and "NumPy" not in first  # only what differs


def test_a_patch_release_or_a_build_tag_is_not_a_difference(release, tmp_path):
    other = tmp_path / "patch"
    shutil.copytree(release, other)
    major, minor = torch.__version__.split("+")[0].split(".")[:2]
    (other / "assignments" / "ch03" / "tests" / "grader_versions.json").write_text(json.dumps(
        {"python": platform.python_version(), "torch": f"{major}.{minor}.99+cu130", "numpy": numpy.__version__}))
    run = public_tests(other)
    assert run.returncode == 0 and "warning" not in run.stdout.lower()


def test_the_readme_states_the_submission_limit_from_grading_yml(release):
    readme = (release / "README.md").read_text()
    assert f"**Submission limit.** {LIMIT_TEXT}" in readme
    assert "@SUBMISSIONS@" not in readme


def test_without_a_limit_the_readme_says_nothing_of_one(tmp_path):
    out = tmp_path / "plain"
    status, _, stderr = run_plain(["release", "--out", out])
    assert status == 0, stderr
    readme = (out / "README.md").read_text()
    assert "Submission limit" not in readme and "@SUBMISSIONS@" not in readme


@pytest.mark.quick
def test_the_graded_notebooks_state_the_limit(limited_rubric):
    texts = notebooks.notebook_texts(rubric_path=limited_rubric)
    for name, text in texts.items():
        cells = json.loads(text)["cells"]
        graded = any(c["metadata"].get("nbgrader", {}).get("solution") for c in cells)
        limit = [c for c in cells if c["id"] == "submission_limit"]
        if graded:
            assert cells[1]["id"] == "submission_limit", name
            assert LIMIT_TEXT in "".join(cells[1]["source"]) and cells[1]["metadata"]["nbgrader"]["locked"]
        else:
            assert limit == [], name  # the speed lab is never graded
    plain = notebooks.notebook_texts()
    assert all("submission_limit" not in text for text in plain.values())
