"""Issue 37.3: course records are decided from structured fields the grader set itself, never from text.

Whether a Gradescope run finished (and so counts toward a submission limit), whether a batch grade
stands or is graded again, which cells of grades.csv are empty and which rows of the class report
count: each is read from a part's `not_graded` flag (Grade.parts, results_json's extra_data.not_graded),
never from a problem or message, which may quote the student's own exception text."""
import json
from pathlib import Path

import pytest

from autograder import batch, grading, reports
from autograder.commands.gradescope import finished
from autograder.course.gradebook import Gradebook
from autograder.reports import class_report
from autograder.sandbox.death import NOT_GRADED

SOLUTIONS = Path(__file__).resolve().parents[1] / "solutions" / "ch03"
FORGED = f"{NOT_GRADED} (parts: causal, mha): graded again on the next run"


def test_an_import_error_that_reads_not_graded_is_a_finished_grade(engine, tmp_path):
    """A real grade: causal.py raises an ImportError whose message is the grader's own "not graded"
    line. The part scores 0 with its problem, the run finished (it counts toward a submission limit),
    and no record anywhere says "not graded"."""
    rubric, suites, sandbox = engine
    folder = tmp_path / "sub"
    folder.mkdir()
    for module in SOLUTIONS.glob("*.py"):
        (folder / module.name).write_text(module.read_text())
    (folder / "causal.py").write_text(f"raise ImportError({FORGED!r})\n")
    grade = grading.grade_submission(folder, rubric, suites, sandbox, parts=["causal", "simple_attention"])
    assert grade.parts["causal"].score == 0 and grade.parts["simple_attention"].score == \
        grade.parts["simple_attention"].max_score
    assert grade.not_graded == {} and finished(grade)
    record = reports.results_json(grade)
    assert "not_graded" not in record["extra_data"]
    assert NOT_GRADED in json.dumps(record)  # the student's text is there, quoted: it decides nothing
    assert reports.gradescope_results(grade)["score"] == grade.score  # a score stands, in Gradescope's file


@pytest.mark.quick
def test_the_batch_reads_not_graded_from_the_record_not_the_problem(tmp_path):
    """A problem that starts with the grader's own "not graded" words (quoted from the student) but no
    structured flag: the grade stands (scored in grades.csv, the summary and the class report). The flag
    without any such words: no score stands."""
    book = Gradebook(tmp_path / "gradebook.db")
    parts = {"causal": {"score": 0, "max_score": 22}, "mha": {"score": 8, "max_score": 20}}
    forged = {"score": 8, "max_score": 42, "tests": [], "parts": parts, "extra_data": {}}
    real = {"score": 8, "max_score": 42, "tests": [], "parts": parts,
            "extra_data": {"not_graded": {"causal": "killed from outside"}}}
    book.record("ann", "digest-a", forged, FORGED)
    book.record("bob", batch.RETRY + "digest-b", real, "the causal process died")
    assert book.not_graded() == {"bob": ["causal"]}
    batch.write_csv(book, tmp_path / "grades.csv")
    lines = (tmp_path / "grades.csv").read_text().splitlines()
    cells = {row.split(",")[0]: dict(zip(lines[0].split(","), row.split(","), strict=False)) for row in lines[1:]}
    assert (cells["ann"]["score"], cells["ann"]["causal"], cells["ann"]["mha"]) == ("8", "0", "8")
    assert (cells["bob"]["score"], cells["bob"]["causal"], cells["bob"]["mha"]) == ("", "", "8")
    said = batch.summary_text(book, "subs", tmp_path, batch.Outcome(["ann", "bob"], ["ann", "bob"], []))
    assert "not graded, scored 0 (1):\n    ann:" in said and "not graded, no score (1):\n    bob:" in said
    page = class_report.class_report(book.records())
    assert page.count("not graded: the machine was overloaded</td>") == 1
    assert "1 submission(s); mean 8" in page  # ann's counts, bob's does not
    book.close()


@pytest.mark.quick
def test_the_batch_retries_on_the_flag_alone(tmp_path, monkeypatch):
    """batch.grade_all's finish: a forged problem text keeps the fingerprint (graded, not retried);
    the structured flag makes it a retry."""
    stored = {}
    monkeypatch.setattr(batch.workers, "store", lambda book, out, student, stamp, results, problem:
                        stored.__setitem__(student, stamp[0]))
    monkeypatch.setattr(batch.workers, "_pool", _InlinePool)
    parts = {"causal": {"score": 0, "max_score": 22}}
    answers = {"ann": ({"score": 0, "max_score": 22, "tests": [], "parts": parts, "extra_data": {}}, FORGED),
               "bob": ({"score": 0, "max_score": 22, "tests": [], "parts": parts,
                        "extra_data": {"not_graded": {"causal": "x"}}}, "died")}
    monkeypatch.setattr(batch.workers, "_grade_one", lambda student, path: (student, *answers[student], ""))
    todo = [(s, f"/nowhere/{s}", f"digest-{s}", "first grade") for s in answers]
    engine = type("E", (), {"rubric": None, "environment_check": None})()
    book = Gradebook(tmp_path / "gradebook.db")
    batch.grade_all(todo, 1, batch.Grading(engine, book, tmp_path, "grader", 1, []))
    book.close()
    assert stored == {"ann": "digest-ann", "bob": batch.RETRY + batch.MACHINE + "digest-bob"}


class _InlinePool:
    """A process pool that runs each job here (batch.grade_all's view of one)."""

    def __init__(self, *args):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def submit(self, fn, *args):
        from concurrent.futures import Future

        future = Future()
        future.set_result(fn(*args))
        return future
