"""The gradebook's record of every grade (autograder/course/gradebook.py): history, moves, an old gradebook.

Written here directly, as batch writes it; nothing is graded (test_regrades.py runs real batches)."""
import sqlite3

import pytest

from autograder import batch
from autograder.course.gradebook import Gradebook

pytestmark = pytest.mark.quick  # the whole file is in the quick subset

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
    assert batch.why_grade(previous, "abc", "grader-now", False) == batch.OTHER_GRADER
    assert batch.why_grade(previous, "abc", "", False) is None  # same submission, same grader: up to date
    assert batch.why_grade(previous, "other", "", False) == "the submission changed"
    assert batch.why_grade(None, "abc", "", False) == "first grade"
    assert batch.why_grade(("retry:abc", ""), "abc", "", False) == "graded again: its last grading did not finish"
    assert batch.why_grade(previous, "abc", "", True) == "regraded with --force"
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
    book.add_regrades(two, book.moves(two), {"alice": "graded by another grader: points of causal.x 4 -> 5"})
    book.add_regrades(three, book.moves(three))  # a run that moved nobody adds nothing and removes nothing
    batch.write_regrades(tmp_path / "regrades.csv", book.regrades())
    [header, row] = (tmp_path / "regrades.csv").read_text().splitlines()
    assert header == "run,at,student,before,after,parts,why"
    assert row.startswith(f"{two},") and row.endswith(",alice,90,95,causal 40 -> 45,graded by another grader: points "
                                                      "of causal.x 4 -> 5")
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

    from autograder.course import lateness

    book = Gradebook(tmp_path / "gradebook.db")
    book.record("alice", "a1", results(causal=40, mha=50), "", "g", "first grade", 1)
    book.record("ivan", "retry:i1", results(causal=0, mha=0), "the machine kept it from running", "g", "first grade", 1)
    due = lateness.parse_time("2026-12-01T23:59:00Z", "due")
    policy = lateness.LatePolicy(due, 10, None, {"alice": due + timedelta(hours=1), "ivan": due + timedelta(hours=1)})
    for name in ("alice", "ivan"):
        (tmp_path / name).mkdir()
    rows = batch.judge_lateness(book, policy, [(s, tmp_path / s, "") for s in ("alice", "ivan")])
    assert list(rows) == ["alice", "ivan"] and (rows["alice"].late_days, rows["alice"].final_score) == (1, 81.0)
    assert rows["ivan"].late_days == 1 and rows["ivan"].penalty == 10
    assert list(book.lateness()) == ["alice", "ivan"]  # stored; ivan's final score waits for his grade
    assert batch.judge_lateness(book, None, []) == {} and book.lateness() == {}  # a run without --due clears them
    book.close()


def test_every_runs_moves_are_kept(tmp_path):
    """Issue 36 item 3: a later run that moves somebody else, or nobody, keeps the earlier runs' moves."""
    book = Gradebook(tmp_path / "gradebook.db")
    runs = [book.start_run("g") for _ in range(4)]
    book.record("alice", "a1", results(causal=40), "", "g", "first grade", runs[0])
    book.record("bob", "b1", results(causal=20), "", "g", "first grade", runs[0])
    book.record("alice", "a2", results(causal=45), "", "g", "the submission changed", runs[1])
    book.add_regrades(runs[1], book.moves(runs[1]))
    book.record("bob", "b2", results(causal=10), "", "g", "the submission changed", runs[2])
    book.add_regrades(runs[2], book.moves(runs[2]))
    book.add_regrades(runs[3], book.moves(runs[3]))  # graded nobody
    assert [(r["run"], r["student"], r["before"], r["after"], r["parts"]) for r in book.regrades()] == [
        (runs[1], "alice", 40.0, 45.0, {"causal": (40.0, 45.0)}), (runs[2], "bob", 20.0, 10.0, {"causal": (20.0, 10.0)})]
    book.close()


def test_an_override_stands_over_a_regrade_and_the_history_records_both(tmp_path):
    """Issue 36 item 5: a person's score for one part, with who and why; a regrade keeps it and says
    the grader's score; removing it brings the grader's score back; every step is in the history."""
    import pytest

    book = Gradebook(tmp_path / "gradebook.db")
    one = book.start_run("g1")
    book.record("alice", "a1", results(causal=40, mha=30), "", "g1", "first grade", one)
    with pytest.raises(ValueError, match="outside 0..50"):
        book.set_override("alice", "mha", 51, "why", "ta")
    with pytest.raises(ValueError, match="no part 'nope'"):
        book.set_override("alice", "nope", 1, "why", "ta")
    with pytest.raises(ValueError, match="no grade recorded for 'zed'"):
        book.set_override("zed", "mha", 1, "why", "ta")
    assert book.set_override("alice", "mha", 45, "the grader missed a correct variant", "ta_bob") == 30.0
    [(student, record, _)] = book.effective_records()
    assert (record["score"], record["parts"]["mha"]["score"]) == (85.0, 45)
    said = record["extra_data"]["overrides"]["mha"]
    assert (said["automatic"], said["automatic_then"], said["by"], said["reason"]) == (
        30.0, 30.0, "ta_bob", "the grader missed a correct variant")
    two = book.start_run("g2")  # a regrade that moves the grader's mha score
    book.record("alice", "a1", results(causal=40, mha=20), "", "g2", "graded by another grader", two)
    [(_, record, _)] = book.effective_records()
    assert record["score"] == 85.0 and record["extra_data"]["overrides"]["mha"]["automatic"] == 20.0
    history = book.history("alice")
    assert [(h["run"], h["score"]) for h in history] == [(one, 70.0), (None, 85.0), (two, 60.0)]
    assert history[1]["reason"] == "override by ta_bob: mha 30 -> 45 (the grader missed a correct variant)"
    assert history[2]["reason"] == ("graded by another grader; scores by hand stand: mha 45 (the grader's: 20); "
                                    "grade of record 85 / 100")
    assert book.moves(two) == [("alice", 70.0, 60.0, {"mha": (30.0, 20.0)})]  # the grader's scores: an override is none
    book.remove_override("alice", "mha", "ta_bob", "checked again")
    assert book.effective_records()[0][1]["score"] == 60.0 and book.overrides() == {}
    assert book.history("alice")[-1]["reason"] == "override of mha removed by ta_bob (checked again)"
    with pytest.raises(ValueError, match="no override"):
        book.remove_override("alice", "mha", "ta_bob")
    book.close()


def test_what_changed_between_two_graders_is_named():
    """Issue 36 item 3: the reason names the checks whose points changed, the suites' files, the versions."""
    from autograder.course import regrades

    old = {"rubric": {"points": {"mha.book_example": 4, "causal.x": 1}, "limits": {"mha": "timeout 20 s"},
                      "submissions": "none", "other": "r1"},
           "suites": {"test_causal.py": "s1", "book.py": "b1"}, "reference": {"mha.py": "m1"},
           "versions": {"torch": "2.12.0", "numpy": "2.1.0", "python": "3.11.2", "autograder": "1"}}
    new = {**old, "rubric": {**old["rubric"], "points": {"mha.book_example": 5, "causal.x": 1}},
           "suites": {"test_causal.py": "s2", "book.py": "b1"}, "versions": {**old["versions"], "torch": "2.13.0"}}
    assert regrades.changes(old, new) == ["points of mha.book_example 4 -> 5", "suites changed: test_causal.py",
                                          "torch 2.12.0 -> 2.13.0"]
    assert regrades.changes(old, old) == [] and regrades.changes(None, new) == []
    assert batch.other_grader_reason(old, new) == ("graded by another grader: points of mha.book_example 4 -> 5; "
                                                  "suites changed: test_causal.py; torch 2.12.0 -> 2.13.0")


def test_the_override_command_sets_lists_and_removes_and_rewrites_the_outputs(tmp_path, capsys):
    """Issue 36 item 5, from the command line: set (with --reason, --by), list, remove; each rewrites
    grades.csv (the overrides column) and the student's feedback; bad input is a usage error naming it."""
    import csv

    from autograder import cli

    (tmp_path / "feedback").mkdir()
    book = Gradebook(tmp_path / "gradebook.db")
    book.record("alice", "a1", results(causal=40, mha=30), "", "g1", "first grade", book.start_run("g1"))
    batch.write_csv(book, tmp_path / "grades.csv")
    book.close()

    def grades():
        with open(tmp_path / "grades.csv", newline="") as f:
            return list(csv.DictReader(f))

    base = ["override", str(tmp_path), "--student", "alice", "--part", "mha"]
    assert cli.main(base + ["--score", "45"]) == 2 and "--reason" in capsys.readouterr().err
    assert cli.main(base + ["--score", "60", "--reason", "r"]) == 2 and "outside 0..50" in capsys.readouterr().err
    assert cli.main(base + ["--score", "45", "--reason", "a correct variant", "--by", "ta_bob"]) == 0
    assert "alice mha: 30 -> 45 by ta_bob" in capsys.readouterr().out
    [row] = grades()
    assert (row["score"], row["mha"]) == ("85", "45") and row["overrides"].startswith("mha 30 -> 45 by ta_bob at ")
    assert row["overrides"].endswith(": a correct variant")
    md = (tmp_path / "feedback" / "alice.md").read_text()
    assert "changed by a person (ta\\_bob" in md or "changed by a person (ta_bob" in md
    assert "a correct variant" in md and "<h2>Scores changed by hand</h2>" in (tmp_path / "report.html").read_text()
    assert cli.main(["override", str(tmp_path)]) == 0 and "alice  mha  30 -> 45  by ta_bob" in capsys.readouterr().out
    assert cli.main(base + ["--remove", "--by", "ta_bob"]) == 0
    [row] = grades()
    assert (row["score"], row["mha"]) == ("70", "30") and "overrides" not in row
    assert "changed by a person" not in (tmp_path / "feedback" / "alice.md").read_text()
    assert cli.main(base + ["--remove"]) == 2 and "no override" in capsys.readouterr().err
