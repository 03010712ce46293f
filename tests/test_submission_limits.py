"""Gradescope submission limits (grading.yml's `submissions`, autograder/course/gradescope_limits.py).

The window's boundaries and what counts are judged on metadata written here; then the bundle, built
with a rubric that has a limit, is run as Gradescope runs it: past the limit nothing is graded and
results.json keeps the last graded score under a message; within it the submission is graded and
its output says which graded submission it is."""
import json
import os
from datetime import timedelta

import gradescope_bundle
import pytest

from autograder import PROJECT_ROOT, rubric
from autograder.course import gradescope_limits
from autograder.course.lateness import parse_time
from autograder.rubric import SubmissionLimit

NOW = parse_time("2026-12-02T12:00:00-08:00", "now")  # 20:00 UTC
LIMIT = SubmissionLimit(2, 24.0)
WINDOW = timedelta(hours=24)


def graded(hours_ago, score=50.0, finished=True, offset="-08:00"):
    moment = (NOW - timedelta(hours=hours_ago)).astimezone(parse_time(f"2026-01-01T00:00:00{offset}", "x").tzinfo)
    extra = {gradescope_limits.GRADED: True} if finished is True else ({} if finished is None else {"graded": False})
    return {"submission_time": moment.isoformat(), "score": score,
            "results": {"score": score, "tests": [{"name": "causal: x", "score": score}], "extra_data": extra}}


def metadata(*previous):
    return {"created_at": NOW.isoformat(), "previous_submissions": list(previous)}


def test_under_the_limit_is_graded():
    verdict = gradescope_limits.judge(LIMIT, metadata(graded(3)))
    assert verdict.allowed and verdict.used == 1
    assert gradescope_limits.graded_note(verdict, LIMIT) == (
        "Graded submission 2 of 2 allowed in any 24 hours (this course grades at most 2 graded submissions in any "
        "24 hours).")


def test_without_metadata_the_note_says_the_limit_could_not_be_applied():
    """No readable metadata (or no created_at): graded, and the note never claims "submission 1 of 2"."""
    for verdict in (gradescope_limits.judge(LIMIT, None), gradescope_limits.judge(LIMIT, {"previous_submissions": []})):
        assert verdict.allowed and verdict.problem
        note = gradescope_limits.graded_note(verdict, LIMIT)
        assert "Graded submission" not in note and " of 2 " not in note
        assert note.startswith("This course grades at most 2 graded submissions in any 24 hours, but that limit could "
                               "not be applied to this submission (")
        assert verdict.problem in note


def test_the_window_is_the_hours_up_to_this_submission():
    exactly = gradescope_limits.judge(LIMIT, metadata(graded(24), graded(1)))  # 24 h ago: out of the window
    assert exactly.allowed and exactly.used == 1
    inside = gradescope_limits.judge(LIMIT, metadata(graded(24 - 1 / 3600, score=40), graded(1, score=60)))
    assert not inside.allowed and inside.used == 2
    assert inside.next_at == NOW + timedelta(seconds=1)  # the oldest leaves the window one second from now
    assert inside.last["score"] == 60 and inside.last_at == NOW - timedelta(hours=1)


def test_offsets_are_instants():
    # 21 h ago written in +09:00 and 2 h ago in Z: both inside, whatever the offsets say
    verdict = gradescope_limits.judge(LIMIT, metadata(graded(21, offset="+09:00"), graded(2, offset="+00:00")))
    assert not verdict.allowed and verdict.next_at == NOW + timedelta(hours=3)


@pytest.mark.quick
def test_runs_the_grader_did_not_finish_do_not_count():
    unfinished = [graded(2, finished=None), graded(3, finished=False), {"submission_time": "garbage"},
                  {"submission_time": graded(4)["submission_time"], "results": "not a dict"}, "junk"]
    verdict = gradescope_limits.judge(LIMIT, metadata(graded(5), *unfinished))
    assert verdict.allowed and verdict.used == 1


def test_the_next_graded_submission_is_when_the_oldest_of_the_last_n_leaves():
    verdict = gradescope_limits.judge(LIMIT, metadata(graded(20), graded(10), graded(2, score=70)))
    assert not verdict.allowed and verdict.used == 3
    assert verdict.next_at == NOW - timedelta(hours=10) + WINDOW  # 3 in the window: two must leave


@pytest.mark.quick
def test_a_refused_submission_keeps_the_last_graded_score_and_says_why():
    verdict = gradescope_limits.judge(LIMIT, metadata(graded(20, score=30), graded(2, score=70)))
    results = gradescope_limits.over_limit_results(verdict, LIMIT)
    assert results["score"] == 70 and results["tests"] == [{"name": "causal: x", "score": 70}]
    assert results["output"] == (
        "This submission was not graded: this course grades at most 2 graded submissions in any 24 hours, and you "
        "have made 2 graded submission(s) since 2026-12-01 20:00 UTC. Your score stays 70, from your last graded "
        "submission (2026-12-02 18:00 UTC); the results below are that submission's. Your next submission can be "
        "graded from 2026-12-03 00:00 UTC.")
    assert results["visibility"] == "visible"
    assert results["extra_data"][gradescope_limits.GRADED] is False  # a refused one never counts
    assert results["extra_data"]["submission_limit"]["next_graded_from"] == "2026-12-02T16:00:00-08:00"


def test_metadata_that_cannot_be_read_grades_the_submission(tmp_path):
    assert gradescope_limits.read_metadata(tmp_path) is None
    (tmp_path / "elsewhere.json").write_text(json.dumps(metadata(graded(1), graded(2))))
    (tmp_path / gradescope_limits.METADATA).symlink_to(tmp_path / "elsewhere.json")
    assert gradescope_limits.read_metadata(tmp_path) is None  # a link is never followed
    (tmp_path / gradescope_limits.METADATA).unlink()
    os.mkfifo(tmp_path / gradescope_limits.METADATA)
    assert gradescope_limits.read_metadata(tmp_path) is None  # never blocks
    verdict = gradescope_limits.judge(LIMIT, None)
    assert verdict.allowed and "the limit is not applied" in verdict.problem
    assert gradescope_limits.judge(LIMIT, {"previous_submissions": []}).problem.endswith("the limit is not applied")


@pytest.mark.parametrize("setting, message", [
    ("submissions: {limit: 0, window_hours: 24}", "submissions.limit must be a whole number of submissions, at least 1"),
    ("submissions: {limit: 2.5, window_hours: 24}", "submissions.limit must be a whole number"),
    ("submissions: {limit: '3', window_hours: 24}", "submissions.limit must be a whole number"),
    ("submissions: {limit: 3}", "submissions needs window_hours"),
    ("submissions: {limit: 3, window_hours: 0}", "submissions.window_hours must be a number of hours above 0"),
    ("submissions: {limit: 3, window_hours: .inf}", "submissions.window_hours must be a number of hours above 0"),
    ("submissions: {limit: 3, window_hours: 24, per: student}", "unknown key 'per' in submissions"),
    ("submissions: [3, 24]", "submissions must be a mapping"),
])
def test_the_rubric_loader_names_the_file_and_line_of_a_bad_limit(tmp_path, setting, message):
    base = (PROJECT_ROOT / "grading.yml").read_text()
    path = tmp_path / "grading.yml"
    path.write_text(base + setting + "\n")
    line = base.count("\n") + 1
    with pytest.raises(rubric.RubricError) as e:
        rubric.load(path)
    assert str(e.value).startswith(f"{path}:{line}: {message}")


def test_a_good_limit_loads():
    path_text = (PROJECT_ROOT / "grading.yml").read_text() + "submissions: {limit: 3, window_hours: 12.5}\n"
    assert rubric._Reader("grading.yml").rubric(__import__("yaml").compose(path_text), None).submissions == \
        SubmissionLimit(3, 12.5)
    assert rubric.load(PROJECT_ROOT / "grading.yml").submissions is None  # the course sets none today


@pytest.fixture(scope="module")
def limited_bundle(tmp_path_factory):
    where = tmp_path_factory.mktemp("limited")
    limited = where / "grading.yml"
    limited.write_text((PROJECT_ROOT / "grading.yml").read_text() + "submissions: {limit: 2, window_hours: 24}\n")
    return gradescope_bundle.build(where, where / "source", ["--rubric", str(limited)]), where / "source"


def run_with_metadata(bundle, tmp_path, meta):
    def plant(root):
        (root / gradescope_limits.METADATA).write_text(json.dumps(meta))

    files = {p.name: p.read_text() for p in sorted((PROJECT_ROOT / "solutions" / "ch03").glob("*.py"))}
    return gradescope_bundle.run(bundle[1], tmp_path, files, before=plant)


def test_past_the_limit_the_bundle_grades_nothing(limited_bundle, tmp_path):
    done, _, results = run_with_metadata(limited_bundle, tmp_path, metadata(graded(20, score=30), graded(2, score=70)))
    assert done.returncode == 0, done.stderr[-3000:]
    assert results["score"] == 70 and results["output"].startswith("This submission was not graded: this course "
                                                                  "grades at most 2 graded submissions in any 24 hours")
    assert "Your next submission can be graded from 2026-12-03 00:00 UTC." in results["output"]
    assert "environment_check" not in results.get("extra_data", {})  # nothing ran: not even the reference
    assert "not graded: past the limit" in done.stdout


def test_within_the_limit_the_bundle_grades_and_counts_it(limited_bundle, tmp_path):
    done, _, results = run_with_metadata(limited_bundle, tmp_path, metadata(graded(20, finished=None), graded(2)))
    assert done.returncode == 0, done.stderr[-3000:]
    assert results["score"] == results["max_score"] > 0
    assert results["output"].startswith("Graded submission 2 of 2 allowed in any 24 hours")
    assert results["extra_data"][gradescope_limits.GRADED] is True


def test_a_grade_the_machine_did_not_finish_never_counts():
    from autograder.commands.gradescope import finished
    from autograder.grading import Grade, PartScore

    done = {"causal": PartScore(0.0, 2.0, problem="your code raised ValueError")}
    assert finished(Grade("s", parts=done))
    assert not finished(Grade("s", parts={"causal": PartScore(0.0, 2.0, not_graded="killed by the machine")}))
    # issue 37.3: a problem's text proves nothing (an import error may read "not graded yet"); the flag does
    assert finished(Grade("s", parts={"causal": PartScore(0.0, 2.0, problem="not graded: overloaded")}))
    assert not finished(Grade("s", parts={**done, "mha": PartScore(0.0, 2.0, not_graded="overloaded")}))
