"""Gradescope submission limits: grading.yml's `submissions: {limit: N, window_hours: H}`.

    metadata = read_metadata(root)             # in the grader's process, before any student code runs
    verdict = judge(limit, metadata)           # -> Verdict
    if not verdict.allowed: results = over_limit_results(verdict, limit)

Gradescope hands every run /autograder/submission_metadata.json: the submission's time (`created_at`)
and `previous_submissions` ({submission_time, score, results}: each earlier run's results.json).
That file is the grader's data: it is read here, in the grader's process, before the sandbox
starts, and student code never sees it (the sandbox hides the whole Gradescope folder).

What counts: an earlier submission counts toward the limit only when its results.json says the
grader finished it (`extra_data.graded` true: set by `gradescope --run` on every finished grade).
A run the grader did not finish (its environment failed its check, an internal error, a part the
machine could not run: "not graded") and a submission refused for the limit do not count; neither
do runs from a grader older than this rule (no mark).

The window: the H hours up to this submission's time, (created_at - H, created_at]. With N counted
submissions in it, this one is not graded; the next can be graded once the oldest of the last N
has left the window (its time + H). The results of a refused submission are those of the last
graded one (its score and tests, so Gradescope's active submission keeps that score) under a
message, visible to the student, naming the limit and that time.
"""
from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from autograder.course.lateness import LateInputError, parse_time
from autograder.rubric import SubmissionLimit

METADATA = "submission_metadata.json"
METADATA_LIMIT = 64 << 20  # bytes: earlier results with pictures can be large, never unbounded
GRADED = "graded"  # extra_data key: True on every results.json of a finished grade


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    used: int  # counted submissions in the window before this one
    now: datetime
    next_at: datetime | None = None  # when the next graded submission is possible (refused only)
    last: dict | None = None  # the last graded submission's results.json (refused only)
    last_at: datetime | None = None
    problem: str = ""  # why the metadata could not be used (then the submission is graded)


def read_metadata(root: Path) -> dict | None:
    """ROOT/submission_metadata.json as a dict; None when absent, not a regular file, too large or
    not JSON (the limit then cannot be applied, and the submission is graded)."""
    try:
        fd = os.open(Path(root) / METADATA, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > METADATA_LIMIT:
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            data = json.loads(f.read(METADATA_LIMIT + 1))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    return data if isinstance(data, dict) else None


def _time(value, where) -> datetime | None:
    try:
        return parse_time(value, where) if isinstance(value, str) else None
    except LateInputError:
        return None


def counted(previous: object) -> list[tuple[datetime, dict]]:
    """[(submission time, results)] of the earlier submissions the grader finished, oldest first
    (previous: Gradescope's previous_submissions, whatever it holds)."""
    found: list[tuple[datetime, dict]] = []
    for entry in previous if isinstance(previous, list) else []:
        if not isinstance(entry, dict):
            continue
        results, moment = entry.get("results"), _time(entry.get("submission_time"), "submission_time")
        extra = results.get("extra_data") if isinstance(results, dict) else None
        if moment is not None and isinstance(results, dict) and isinstance(extra, dict) and extra.get(GRADED) is True:
            found.append((moment, results))
    return sorted(found, key=lambda item: item[0])


def judge(limit: SubmissionLimit, metadata: dict | None) -> Verdict:
    """Whether this submission may be graded under limit, from Gradescope's metadata."""
    if metadata is None:
        return Verdict(True, 0, datetime.now(timezone.utc), problem=f"no readable {METADATA}: the limit is not applied")
    now = _time(metadata.get("created_at"), "created_at")
    if now is None:
        return Verdict(True, 0, datetime.now(timezone.utc),
                       problem=f"{METADATA} has no created_at: the limit is not applied")
    window = timedelta(hours=limit.window_hours)
    inside = [(t, r) for t, r in counted(metadata.get("previous_submissions")) if now - window < t <= now]
    if len(inside) < limit.limit:
        return Verdict(True, len(inside), now)
    last_at, last = inside[-1]
    return Verdict(False, len(inside), now, inside[len(inside) - limit.limit][0] + window, last, last_at)


def _utc(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def over_limit_results(verdict: Verdict, limit: SubmissionLimit) -> dict:
    """results.json of a refused submission: the last graded one's score and tests under the message."""
    assert verdict.last_at is not None and verdict.next_at is not None, "a refused submission's verdict"
    last = dict(verdict.last or {})
    score = last.get("score")
    kept = f"Your score stays {score:g}" if isinstance(score, (int, float)) else "Your score stays as it was"
    message = (f"This submission was not graded: this course grades {limit.describe()}, and you have made "
               f"{verdict.used} graded submission(s) since {_utc(verdict.now - timedelta(hours=limit.window_hours))}. "
               f"{kept}, from your last graded submission ({_utc(verdict.last_at)}); the results below are that "
               f"submission's. Your next submission can be graded from {_utc(verdict.next_at)}.")
    extra = last["extra_data"] if isinstance(last.get("extra_data"), dict) else {}
    last.update(output=message, visibility=last.get("visibility", "visible"),
                extra_data={**extra, GRADED: False, "submission_limit": _record(verdict, limit)})
    last.pop("execution_time", None)
    return last


def graded_note(verdict: Verdict, limit: SubmissionLimit) -> str:
    """The line a graded submission's output starts with when the course has a limit. Where the limit
    could not be applied (no readable metadata, no time in it) it says so, and counts nothing."""
    if verdict.problem:
        return (f"This course grades {limit.describe()}, but that limit could not be applied to this submission "
                f"({verdict.problem}): it was graded.")
    return (f"Graded submission {verdict.used + 1} of {limit.limit} allowed in any {limit.window_hours:g} hours "
            f"(this course grades {limit.describe()}).")


def _record(verdict: Verdict, limit: SubmissionLimit) -> dict:
    return {"limit": limit.limit, "window_hours": limit.window_hours, "used": verdict.used,
            "next_graded_from": verdict.next_at.isoformat() if verdict.next_at else None}


def student_text(limit: SubmissionLimit) -> str:
    """What the release README and the notebooks tell students (generated from grading.yml)."""
    return (f"Gradescope grades {limit.describe()}. A submission past that is not graded: your score stays "
            f"that of your last graded submission, and Gradescope's results say when your next submission can "
            f"be graded. A submission the autograder could not grade (its own failure, not your code) does not "
            f"count. Run the public tests (`pytest`) before you submit.")
