"""A course run with `batch`: lateness in grades.csv, the report and every student's feedback, regrades
when the grader changes (saying what changed, every run's moves kept), a TA's override, and the
gradebook's history (`history OUT --student NAME`). Every number of points is read from the rubric
(grading.yml through the rubric loader), never written here.

One class of five, graded into the same folder:
1. without the late options: grades.csv has exactly its old columns, no lateness anywhere;
2. with a due date, TIMES.csv, an extension, nbgrader's timestamp.txt and Canvas's LATE marker:
   nothing is graded again (nothing changed), grades.csv, the report, the summary and each student's
   feedback show the lateness and the grade of record ("past the cutoff", never "-100%");
3. with a rubric that gives one check another point: every student is regraded by the other
   grader, and regrades.csv, the summary, the report and the history say whose score moved and why
   (which check's points);
4. a TA overrides carol's causal part (`override`): grades.csv, the report, her feedback, the history
   and the Canvas export show it at once;
5. the same again (nothing to grade): the override and run 3's moves stay;
6. with the repo's own rubric again: everyone is regraded back; carol's override stands and the
   history records the grader's score beside it.
"""
import csv
import json
import shutil
import sqlite3
import subprocess
import zipfile

import pytest
from in_process import run_plain

from autograder import PROJECT_ROOT, rubric

SOLUTIONS = PROJECT_ROOT / "solutions" / "ch03"
RUBRIC = rubric.load(PROJECT_ROOT / "grading.yml")
TOTAL = RUBRIC.max_score  # the rubric's points, as the rubric loader reads them
SIMPLE = RUBRIC.parts["simple_attention"].max_score
CAUSAL = RUBRIC.parts["causal"].max_score
BUMPED = "simple_attention.attention_weights_on_unseen_scores"
BUMPED_POINTS = RUBRIC.parts["simple_attention"].checks["attention_weights_on_unseen_scores"].points
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


def command(*args):
    """`python -m autograder ARGS` as cli.main in this process (tests/in_process.py, issue 38 item 6: each
    of the module's eight commands started an interpreter that imports torch, which nothing here reads;
    the batch starts its fork server and workers as on the command line) -> a CompletedProcess."""
    status, stdout, stderr = run_plain(args)
    return subprocess.CompletedProcess(args, status, stdout, stderr)


def batch(folder, out, *options):
    run = command("batch", folder, "--out", out, "--jobs", "2", *options)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


def rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def g(x):
    return f"{x:g}"



@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The three runs' summaries and the files each left, read as they were after that run."""
    base = tmp_path_factory.mktemp("course")
    folder, out = make_class(base / "class"), base / "graded"
    seen = {}

    def keep(name, summary):
        seen[name] = {"summary": summary, "grades": rows(out / "grades.csv"), "regrades": rows(out / "regrades.csv"),
                      "report": (out / "report.html").read_text(),
                      "feedback": {s: ((out / "feedback" / f"{s}.md").read_text(),
                                       (out / "feedback" / f"{s}.html").read_text()) for s in ("alice", "carol", "erin")},
                      "grader": json.loads((out / "results" / "alice.json").read_text())["extra_data"]["grader"]}

    keep("plain", batch(folder, out))
    carol = json.loads((out / "results" / "carol.json").read_text())
    seen["carol_lost"] = sum(t["max_score"] - t["score"] for t in carol["tests"])
    (base / "times.csv").write_text("student,submitted_at\nalice,2026-12-03T00:59:01+01:00\n"
                                    "carol,2026-12-02T12:00:00Z\nnobody,2026-12-01T00:00:00Z\n")
    (base / "ext.csv").write_text("student,due\ncarol,2026-12-02T23:59:00Z\n")
    keep("late", batch(folder, out, "--due", "2026-12-01T23:59:00Z", "--submitted-at", str(base / "times.csv"),
                       "--extensions", str(base / "ext.csv"), "--late-penalty", "10", "--late-days", "1"))
    text = (PROJECT_ROOT / "grading.yml").read_text()
    line = f"attention_weights_on_unseen_scores: {g(BUMPED_POINTS)}"
    assert text.count(line) == 1
    (base / "rubric.yml").write_text(text.replace(line, f"attention_weights_on_unseen_scores: {g(BUMPED_POINTS + 1)}"))
    keep("regraded", batch(folder, out, "--rubric", str(base / "rubric.yml")))
    done = command("override", out, "--student", "carol", "--part", "causal", "--score", g(CAUSAL),
                   "--reason", "the scaling is applied in forward, by hand", "--by", "ta_bob")
    assert done.returncode == 0, done.stderr
    seen["override_said"] = done.stdout
    keep("overridden", "")
    keep("again", batch(folder, out, "--rubric", str(base / "rubric.yml")))
    keep("back", batch(folder, out))
    seen["out"] = out
    # `history OUT --student carol` after the last run, read by the tests of the override and of the history
    seen["history"] = command("history", out, "--student", "carol")
    return seen


def test_without_the_late_options_nothing_changes(course):
    plain = course["plain"]
    assert plain["grades"][0] == OLD_COLUMNS
    full, carol = [g(TOTAL), g(TOTAL)], g(TOTAL - course["carol_lost"])
    assert 0 < course["carol_lost"] < CAUSAL  # her mistake costs causal points, not all of them
    assert [r[:3] for r in plain["grades"][1:]] == [["alice", *full], ["carol", carol, g(TOTAL)],
                                                    ["dave", "0", g(TOTAL)], ["erin", *full], [CANVAS, *full]]
    assert plain["regrades"] == [["run", "at", "student", "before", "after", "parts", "why"]]
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
    carol, ninety = g(TOTAL - course["carol_lost"]), g(round(TOTAL * 0.9, 2))
    assert by_student["carol"] == ["2026-12-02T12:00:00+00:00", "2026-12-02T23:59:00+00:00", "0", "0", carol, ""]
    assert by_student["erin"] == ["2026-12-01T23:59:00.000001+00:00", "2026-12-01T23:59:00+00:00", "1", "10", ninety,
                                  "time from nbgrader's erin/ch03/timestamp.txt"]
    assert by_student[CANVAS][:5] == ["", "2026-12-01T23:59:00+00:00", "1", "10", ninety]
    assert by_student[CANVAS][5].startswith("Canvas marked it LATE")
    assert by_student["dave"][:5] == ["", "2026-12-01T23:59:00+00:00", "", "0", "0"]
    assert [r[1] for r in late["grades"][1:]] == [g(TOTAL), carol, "0", g(TOTAL), g(TOTAL)]  # what the code earned
    assert (f"late (3): alice 2 day(s) past the cutoff: final 0, erin 1 day(s) -10%: final {ninety}, "
            f"{CANVAS} 1 day(s) -10%: final {ninety}") in late["summary"]
    assert "-100%" not in late["summary"] and "-100%" not in late["report"]
    finals = sorted([0.0, TOTAL - course["carol_lost"], 0.0, round(TOTAL * 0.9, 2), round(TOTAL * 0.9, 2)])
    assert f"final scores, after the late policy (of {g(TOTAL)}): min 0, median {g(finals[2])}, max {g(finals[-1])}" \
        in late["summary"]
    assert "no submission time known, not charged (1): dave" in late["summary"]
    assert "in --submitted-at/--extensions but not in" in late["summary"] and "nobody" in late["summary"]
    assert "<h2>Late work</h2>" in late["report"] and "final (late policy)" in late["report"]
    assert "time from nbgrader&#x27;s erin/ch03/timestamp.txt" in late["report"]
    assert (f"5 submission(s) (final scores, after the late policy; the scores the code earned are in the table of "
            f"every student); mean {sum(finals) / 5:.1f}, median {g(finals[2])}, lowest 0, highest {g(finals[-1])}") \
        in late["report"]
    assert "(2 d late: past the cutoff)" in late["report"]


def test_every_students_feedback_shows_the_grade_of_record(course):
    """Issue 36 item 1: with --due, the feedback (Markdown and page) says what the code earned, what the
    late policy did and why, and the final score; alice's page never says only her raw score."""
    late, plain = course["late"]["feedback"], course["plain"]["feedback"]
    alice_md, alice_html = late["alice"]
    assert f"- Score your code earned: {g(TOTAL)} / {g(TOTAL)}" in alice_md
    assert ("- Late policy: past the cutoff: 2 days late, more than the 1 day(s) late work is accepted: final "
            "score 0") in alice_md
    assert f"- Final score (the grade of record): 0 / {g(TOTAL)}" in alice_md
    assert f"Grade of record: <strong>0 / {g(TOTAL)}</strong>" in alice_html and "past the cutoff" in alice_html
    erin_md, erin_html = late["erin"]
    assert "Late policy: 1 day(s) late: a penalty of 10% of the score" in erin_md
    assert f"Final score (the grade of record): {g(round(TOTAL * 0.9, 2))} / {g(TOTAL)}" in erin_md
    assert f"Grade of record: <strong>{g(round(TOTAL * 0.9, 2))} / {g(TOTAL)}</strong>" in erin_html
    carol_md, _ = late["carol"]
    assert "Late policy: on time: no late penalty" in carol_md
    assert "Grade of record" not in plain["alice"][1] and f"Score: {g(TOTAL)} / {g(TOTAL)}" in plain["alice"][0]
    assert "Late policy" not in course["regraded"]["feedback"]["alice"][0]  # a run without --due: the score again


WHY = f"graded by another grader: points of {BUMPED} {g(BUMPED_POINTS)} -> {g(BUMPED_POINTS + 1)}"


def test_another_grader_regrades_everyone_and_says_what_changed_and_whose_score_moved(course):
    """Issue 36 item 3: the reason names the check whose points changed; regrades.csv has the run."""
    regraded = course["regraded"]
    assert f"regraded, graded by another grader (5): alice, carol, dave, erin, {CANVAS}" in regraded["summary"]
    assert f"    what changed: points of {BUMPED} {g(BUMPED_POINTS)} -> {g(BUMPED_POINTS + 1)}" in regraded["summary"]
    carol = TOTAL - course["carol_lost"]
    moved = f"simple_attention {g(SIMPLE)} -> {g(SIMPLE + 1)}"
    assert [r[2:] for r in regraded["regrades"][1:]] == [["alice", g(TOTAL), g(TOTAL + 1), moved, WHY],
                                                         ["carol", g(carol), g(carol + 1), moved, WHY],
                                                         ["erin", g(TOTAL), g(TOTAL + 1), moved, WHY],
                                                         [CANVAS, g(TOTAL), g(TOTAL + 1), moved, WHY]]
    assert len({r[0] for r in regraded["regrades"][1:]}) == 1  # one run
    assert "Regrades: scores grading runs moved" in regraded["report"]
    assert regraded["grader"] != course["plain"]["grader"] == course["late"]["grader"]
    assert regraded["grades"][0] == OLD_COLUMNS  # this run had no due date


def test_a_later_run_keeps_every_runs_moves(course):
    """Issue 36 item 3: a run that moves nobody keeps the earlier moves; the regrade back adds its own."""
    kept = course["regraded"]["regrades"]
    assert course["again"]["regrades"] == kept and "nothing to grade" in course["again"]["summary"]
    assert "Regrades: scores grading runs moved" in course["again"]["report"]
    back = course["back"]["regrades"]
    assert back[:len(kept)] == kept and len(back) == len(kept) + 4
    assert {r[6] for r in back[len(kept):]} == {
        f"graded by another grader: points of {BUMPED} {g(BUMPED_POINTS + 1)} -> {g(BUMPED_POINTS)}"}


def test_a_tas_override_shows_everywhere_and_survives_every_rerun_and_regrade(course, tmp_path):
    """Issue 36 item 5: carol's causal part set by hand to its points: grades.csv's overrides column,
    the report, her feedback (a person changed it, and why), the history and the Canvas export; a rerun
    keeps it and a regrade records the grader's score beside it."""
    carol_auto = TOTAL + 1 - course["carol_lost"]  # run 3's rubric: one more point
    carol_now = carol_auto + course["carol_lost"]
    assert "carol causal: " in course["override_said"] and "by ta_bob" in course["override_said"]
    for run in ("overridden", "again"):
        grades = course[run]["grades"]
        assert grades[0] == OLD_COLUMNS + ["overrides"]
        carol = next(r for r in grades if r[0] == "carol")
        assert carol[1] == g(carol_now) and carol[OLD_COLUMNS.index("causal")] == g(CAUSAL)
        assert carol[-1].startswith(f"causal {g(CAUSAL - course['carol_lost'])} -> {g(CAUSAL)} by ta_bob at ")
        assert carol[-1].endswith(": the scaling is applied in forward, by hand")
        md, page = course[run]["feedback"]["carol"]
        assert f"Score after a person's change: {g(carol_now)} / {g(TOTAL + 1)}" in md
        assert "changed by a person (ta_bob" in md and "the scaling is applied in forward, by hand" in md
        assert f"- causal: {g(CAUSAL)} / {g(CAUSAL)} (changed by a person)" in md
        assert "changed by a person (ta_bob" in page
        report = course[run]["report"]
        assert "<h2>Scores changed by hand</h2>" in report and "the scaling is applied in forward, by hand" in report
        assert f'{g(CAUSAL)} <span class="note">(by hand)</span>' in report
    back = next(r for r in course["back"]["grades"] if r[0] == "carol")
    assert back[1] == g(TOTAL) and back[OLD_COLUMNS.index("causal")] == g(CAUSAL)  # the override stands
    out = course["out"]
    shown = course["history"]
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    [set_line] = [line for line in lines if "override by ta_bob" in line]
    assert f"carol  {g(carol_now)} / {g(TOTAL + 1)}  override by ta_bob: causal {g(CAUSAL - course['carol_lost'])} " \
           f"-> {g(CAUSAL)} (the scaling is applied in forward, by hand)" in set_line
    assert lines[-1].startswith("    moved: ") or "scores by hand stand: causal" in lines[-1]
    assert any(f"scores by hand stand: causal {g(CAUSAL)} (the grader's: {g(CAUSAL - course['carol_lost'])})" in line
               for line in lines)
    (tmp_path / "roster.csv").write_text("student,name,id,sis_user_id,sis_login_id,section\ncarol,Carol,11,s11,c1,A\n")
    done = command("export", out, "--format", "canvas", "--roster", tmp_path / "roster.csv", "--assignment", "Chapter 3",
                   "--out", tmp_path / "c.csv")
    assert done.returncode == 0, done.stderr
    assert rows(tmp_path / "c.csv")[1][-1] == g(TOTAL)  # the grade of record: the override counts


def test_the_gradebook_keeps_every_grade_and_history_says_why(course):
    out = course["out"]
    db = sqlite3.connect(f"file:{out / 'gradebook.db'}?mode=ro", uri=True)
    history = db.execute("SELECT student, reason, score FROM history WHERE student IN ('carol', 'dave') "
                         "AND run IS NOT NULL ORDER BY run, student").fetchall()
    db.close()
    carol = TOTAL - course["carol_lost"]
    assert history[:4] == [("carol", "first grade", carol), ("dave", "first grade", 0.0),
                           ("carol", WHY, carol + 1), ("dave", WHY, 0.0)]
    shown = course["history"]
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert f"carol  {g(carol)} / {g(TOTAL)}  first grade" in lines[0]
    assert f"carol  {g(carol + 1)} / {g(TOTAL + 1)}  {WHY}" in lines[1]
    assert lines[2] == f"    moved: simple_attention {g(SIMPLE)} -> {g(SIMPLE + 1)}"
    assert lines[0].split("grader ")[1] != lines[1].split("grader ")[1]  # another grader's fingerprint
