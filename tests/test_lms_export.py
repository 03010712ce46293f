"""`export OUT --format canvas|moodle`: the LMS gradebook import files (autograder/course/lms_export.py).

The gradebook is written here directly (as batch records results), so nothing is graded."""
import csv
from datetime import timedelta

import pytest

from autograder import cli
from autograder.course import lateness
from autograder.course.gradebook import Gradebook

pytestmark = pytest.mark.quick  # the whole file is in the quick subset

ROSTER = ("student,name,id,sis_user_id,sis_login_id,section,email\n"
          "carol,\"Carol, C.\",11,s11,carol1,A,carol@example.org\n"
          "=cmd|' /C calc'!A0,=HYPERLINK(\"http://x\"),12,s12,@mallory,B,mallory@example.org\n"
          "alice,Alice A,10,s10,alice1,A,alice@example.org\n"
          "zoe,Zoe Z,13,s13,zoe1,B,zoe@example.org\n"
          "ivan,Ivan I,14,s14,ivan1,B,ivan@example.org\n")


def results(score, max_score=100):
    return {"score": score, "max_score": max_score, "parts": {"causal": {"score": score, "max_score": max_score}},
            "tests": []}


@pytest.fixture
def out(tmp_path):
    """alice 100 (3 days late: 70 after the policy), carol 47.5 (on time), ivan (grading did not finish),
    dave (graded, not on the roster)."""
    folder = tmp_path / "graded"
    folder.mkdir()
    book = Gradebook(folder / "gradebook.db")
    for student, score in (("alice", 100.0), ("carol", 47.5), ("dave", 12.0)):
        book.record(student, f"digest-{student}", results(score), "", "grader-1", "first grade", 1)
    book.record("ivan", "retry:digest-ivan", results(0.0), "internal error", "grader-1", "first grade", 1)
    due = lateness.parse_time("2026-12-01T23:59:00Z", "due")
    policy = lateness.LatePolicy(due, 10, 5, {"alice": due + timedelta(days=3), "carol": due})
    book.set_lateness({s: policy.judge(s, score) for s, score in (("alice", 100.0), ("carol", 47.5))})
    book.close()
    (tmp_path / "roster.csv").write_text(ROSTER)
    return folder


def export(out, fmt, *extra, roster=None):
    target = out.parent / f"{fmt}.csv"
    status = cli.main(["export", str(out), "--format", fmt, "--roster", str(roster or out.parent / "roster.csv"),
                       "--assignment", "Chapter 3 (4521)", "--out", str(target), *extra])
    return status, target


def test_canvas_rows_follow_the_roster_with_final_scores_and_empty_cells(out, capsys):
    status, target = export(out, "canvas")
    assert status == 0
    rows = list(csv.reader(target.open(newline="")))
    assert rows == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Chapter 3 (4521)"],
        ["Carol, C.", "11", "s11", "carol1", "A", "47.5"],
        ["'=HYPERLINK(\"http://x\")", "12", "s12", "'@mallory", "B", ""],  # not in the class: empty, never 0
        ["Alice A", "10", "s10", "alice1", "A", "70"],  # 3 days late at 10 % a day
        ["Zoe Z", "13", "s13", "zoe1", "B", ""],
        ["Ivan I", "14", "s14", "ivan1", "B", ""],  # grading did not finish: no grade, not 0
    ]
    said = capsys.readouterr()
    assert "5 roster student(s), 2 with a grade (canvas)" in said.out
    assert "in the gradebook but not in" in said.err and "dave" in said.err


def test_the_export_and_the_gradebook_are_readable_by_their_owner_only(out):
    """Issue 36 item 4: every output file is mode 0600 (the README says why: grades and feedback)."""
    status, target = export(out, "canvas")
    assert status == 0
    assert {path.name: oct(path.stat().st_mode & 0o777) for path in (target, out / "gradebook.db")} == {
        "canvas.csv": "0o600", "gradebook.db": "0o600"}


def test_moodle_rows_are_email_and_grade(out):
    status, target = export(out, "moodle")
    assert status == 0
    assert list(csv.reader(target.open(newline=""))) == [
        ["Email address", "Chapter 3 (4521)"], ["carol@example.org", "47.5"], ["mallory@example.org", ""],
        ["alice@example.org", "70"], ["zoe@example.org", ""], ["ivan@example.org", ""]]


def test_without_a_late_policy_the_score_is_exported(out):
    book = Gradebook(out / "gradebook.db")
    book.set_lateness({})  # a later batch run without --due
    book.close()
    status, target = export(out, "canvas")
    assert status == 0 and list(csv.reader(target.open(newline="")))[3][-1] == "100"


@pytest.mark.parametrize("roster, fmt, message", [
    ("student,name,id\nalice,A,1\n", "canvas", "line 1: no column sis_user_id, sis_login_id, section in the header"),
    ("student,email\nalice,a@x\nalice,b@x\n", "moodle", "line 3: 'alice' is also on line 2"),
    ("student,email\nalice,\n", "moodle", "line 2: 'alice' has no email"),
    ("student,email\nalice,a@x,extra\n", "moodle", "line 2: 3 cells for 2 columns"),
    ("student,name,id,sis_user_id,sis_login_id,section\nalice,A,1,,,A\nbob,B,,,,A\n", "canvas",
     "line 3: 'bob' has no id, sis_user_id or sis_login_id (Canvas finds its students by one of them"),
    ("student,email\nalice,a@x\nbob,Bob B\n", "moodle", "line 3: 'bob' has 'Bob B' as email, which is not an email"),
])
def test_a_bad_roster_names_the_file_and_line_and_writes_nothing(out, capsys, roster, fmt, message):
    path = out.parent / "bad.csv"
    path.write_text(roster)
    status, target = export(out, fmt, roster=path)
    assert status == 2 and f"{path}, {message}" in capsys.readouterr().err
    assert not target.exists()


def test_no_gradebook_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "roster.csv").write_text(ROSTER)
    status, _ = export(tmp_path / "nothing", "canvas", roster=tmp_path / "roster.csv")
    assert status == 2 and "no gradebook" in capsys.readouterr().err
