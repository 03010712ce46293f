"""Issue 36 item 2: a rubric change carries through. A copy of the repository's grading.yml with one
check's points raised by one and a Gradescope submission limit added (the edits the docs invite;
grading.yml itself is never changed): `release` ships notebooks that state the new points and limit
(generated from that rubric), refuses notebooks made for another rubric naming each file and what
differs, and `grade` scores with the new points. Every expected number comes from the rubric loader
(tests/rubric_points.py), so these tests hold whatever the repository's points are."""
import json
import subprocess

import pytest
from in_process import run_command, run_plain
from rubric_points import CHECK, PART, RUBRIC_PATH, TOTAL, g

from autograder import PROJECT_ROOT
from autograder.authoring import notebooks
from autograder.commands.release import stale_notebooks
from autograder.course import gradescope_limits
from autograder.rubric import SubmissionLimit

PART_NAME, CHECK_NAME = "simple_attention", "attention_weights_on_unseen_scores"
LIMIT = SubmissionLimit(3, 12)


@pytest.fixture
def changed(tmp_path):
    """grading.yml with CHECK_NAME worth one point more and `submissions: {limit: 3, window_hours: 12}`."""
    text = RUBRIC_PATH.read_text()
    line = f"{CHECK_NAME}: {g(CHECK[PART_NAME, CHECK_NAME])}"
    assert text.count(line) == 1 and "\nsubmissions:" not in text
    text = text.replace(line, f"{CHECK_NAME}: {g(CHECK[PART_NAME, CHECK_NAME] + 1)}")
    text = text.replace("\nparts:\n", f"\nsubmissions: {{limit: {LIMIT.limit}, window_hours: {g(LIMIT.window_hours)}}}"
                                      "\nparts:\n", 1)
    path = tmp_path / "grading.yml"
    path.write_text(text)
    return path


def cli(*args):
    """`python -m autograder release ...` as cli.main here (tests/in_process.py: release grades nothing)."""
    status, stdout, stderr = run_plain(args)
    return subprocess.CompletedProcess(args, status, stdout, stderr)


def graded_cells(folder):
    """{notebook: ({score cell: points}, [submission-limit texts])} of the graded notebooks in folder."""
    found = {}
    for path in sorted(folder.glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        if not any(c["metadata"].get("nbgrader", {}).get("solution") for c in cells):
            continue
        points = {c["metadata"]["nbgrader"]["grade_id"]: c["metadata"]["nbgrader"]["points"] for c in cells
                  if c["metadata"].get("nbgrader", {}).get("grade")}
        limits = ["".join(c["source"]) for c in cells if c["id"] == "submission_limit"]
        found[path.name] = (points, limits)
    return found


def test_release_states_the_changed_points_and_limit(changed, tmp_path):
    out = tmp_path / "release"
    done = cli("release", "--out", str(out), "--rubric", str(changed))
    assert done.returncode == 0, done.stderr
    said = gradescope_limits.student_text(LIMIT)
    assert f"**Submission limit.** {said}" in (out / "README.md").read_text()
    cells = graded_cells(out / "notebooks" / "ch03")
    assert cells, "the release has graded notebooks"
    points = {grade_id: value for scored, _ in cells.values() for grade_id, value in scored.items()}
    assert points[notebooks.SCORE_PREFIX + PART_NAME] == PART[PART_NAME] + 1
    assert all(points[notebooks.SCORE_PREFIX + part] == PART[part] for part in PART if part != PART_NAME)
    assert all(limits == [f"**Submissions.** {said}"] for _, limits in cells.values()), cells
    assert stale_notebooks(out / "notebooks" / "ch03", changed) == []


@pytest.mark.quick
def test_release_refuses_notebooks_made_for_another_rubric(changed, tmp_path):
    old = tmp_path / "old"
    notebooks.release_notebooks(old)  # made with the repository's rubric
    out = tmp_path / "release"
    done = cli("release", "--out", str(out), "--rubric", str(changed), "--notebooks", str(old))
    assert done.returncode == 2 and not out.exists()
    [holder] = [name for name, (scored, _) in graded_cells(old).items()
                if notebooks.SCORE_PREFIX + PART_NAME in scored]
    assert (f"{holder}: {notebooks.SCORE_PREFIX}{PART_NAME} is worth {g(PART[PART_NAME])} point(s); the rubric "
            f"gives {PART_NAME} {g(PART[PART_NAME] + 1)}") in done.stderr
    for name in graded_cells(old):
        assert f"{name}: states no submission limit; the rubric's: {LIMIT.describe()}" in done.stderr
    assert "regenerate them" in done.stderr
    assert stale_notebooks(old, RUBRIC_PATH) == []  # with the rubric they were made for, nothing is stale


def test_grade_scores_with_the_changed_points(engine, changed, tmp_path):
    """`grade --rubric` in this process, in the session's fork server (tests/in_process.py)."""
    out = tmp_path / "results.json"
    status, stdout, stderr = run_command(engine, ["grade", PROJECT_ROOT / "solutions" / "ch03", "--rubric", changed,
                                                  "--json", out])
    assert status == 0, stderr
    results = json.loads(out.read_text())
    assert (results["score"], results["max_score"]) == (TOTAL + 1, TOTAL + 1)
    assert results["parts"][PART_NAME] == {"score": PART[PART_NAME] + 1, "max_score": PART[PART_NAME] + 1}
    [test] = [t for t in results["tests"] if t["name"] == f"{PART_NAME}: {CHECK_NAME}"]
    assert test["max_score"] == CHECK[PART_NAME, CHECK_NAME] + 1
    assert f"{g(TOTAL + 1)} / {g(TOTAL + 1)}" in stdout
