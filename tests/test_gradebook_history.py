"""The gradebook's record of every grade (autograder/gradebook.py): history, moves, an old gradebook.

Written here directly, as batch writes it; nothing is graded (test_regrades.py runs real batches)."""
import sqlite3

from autograder import batch
from autograder.gradebook import Gradebook

OLD_SCHEMA = """
CREATE TABLE submissions (student TEXT PRIMARY KEY, digest TEXT NOT NULL, score REAL NOT NULL,
    max_score REAL NOT NULL, problem TEXT NOT NULL DEFAULT '', graded_at TEXT NOT NULL, results TEXT NOT NULL);
INSERT INTO submissions VALUES ('alice', 'abc', 90, 100, '', '2026-11-01T10:00:00+00:00', '{}');
"""


def results(**parts):
    return {"score": float(sum(parts.values())), "max_score": 100.0, "tests": [],
            "parts": {p: {"score": float(s), "max_score": 50.0} for p, s in parts.items()}}


def test_a_gradebook_from_before_the_record_is_regraded_once(tmp_path):
    db = sqlite3.connect(tmp_path / "gradebook.db")
    db.executescript(OLD_SCHEMA)
    db.commit()
    db.close()
    book = Gradebook(tmp_path / "gradebook.db")
    previous = book.graded()["alice"]
    assert previous[:3] == ("abc", "", 90.0)  # no grader fingerprint: it came from "another grader"
    assert batch._why_grade(previous, "abc", "grader-now", False) == batch.OTHER_GRADER
    assert batch._why_grade(previous, "abc", "", False) is None  # same submission, same grader: up to date
    assert batch._why_grade(previous, "other", "", False) == "the submission changed"
    assert batch._why_grade(None, "abc", "", False) == "first grade"
    assert batch._why_grade(("retry:abc", ""), "abc", "", False) == "graded again: its last grading did not finish"
    assert batch._why_grade(previous, "abc", "", True) == "regraded with --force"
    book.close()


def test_moves_are_the_latest_grading_runs_and_name_the_parts_that_moved(tmp_path):
    book = Gradebook(tmp_path / "gradebook.db")
    one = book.start_run("g1")
    book.record("alice", "a1", results(causal=40, mha=50), "", "g1", "first grade", one)
    book.record("bob", "b1", results(causal=20, mha=20), "", "g1", "first grade", one)
    assert book.moves() == []  # first grades move nothing
    two = book.start_run("g2")
    book.record("alice", "a1", results(causal=45, mha=50), "", "g2", batch.OTHER_GRADER, two)
    book.record("bob", "b1", results(causal=20, mha=20), "", "g2", batch.OTHER_GRADER, two)
    assert book.moves() == [("alice", 90.0, 95.0, {"causal": (40.0, 45.0)})]  # bob's score did not move
    book.start_run("g2")  # a run that graded nobody: the moves stay those of the last grading run
    assert book.moves() == [("alice", 90.0, 95.0, {"causal": (40.0, 45.0)})]
    three = book.start_run("g2")  # the machine kept bob's mha from running: no grade, so no move
    book.record("bob", "retry:b1", results(causal=20, mha=0), "not graded (parts: mha)", "g2", "the submission changed",
                three)
    assert book.moves() == [("alice", 90.0, 95.0, {"causal": (40.0, 45.0)})]
    batch.write_regrades(tmp_path / "regrades.csv", book.moves())
    assert (tmp_path / "regrades.csv").read_text().splitlines() == [
        "student,before,after,parts", "alice,90,95,causal 40 -> 45"]
    history = book.history("alice")
    assert [(h["run"], h["reason"], h["score"], h["grader"]) for h in history] == [
        (one, "first grade", 90.0, "g1"), (two, batch.OTHER_GRADER, 95.0, "g2")]
    assert len(book.history()) == 5 and book.count() == 2  # every grade kept; one current grade each
    book.close()


def test_the_history_command_on_a_gradebook_without_one(tmp_path, capsys):
    from autograder import cli

    assert cli.main(["history", str(tmp_path)]) == 2
    assert "no gradebook" in capsys.readouterr().err
    Gradebook(tmp_path / "gradebook.db").close()
    assert cli.main(["history", str(tmp_path), "--student", "nobody"]) == 2
    assert "no grade recorded for 'nobody'" in capsys.readouterr().err


def test_a_grade_that_did_not_finish_is_late_all_the_same(tmp_path):
    """Issue 37: lateness applies whether or not a grade finished (it used to wait, so a submission
    the machine kept from running was never late); grades.csv leaves its final score empty."""
    from datetime import timedelta

    from autograder import lateness

    book = Gradebook(tmp_path / "gradebook.db")
    book.record("alice", "a1", results(causal=40, mha=50), "", "g", "first grade", 1)
    book.record("ivan", "retry:i1", results(causal=0, mha=0), "the machine kept it from running", "g", "first grade", 1)
    due = lateness.parse_time("2026-12-01T23:59:00Z", "due")
    policy = lateness.LatePolicy(due, 10, None, {"alice": due + timedelta(hours=1), "ivan": due + timedelta(hours=1)})
    for name in ("alice", "ivan"):
        (tmp_path / name).mkdir()
    rows = batch._lateness(book, policy, [(s, tmp_path / s, "") for s in ("alice", "ivan")])
    assert list(rows) == ["alice", "ivan"] and (rows["alice"].late_days, rows["alice"].final_score) == (1, 81.0)
    assert rows["ivan"].late_days == 1 and rows["ivan"].penalty == 10
    assert list(book.lateness()) == ["alice", "ivan"]  # stored; ivan's final score waits for his grade
    assert batch._lateness(book, None, []) == {} and book.lateness() == {}  # a run without --due clears them
    book.close()
