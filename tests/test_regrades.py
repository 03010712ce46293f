"""A course run with `batch`: lateness in grades.csv and the report, regrades when the grader changes,
and the gradebook's history (`history OUT --student NAME`).

One class of five, graded three times into the same folder:
1. without the late options: grades.csv has exactly its old columns, no lateness anywhere;
2. with a due date, TIMES.csv, an extension, nbgrader's timestamp.txt and Canvas's LATE marker:
   nothing is graded again (nothing changed), grades.csv and the report show the lateness;
3. with a rubric that gives one check another point: every student is regraded by the other
   grader, and regrades.csv, the summary, the report and the history say whose score moved.
"""
import csv
import json
import shutil
import sqlite3
import subprocess
import sys
import zipfile

import pytest

from autograder import PROJECT_ROOT

SOLUTIONS = PROJECT_ROOT / "solutions" / "ch03"
OLD_COLUMNS = ["student", "score", "max_score", "simple_attention", "self_attention_v1", "self_attention_v2",
               "weight_transfer", "causal", "mha", "exercises", "numpy_attention", "problem"]
UNSCALED_CAUSAL = '''

def masked_attention_weights(scores, d_k):  # forgets the 1/sqrt(d_k) scaling
    return torch.softmax(scores.masked_fill(causal_mask(scores.shape[-1]), -torch.inf), dim=-1)
'''
CANVAS = "frank_LATE_1234_5678_ch03"  # a zip as Canvas names a late upload


def make_class(folder):
    folder.mkdir(parents=True)
    shutil.copytree(SOLUTIONS, folder / "alice", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(SOLUTIONS, folder / "carol", ignore=shutil.ignore_patterns("__pycache__"))
    with open(folder / "carol" / "causal.py", "a") as f:
        f.write(UNSCALED_CAUSAL)
    (folder / "dave").mkdir()
    shutil.copytree(SOLUTIONS, folder / "erin" / "ch03", ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "erin" / "ch03" / "timestamp.txt").write_text("2026-12-01 23:59:00.000001 UTC\n")  # nbgrader collect
    with zipfile.ZipFile(folder / f"{CANVAS}.zip", "w") as archive:
        for module in sorted(SOLUTIONS.glob("*.py")):
            archive.write(module, f"ch03/{module.name}")
    return folder


def batch(folder, out, *options):
    run = subprocess.run([sys.executable, "-m", "autograder", "batch", str(folder), "--out", str(out), "--jobs", "2",
                          *options], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


def rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The three runs' summaries and the files each left, read as they were after that run."""
    base = tmp_path_factory.mktemp("course")
    folder, out = make_class(base / "class"), base / "graded"
    seen = {}

    def keep(name, summary):
        seen[name] = {"summary": summary, "grades": rows(out / "grades.csv"), "regrades": rows(out / "regrades.csv"),
                      "report": (out / "report.html").read_text(),
                      "grader": json.loads((out / "results" / "alice.json").read_text())["extra_data"]["grader"]}

    keep("plain", batch(folder, out))
    (base / "times.csv").write_text("student,submitted_at\nalice,2026-12-03T00:59:01+01:00\n"
                                    "carol,2026-12-02T12:00:00Z\nnobody,2026-12-01T00:00:00Z\n")
    (base / "ext.csv").write_text("student,due\ncarol,2026-12-02T23:59:00Z\n")
    keep("late", batch(folder, out, "--due", "2026-12-01T23:59:00Z", "--submitted-at", str(base / "times.csv"),
                       "--extensions", str(base / "ext.csv"), "--late-penalty", "10", "--late-days", "1"))
    rubric = (PROJECT_ROOT / "grading.yml").read_text()
    assert rubric.count("attention_weights_on_unseen_scores: 2") == 1
    (base / "rubric.yml").write_text(rubric.replace("attention_weights_on_unseen_scores: 2",
                                                    "attention_weights_on_unseen_scores: 3"))
    keep("regraded", batch(folder, out, "--rubric", str(base / "rubric.yml")))
    seen["out"] = out
    return seen


def test_without_the_late_options_nothing_changes(course):
    plain = course["plain"]
    assert plain["grades"][0] == OLD_COLUMNS
    assert [r[:3] for r in plain["grades"][1:]] == [["alice", "100", "100"], ["carol", "96", "100"],
                                                    ["dave", "0", "100"], ["erin", "100", "100"], [CANVAS, "100", "100"]]
    assert plain["regrades"] == [["student", "before", "after", "parts"]]
    assert "Late work" not in plain["report"] and "Regrades" not in plain["report"]
    assert "late" not in plain["summary"] and "regraded" not in plain["summary"]


def test_lateness_in_grades_csv(course):
    late = course["late"]
    assert "nothing to grade: 5 up to date" in late["summary"]  # the policy needs no regrading
    assert late["grades"][0] == OLD_COLUMNS + ["submitted_at", "due", "late_days", "penalty", "final_score", "late_note"]
    by_student = {r[0]: r[len(OLD_COLUMNS):] for r in late["grades"][1:]}
    assert by_student["alice"] == [  # 1 day and 1 second late: 2 started days, past the 1-day window
        "2026-12-02T23:59:01+00:00", "2026-12-01T23:59:00+00:00", "2", "100", "0",
        "2 days late, more than the 1 day(s) late work is accepted: final score 0"]
    assert by_student["carol"] == ["2026-12-02T12:00:00+00:00", "2026-12-02T23:59:00+00:00", "0", "0", "96", ""]
    assert by_student["erin"] == ["2026-12-01T23:59:00.000001+00:00", "2026-12-01T23:59:00+00:00", "1", "10", "90",
                                  "time from nbgrader's erin/ch03/timestamp.txt"]
    assert by_student[CANVAS][:5] == ["", "2026-12-01T23:59:00+00:00", "1", "10", "90"]
    assert by_student[CANVAS][5].startswith("Canvas marked it LATE")
    assert by_student["dave"][:5] == ["", "2026-12-01T23:59:00+00:00", "", "0", "0"]
    assert [r[1] for r in late["grades"][1:]] == ["100", "96", "0", "100", "100"]  # score: what the code earned
    assert "late (3): alice 2 day(s) -100%, erin 1 day(s) -10%" in late["summary"]
    assert "no submission time known, not charged (1): dave" in late["summary"]
    assert "in --submitted-at/--extensions but not in" in late["summary"] and "nobody" in late["summary"]
    assert "<h2>Late work</h2>" in late["report"] and "final (late policy)" in late["report"]
    assert "time from nbgrader&#x27;s erin/ch03/timestamp.txt" in late["report"]


def test_another_grader_regrades_everyone_and_says_whose_score_moved(course):
    regraded = course["regraded"]
    assert "regraded, graded by another grader (rubric, suites, reference or versions changed) (5): " \
           f"alice, carol, dave, erin, {CANVAS}" in regraded["summary"]
    assert regraded["regrades"] == [["student", "before", "after", "parts"],
                                    ["alice", "100", "101", "simple_attention 10 -> 11"],
                                    ["carol", "96", "97", "simple_attention 10 -> 11"],
                                    ["erin", "100", "101", "simple_attention 10 -> 11"],
                                    [CANVAS, "100", "101", "simple_attention 10 -> 11"]]
    assert "Regrades: scores the latest grading run moved" in regraded["report"]
    assert regraded["grader"] != course["plain"]["grader"] == course["late"]["grader"]
    assert regraded["grades"][0] == OLD_COLUMNS  # this run had no due date


def test_the_gradebook_keeps_every_grade_and_history_says_why(course):
    out = course["out"]
    db = sqlite3.connect(f"file:{out / 'gradebook.db'}?mode=ro", uri=True)
    history = db.execute("SELECT student, reason, score FROM history WHERE student IN ('carol', 'dave') "
                         "ORDER BY run, student").fetchall()
    db.close()
    assert history == [("carol", "first grade", 96.0), ("dave", "first grade", 0.0),
                       ("carol", "graded by another grader (rubric, suites, reference or versions changed)", 97.0),
                       ("dave", "graded by another grader (rubric, suites, reference or versions changed)", 0.0)]
    shown = subprocess.run([sys.executable, "-m", "autograder", "history", str(out), "--student", "carol"],
                           cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert len(lines) == 3 and "carol  96 / 100  first grade" in lines[0]
    assert "carol  97 / 101  graded by another grader" in lines[1]
    assert lines[2] == "    moved: simple_attention 10 -> 11"
    assert lines[0].split("grader ")[1] != lines[1].split("grader ")[1]  # another grader's fingerprint
