"""The grader checks its own environment (autograder/envcheck.py) before it charges anyone.

A broken environment is made honestly: a copy of the grader (the Gradescope bundle as a folder)
whose suites carry a stale snapshot of the book's values (one value off, as after a regeneration
on another platform). There the reference solutions lose the points of that check, so `grade`
refuses, naming the check, and writes no score; the Gradescope run says the submission was not
graded. The cache: a verdict is kept per environment (and only a full score), a hit grades
nothing, and any change of what the key covers misses.
"""
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import envcheck

ROOT = Path(__file__).resolve().parents[1]
STUBS = ROOT / "assignments" / "ch03"
BROKEN_CHECK = "simple_attention: context_vector_book_example"


@pytest.fixture(scope="module")
def broken_grader(tmp_path_factory, built_bundle):
    """A copy of the grader (the session's Gradescope bundle, unpacked: what `gradescope --out DIR`
    writes) whose book snapshot says the book's second context vector is 0.1 larger."""
    folder = tmp_path_factory.mktemp("broken") / "grader"
    shutil.copytree(built_bundle[1], folder, symlinks=True)
    snapshot = folder / "autograder" / "suites" / "snapshots" / "book.json"
    values = json.loads(snapshot.read_text())
    values["context_vec_2"] = [v + 0.1 for v in values["context_vec_2"]]
    snapshot.write_text(json.dumps(values))
    return folder


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AUTOGRADER_ROOT", envcheck.CACHE_ENV)}
    env.update(extra)
    return env


def test_a_broken_environment_refuses_and_scores_nobody(broken_grader, tmp_path):
    out = tmp_path / "student.json"
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(STUBS), "--json", str(out)],
                          cwd=broken_grader, env=_env(PYTHONPATH=str(broken_grader)),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 3, done.stderr[-3000:]
    assert "the grader's environment failed its own check" in done.stderr
    assert f"  {BROKEN_CHECK}: " in done.stderr  # the failing check, by name, with its diagnosis
    assert "likely cause:" in done.stderr
    assert not out.exists() and "total" not in done.stdout  # no score written or printed for the student


def test_gradescope_says_not_graded_when_the_environment_fails(broken_grader, tmp_path):
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "results").mkdir()
    for module in STUBS.glob("*.py"):
        (root / "submission" / module.name).write_bytes(module.read_bytes())
    os.symlink(broken_grader, root / "source")
    done = subprocess.run([str(broken_grader / "run_autograder")], cwd=root,
                          env=_env(AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable),
                          capture_output=True, text=True, timeout=600)
    results = json.loads((root / "results" / "results.json").read_text())
    assert "score" not in results and results["tests"] == []  # no score at all, not even 0
    assert results["output"] == envcheck.STUDENT_MESSAGE and BROKEN_CHECK not in results["output"]
    check = results["extra_data"]["environment_check"]
    assert check["passed"] is False and check["reference_score"] < check["max_score"] and check["device"] == "cpu"
    assert BROKEN_CHECK in done.stdout  # the instructor's log (hidden from students) names it


class FakeSandbox:
    device, unsafe = "cpu", False
    plan = {"room": True, "user_namespace": False, "seccomp": "00", "why": ""}


@pytest.mark.quick
def test_the_cache_keeps_a_full_score_and_a_hit_grades_nothing(tmp_path, monkeypatch):
    from autograder import grading

    rubric_path = ROOT / "grading.yml"
    rubric, suites = grading.load_rubric(rubric_path)
    monkeypatch.setenv(envcheck.CACHE_ENV, str(tmp_path / "cache"))
    graded = []

    class Full:  # what grade_submission returns for a reference that got every point
        checks, score, max_score, protections = [], 100.0, 100.0, ["seccomp system-call allow-list"]

    monkeypatch.setattr(grading, "grade_submission", lambda path, *a, **k: graded.append(path) or Full())
    sandbox = FakeSandbox()
    first = envcheck.ensure(sandbox, rubric, suites, rubric_path)
    assert graded == [envcheck.reference_folder()] and first["passed"] and not first["cached"]
    folder = tmp_path / "cache"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert [stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()] == [0o600]

    again = envcheck.ensure(FakeSandbox(), rubric, suites, rubric_path)
    assert graded == [envcheck.reference_folder()]  # a hit: the reference is not graded again
    assert again["cached"] and again["score"] == 100.0 and again["walls"] == Full.protections

    other = FakeSandbox()
    other.device = "cuda-like"  # anything the key covers: another device, walls, rubric, torch
    envcheck.ensure(other, rubric, suites, rubric_path)
    assert len(graded) == 2


def test_the_cache_refuses_a_folder_others_can_write(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    monkeypatch.setenv(envcheck.CACHE_ENV, str(folder))
    key = "k" * 64
    (folder / f"envcheck-{key}.json").write_text(json.dumps({"passed": True, "score": 1}))
    assert envcheck._cached(key) is None  # planted by someone else: not trusted
    folder.chmod(0o700)
    assert envcheck._cached(key)["cached"] is True


def test_a_lost_point_is_never_cached(tmp_path, monkeypatch):
    from autograder import grading

    rubric_path = ROOT / "grading.yml"
    rubric, suites = grading.load_rubric(rubric_path)
    monkeypatch.setenv(envcheck.CACHE_ENV, str(tmp_path / "cache"))

    class Check:
        part, name, passed, message = "causal", "mask_book_example", False, "wrong weights"

    class Lost:
        checks, score, max_score, protections, parts = [Check()], 99.0, 100.0, [], {"causal": grading.PartScore(0.0, 2.0)}
        not_graded: dict = {}  # as grading.Grade: no part the machine kept from running

    monkeypatch.setattr(grading, "grade_submission", lambda *a, **k: Lost())
    with pytest.raises(envcheck.EnvironmentFailed) as failed:
        envcheck.ensure(FakeSandbox(), rubric, suites, rubric_path)
    assert "causal: mask_book_example: wrong weights" in str(failed.value)
    assert failed.value.record["failed"] == ["causal: mask_book_example"]
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").iterdir())


def test_ci_tells_the_student_the_submission_was_not_graded(broken_grader, tmp_path):
    from autograder.deploy import ghactions

    outputs, summary = tmp_path / "outputs", tmp_path / "summary.md"
    results, comment = tmp_path / "results.json", tmp_path / "comment.md"
    done = subprocess.run([sys.executable, "-m", "autograder", "ci", str(STUBS), "--json", str(results),
                           "--comment", str(comment)], cwd=broken_grader,
                          env=_env(PYTHONPATH=str(broken_grader), GITHUB_OUTPUT=str(outputs),
                                   GITHUB_STEP_SUMMARY=str(summary)),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 3, done.stderr[-3000:]
    body = comment.read_text()
    assert body.startswith(ghactions.COMMENT_MARKER) and envcheck.STUDENT_MESSAGE in body and "Not graded" in body
    assert BROKEN_CHECK not in body and "Score" not in body
    assert envcheck.STUDENT_MESSAGE in summary.read_text()
    written = json.loads(results.read_text())
    assert "score" not in written and written["environment_check"]["passed"] is False
    assert outputs.read_text().splitlines() == ["passed=false", "comment=true"]  # no score= line
    assert BROKEN_CHECK in done.stdout + done.stderr  # the job log (the instructor's) names it
