"""Due dates, extensions and late penalties (autograder/course/lateness.py): times, boundaries, bad input.

No grading here: the policy is judged on scores given by the test (test_regrades.py runs it in a batch)."""
import os
from datetime import datetime, timedelta, timezone

import pytest

from autograder import cli
from autograder.course import lateness
from autograder.course.lateness import Collected, LateInputError, LatePolicy, late_days, parse_time

pytestmark = pytest.mark.quick  # the whole file is in the quick subset

DUE = parse_time("2026-12-01T23:59:00+01:00", "--due")  # 22:59 UTC
MICRO = timedelta(microseconds=1)


def test_offsets_compare_as_instants_and_naive_times_are_utc():
    assert DUE == datetime(2026, 12, 1, 22, 59, tzinfo=timezone.utc)
    assert parse_time("2026-12-01T22:59:00Z", "x") == DUE
    assert parse_time("2026-12-01 22:59:00", "x") == DUE  # naive: UTC, whatever the machine's zone
    assert parse_time("2026-12-01 22:59:00.000000 UTC", "x") == DUE  # nbgrader's timestamp.txt
    assert parse_time("2026-12-01T17:59:00-05:00", "x") == DUE
    assert lateness.iso(parse_time("2026-12-02T00:00:00+01:00", "x")) == "2026-12-01T23:00:00+00:00"
    assert lateness.iso(DUE + MICRO) == "2026-12-01T22:59:00.000001+00:00"


def test_naive_times_do_not_follow_the_machines_time_zone(monkeypatch):
    import time

    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    try:
        assert parse_time("2026-12-01 22:59", "x") == DUE
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


@pytest.mark.parametrize("after, days", [
    (timedelta(0), 0),                    # at the due instant: on time
    (-timedelta(days=3), 0),              # early
    (MICRO, 1),                           # one microsecond late: a started day
    (timedelta(hours=24), 1),             # exactly 24 h late: still the first day
    (timedelta(hours=24) + MICRO, 2),     # then the second day starts
    (timedelta(days=3), 3),
    (timedelta(days=3) + MICRO, 4),
])
def test_late_days_count_started_days(after, days):
    assert late_days(DUE + after, DUE) == days


def policy(**kwargs):
    return LatePolicy(due=DUE, **kwargs)


def test_penalty_per_started_day_and_the_window_boundary():
    late = policy(percent_per_day=10, max_days=3, times={
        "ontime": DUE, "oneday": DUE + MICRO, "threedays": DUE + timedelta(days=3),
        "past": DUE + timedelta(days=3) + MICRO})
    assert late.judge("ontime", 80).cells() == ["2026-12-01T22:59:00+00:00", "2026-12-01T22:59:00+00:00", "0", "0", "80"]
    assert (late.judge("oneday", 80).late_days, late.judge("oneday", 80).penalty, late.judge("oneday", 80).final_score) \
        == (1, 10.0, 72.0)
    exactly = late.judge("threedays", 80)  # exactly N days late: penalised, not zeroed
    assert (exactly.late_days, exactly.penalty, exactly.final_score, exactly.note) == (3, 30.0, 56.0, "")
    past = late.judge("past", 80)  # one microsecond more: past the window, 0, and the row says why
    assert (past.late_days, past.penalty, past.final_score) == (4, 100.0, 0.0)
    assert past.note == "4 days late, more than the 3 day(s) late work is accepted: final score 0"


def test_late_days_zero_accepts_no_late_work_and_the_penalty_stops_at_100_percent():
    assert policy(max_days=0, times={"a": DUE + MICRO}).judge("a", 90).final_score == 0.0
    assert policy(max_days=0, times={"a": DUE}).judge("a", 90).final_score == 90.0
    steep = policy(percent_per_day=40, times={"a": DUE + timedelta(days=5)}).judge("a", 90)
    assert (steep.penalty, steep.final_score) == (100.0, 0.0)
    assert policy(percent_per_day=12.5, times={"a": DUE + MICRO}).judge("a", 47.5).final_score == 41.56  # 2 decimals


def test_an_extension_moves_that_students_due_date_only():
    late = policy(percent_per_day=10, times={"a": DUE + timedelta(hours=30), "b": DUE + timedelta(hours=30)},
                  extensions={"a": DUE + timedelta(days=2)})
    assert (late.judge("a", 50).late_days, late.judge("a", 50).final_score) == (0, 50.0)
    assert lateness.iso(late.judge("a", 50).due) == "2026-12-03T22:59:00+00:00"
    assert (late.judge("b", 50).late_days, late.judge("b", 50).final_score) == (2, 40.0)


def test_where_a_time_comes_from():
    late = policy(percent_per_day=10, times={"listed": DUE}, extensions={"extended": DUE + timedelta(days=1)})
    collected = Collected(DUE + timedelta(hours=1), False, "nbgrader's alice/ch03/timestamp.txt")
    assert late.judge("listed", 50, collected).late_days == 0  # TIMES.csv wins over timestamp.txt
    from_nbgrader = late.judge("other", 50, collected)
    assert (from_nbgrader.late_days, from_nbgrader.note) == (1, "time from nbgrader's alice/ch03/timestamp.txt")
    marked = late.judge("marked", 50, Collected(None, True))
    assert (marked.late_days, marked.final_score, marked.submitted_at) == (1, 45.0, None)
    assert "Canvas marked it LATE" in marked.note and "counted as 1 day late" in marked.note
    extended = late.judge("extended", 50, Collected(None, True))
    assert (extended.late_days, extended.final_score) == (None, 50.0) and "not charged" in extended.note
    planted = Collected(DUE - timedelta(hours=1), True, "nbgrader's x/timestamp.txt")  # "on time" vs Canvas's LATE
    assert late.judge("marked", 50, planted).late_days == 1 and "Canvas marked it LATE" in late.judge(
        "marked", 50, planted).note
    later = Collected(DUE + timedelta(days=1, seconds=1), True, "nbgrader's x/timestamp.txt")
    assert late.judge("marked", 50, later).late_days == 2  # a time that agrees with the marker counts exactly
    unknown = late.judge("nobody", 50)
    assert (unknown.late_days, unknown.penalty, unknown.final_score) == (None, 0.0, 50.0)
    assert unknown.cells() == ["", "2026-12-01T22:59:00+00:00", "", "0", "50"]
    assert unknown.note.startswith("no submission time known")


def test_collected_time_reads_nbgraders_file_and_canvas_names_never_file_times(tmp_path):
    nb = tmp_path / "alice" / "ch03"
    nb.mkdir(parents=True)
    (nb / "timestamp.txt").write_text("2026-12-01 23:30:00.5 UTC\n")
    os.utime(nb / "timestamp.txt", (0, 0))  # the file's own time is never read
    found = lateness.collected_time(tmp_path / "alice")
    assert found.time == datetime(2026, 12, 1, 23, 30, 0, 500000, tzinfo=timezone.utc)
    assert found.where == "nbgrader's alice/ch03/timestamp.txt"
    canvas = tmp_path / "smithjane"
    canvas.mkdir()
    (canvas / "smithjane_LATE_1234_5678_causal.py").write_text("")
    assert lateness.collected_time(canvas) == Collected(None, True, "")
    plain = tmp_path / "bob"
    plain.mkdir()
    (plain / "causal.py").write_text("")
    os.utime(plain / "causal.py", (2**31, 2**31))
    assert lateness.collected_time(plain) == Collected(None, False, "")
    assert lateness.collected_time(tmp_path / "latecomer.zip").canvas_late is False


def test_a_fifo_or_link_named_timestamp_is_never_read(tmp_path):
    fifo = tmp_path / "mallory"
    fifo.mkdir()
    os.mkfifo(fifo / "timestamp.txt")  # opening it for reading would block a batch
    assert lateness.collected_time(fifo) == Collected(None, False, "")
    link = tmp_path / "trudy"
    link.mkdir()
    (tmp_path / "elsewhere.txt").write_text("2020-01-01 00:00:00 UTC\n")
    (link / "timestamp.txt").symlink_to(tmp_path / "elsewhere.txt")
    assert lateness.collected_time(link).time is None


@pytest.mark.parametrize("content, message", [
    ("", "times.csv: empty (expected a header line: student,submitted_at)"),
    ("name,when\nalice,2026-12-01\n", "times.csv, line 1: no column student or submitted_at in the header"),
    ("student,submitted_at\nalice,2026-12-01T10:00Z\nbob,yesterday\n", "times.csv, line 3: 'yesterday' is not an ISO-8601 time"),
    ("student,submitted_at\nalice,2026-12-01T10:00Z\n\nalice,2026-12-01T11:00Z\n",
     "times.csv, line 4: 'alice' is also on line 2: give one submitted_at per student"),
    ("student,submitted_at\n,2026-12-01T10:00Z\n", "times.csv, line 2: no student name"),
    ("student,submitted_at\ncarol\n", "times.csv, line 2: 1 cell(s); expected a submitted_at for the student"),
])
def test_a_malformed_csv_names_the_file_and_the_line(tmp_path, content, message):
    path = tmp_path / "times.csv"
    path.write_text(content)
    with pytest.raises(LateInputError) as e:
        lateness.read_csv_times(path, "submitted_at")
    assert str(e.value).startswith(str(tmp_path / message.split(":")[0].split(",")[0]))
    assert message.split("times.csv", 1)[1] in str(e.value)


def test_a_spreadsheets_byte_order_mark_and_extra_columns_are_fine(tmp_path):
    path = tmp_path / "ext.csv"
    path.write_bytes("\ufeffStudent,Name,due\nalice,Alice,2026-12-03T23:59:00+01:00\n".encode("utf-8"))
    assert lateness.read_csv_times(path, "due") == {"alice": DUE + timedelta(days=2)}


def test_the_batch_command_refuses_bad_options_before_grading(tmp_path, capsys):
    (tmp_path / "class").mkdir()
    (tmp_path / "times.csv").write_text("student,submitted_at\nalice,soon\n")
    cases = [(["--late-penalty", "10"], "--late-penalty needs --due"),
             (["--due", "tomorrow"], "--due: 'tomorrow' is not an ISO-8601 time"),
             (["--due", "2026-12-01T23:59Z", "--late-penalty", "120"], "--late-penalty must be a percent from 0 to 100"),
             (["--due", "2026-12-01T23:59Z", "--late-days", "-1"], "--late-days must be 0 or more"),
             (["--due", "2026-12-01T23:59Z", "--submitted-at", str(tmp_path / "times.csv")],
              f"{tmp_path / 'times.csv'}, line 2: 'soon' is not an ISO-8601 time")]
    for options, message in cases:
        status = cli.main(["batch", str(tmp_path / "class"), "--out", str(tmp_path / "out"), *options])
        assert status == 2 and message in capsys.readouterr().err, options
    assert not (tmp_path / "out").exists()  # nothing was graded or written


# (text, the instant it names): forms Python 3.10's datetime.fromisoformat refused (Gradescope's image
# runs 3.10): a fraction not of 3 or 6 digits (nbgrader's timestamp.txt, a Gradescope time), a comma,
# +HHMM and +HH offsets
READ_ON_EVERY_PYTHON = [
    ("2026-12-01 22:59:00.5 UTC", DUE + timedelta(milliseconds=500)),
    ("2026-12-01T22:59:00.08702+00:00", DUE + timedelta(microseconds=87020)),
    ("2026-12-01T14:59:00.1234567-08:00", DUE + timedelta(microseconds=123456)),  # cut to microseconds
    ("2026-12-01T22:59:00,25Z", DUE + timedelta(milliseconds=250)),
    ("2026-12-01T23:59:00+0100", DUE),
    ("2026-12-01T17:59-05", DUE),
    ("2026-12-01T22", DUE - timedelta(minutes=59)),
    ("2026-12-01", datetime(2026, 12, 1, tzinfo=timezone.utc)),
]
# forms outside the documented grammar that Python 3.11's fromisoformat reads and 3.10's refuses: one
# grammar everywhere, so a time the instructor's machine accepts is never refused on Gradescope's
REFUSED_ON_EVERY_PYTHON = ["20261201T225900Z", "2026-W49-2", "2026-12-01X22:59", "2026-12-01T22:59:00+01:00:30",
                           "2026-12-01T24:00", "2026-12-01T22:59+24:00", "2026-13-01", "\uff12026-12-01"]


def test_one_iso_grammar_on_every_python():
    """The grader runs on Python 3.10 (Gradescope's default image) and 3.11+: parse_time reads the same
    times on both (it once used datetime.fromisoformat, whose grammar changed in 3.11: on 3.10 nbgrader's
    "...:00.5 UTC" timestamp was no time at all, and neither was a Gradescope time with 5 digits)."""
    for written, instant in READ_ON_EVERY_PYTHON:
        assert parse_time(written, "x") == instant, written
    for written in REFUSED_ON_EVERY_PYTHON:
        with pytest.raises(LateInputError, match=r"^x: .* is not an ISO-8601 time"):
            parse_time(written, "x")


def test_a_gradescope_time_of_any_precision_counts_toward_the_limit():
    """A previous submission whose time has 5 digits of a second still counts (on 3.10 it was once
    dropped: a way around the limit), and created_at of that form applies the limit."""
    from autograder.course import gradescope_limits
    from autograder.rubric import SubmissionLimit

    previous = [{"submission_time": "2026-12-01T14:00:00.08702-08:00",
                 "results": {"score": 7, "extra_data": {gradescope_limits.GRADED: True}}}]
    verdict = gradescope_limits.judge(SubmissionLimit(limit=1, window_hours=24),
                                      {"created_at": "2026-12-01T15:00:00.5-08:00", "previous_submissions": previous})
    assert not verdict.allowed and verdict.used == 1 and not verdict.problem
    assert verdict.next_at == datetime(2026, 12, 2, 22, 0, 0, 87020, tzinfo=timezone.utc)
