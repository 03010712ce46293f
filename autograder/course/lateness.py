"""Due dates, extensions and late penalties for `batch` (issue 29).

    policy = lateness.LatePolicy(due=parse_time("2026-12-01T23:59:00+01:00", "--due"),
                                 percent_per_day=10, max_days=3,
                                 times=read_csv_times(Path("times.csv"), "submitted_at"),
                                 extensions=read_csv_times(Path("ext.csv"), "due"))
    late = policy.judge("alice", score=80.0, collected=None)   # -> Late

Times
    Every time is ISO-8601 (`2026-12-01T23:59:00+01:00`, `...Z`, `+0100`, a space for the `T`, fractions
    of a second of any length), read by this module's own grammar (_ISO_TIME), the same on every
    Python (not datetime.fromisoformat's, which differs between 3.10 and 3.11). A time written
    without an offset is read as UTC, wherever the grader runs (never the machine's local zone);
    nbgrader's `timestamp.txt` (`2026-12-01 22:59:00.123456 UTC`) is read the same way. Times are
    compared as instants, so `23:59+01:00` and `22:59Z` are the same due date.

Where a submission time comes from, first found wins
    1. TIMES.csv (`student,submitted_at`), exported from where the class was collected (an LMS);
    2. nbgrader's collected `timestamp.txt` (CLASS/<student>/<assignment>/timestamp.txt, or
       CLASS/<student>/timestamp.txt): this project's `nbgrader collect` writes it from the time the
       kernel recorded (nbgrader_exchange.VerifiedCollect); read from folders only, never from a zip;
    3. Canvas's `LATE` marker in a file name Canvas wrote (`smithjane_LATE_1234_5678_causal.py`; the
       entry's own name or a name directly in its folder): late, time unknown; counted as 1 day
       late, the least a late submission is (not charged when the student has an extension, since
       Canvas judged it against its own due date).
    A submission's own file times (mtime, ctime) are never read: a student sets them at will.
    A student with no time from any of these is not charged, and the row says why. A timestamp.txt
    that says "on time" where the LATE marker says late is not taken (the marker counts), so no file
    a student could plant in a folder lowers a penalty: without it they would be charged the same or
    (no time at all) nothing.

Penalty
    late_days = the number of started days (24 hours each) after the student's due date: 0 up to and
    including the due instant, 1 from one microsecond after it up to exactly 24 h after it, 2 after
    that, ... The penalty is PERCENT of the score per started day (at most 100 %). With --late-days N,
    a submission more than N started days late gets 0 and the row says why: exactly N days (N x 24 h)
    after the due date still counts as N days and is penalised, not zeroed. final_score is rounded
    to 2 decimals.
"""
from __future__ import annotations

import math
import os
import re
import stat
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from autograder import text
from autograder.course.csv_files import read_header_and_rows

DAY = timedelta(days=1)
TIMESTAMP_FILE = "timestamp.txt"
TIMESTAMP_LIMIT = 200  # bytes of timestamp.txt read at most
CANVAS_LATE = re.compile(r"_LATE_\d+_", re.IGNORECASE)  # Canvas: name_LATE_<user id>_<submission id>_file
COLUMNS = ["submitted_at", "due", "late_days", "penalty", "final_score"]  # added to grades.csv


class LateInputError(ValueError):
    """A malformed time or CSV: str() names the file (or option) and the line."""


# The ISO-8601 forms parse_time reads, the same on every Python: datetime.fromisoformat's own grammar
# changed in 3.11 (3.10 reads only what isoformat() writes: no "Z", no "+0100", fractions of exactly 3 or
# 6 digits, so nbgrader's "...:00.5 UTC" or a Gradescope time with 5 digits failed there; 3.11 also
# reads basic and week-date forms), and the grader runs on both (Gradescope's image: Python 3.10).
# Date, then optionally "T" or a space and HH[:MM[:SS[.fraction]]] (a comma for the point too; a
# fraction of any length, cut to microseconds), then optionally Z or an offset +HH[:MM], +HHMM.
_ISO_TIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})"
                       r"(?:[Tt ](\d{2})(?::(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?"
                       r"(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?)?", re.ASCII)


def parse_time(value: str, where: str) -> datetime:
    """An aware datetime from ISO-8601 text (_ISO_TIME's forms, nbgrader's trailing " UTC"); naive
    times are UTC. LateInputError names `where`."""
    raw = value.strip()
    cleaned = raw[:-4].rstrip() if raw.upper().endswith(" UTC") else raw
    found = _ISO_TIME.fullmatch(cleaned)
    try:
        if found is None:
            raise ValueError(cleaned)
        year, month, day, hour, minute, second, fraction, utc, sign, off_h, off_m = found.groups()
        zone = timezone.utc if utc or sign is None else \
            timezone((-1 if sign == "-" else 1) * timedelta(hours=int(off_h), minutes=int(off_m or 0)))
        return datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0),
                        int((fraction or "").ljust(6, "0")[:6]), tzinfo=zone)
    except ValueError:  # not of that form, or a field out of range (month 13, 24:00, an offset of a day)
        raise LateInputError(f"{where}: {text.excerpt(raw, 80)!r} is not an ISO-8601 time "
                             f"(e.g. 2026-12-01T23:59:00+01:00; without an offset it is read as UTC)") from None


def iso(moment: datetime | None) -> str:
    """The instant in UTC, to the second (microseconds when it has them): how grades.csv writes times."""
    if moment is None:
        return ""
    moment = moment.astimezone(timezone.utc)
    return moment.isoformat(timespec="microseconds" if moment.microsecond else "seconds")


def read_csv_times(path: Path, column: str) -> dict[str, datetime]:
    """{student: time} from a CSV with a header naming `student` and `column` (other columns are
    ignored). A missing column, a bad time, an empty student or a student twice is a LateInputError
    naming the file and line: nothing is dropped silently."""
    header, rows = read_header_and_rows(path, ("student", column), LateInputError, joiner=" or ")
    who, when = header.index("student"), header.index(column)
    found: dict[str, datetime] = {}
    lines: dict[str, int] = {}
    for number, row in enumerate(rows, start=2):
        if not any(cell.strip() for cell in row):
            continue  # a blank line
        if len(row) <= max(who, when):
            raise LateInputError(f"{path}, line {number}: {len(row)} cell(s); expected a {column} for the student")
        student = row[who].strip()
        if not student:
            raise LateInputError(f"{path}, line {number}: no student name")
        if student in found:
            raise LateInputError(f"{path}, line {number}: {student!r} is also on line {lines[student]}: "
                                 f"give one {column} per student")
        found[student] = parse_time(row[when], f"{path}, line {number}")
        lines[student] = number
    return found


def late_days(submitted: datetime, due: datetime) -> int:
    """Started days (24 h) after due: 0 up to and including due, then 1, 2, ... (exact, in microseconds)."""
    late = submitted - due
    return 0 if late <= timedelta(0) else -(-late // DAY)


@dataclass(frozen=True)
class Late:
    """One student's row: the time used and where it came from, and what it costs."""

    submitted_at: datetime | None
    due: datetime
    late_days: int | None  # None: no time known
    penalty: float  # percent of the score taken off
    final_score: float
    note: str = ""  # why, when there is something to say (no time known, past the late window, ...)
    cutoff: bool = False  # more started days late than --late-days accepts: final score 0

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Late:
        """A row as the gradebook's lateness table keeps it (gradebook.Gradebook.lateness)."""
        return cls(parse_time(row["submitted_at"], "submitted_at") if row["submitted_at"] else None,
                   parse_time(row["due"], "due"), row["late_days"], float(row["penalty"]), float(row["final_score"]),
                   row["note"], bool(row.get("cutoff")))

    def rescored(self, score: float) -> Late:
        """The same row for another score (an override changed what the code is credited with)."""
        final = 0.0 if self.cutoff else round(score * (100.0 - self.penalty) / 100.0, 2)
        return replace(self, final_score=final)

    def why(self) -> str:
        """In words, for the student: what the late policy did to the score ("past the cutoff", never "-100%")."""
        if self.late_days is None:
            return f"no late penalty ({self.note})" if self.note else "no late penalty"
        if self.cutoff:
            return f"past the cutoff: {self.note}"
        if not self.late_days:
            return "on time: no late penalty"
        return (f"{self.late_days} day(s) late: a penalty of {self.penalty:g}% of the score"
                + (f" ({self.note})" if self.note else ""))

    def cells(self) -> list[str]:
        """grades.csv's added cells, in COLUMNS order."""
        days = "" if self.late_days is None else str(self.late_days)
        return [iso(self.submitted_at), iso(self.due), days, f"{self.penalty:g}", f"{self.final_score:g}"]


@dataclass(frozen=True)
class Collected:
    """What the class folder itself says of one submission's time (read by collected_time)."""

    time: datetime | None = None
    canvas_late: bool = False
    where: str = ""


@dataclass
class LatePolicy:
    due: datetime
    percent_per_day: float = 0.0
    max_days: int | None = None  # --late-days: more started days late than this scores 0
    times: dict[str, datetime] = field(default_factory=dict)  # student -> submitted_at (TIMES.csv)
    extensions: dict[str, datetime] = field(default_factory=dict)  # student -> their own due date (EXT.csv)

    def due_for(self, student: str) -> datetime:
        return self.extensions.get(student, self.due)

    def judge(self, student: str, score: float, collected: Collected | None = None) -> Late:
        """The student's late row for `score` (what the code earned)."""
        due = self.due_for(student)
        collected = collected or Collected()
        submitted = self.times.get(student)
        if submitted is None and collected.time is not None:
            # a timestamp.txt saying "on time" where Canvas's marker says late is not taken: no file a
            # student could have written lowers a penalty (without it the marker alone would count)
            if not (collected.canvas_late and late_days(collected.time, due) == 0):
                submitted = collected.time
        if submitted is None and collected.canvas_late:
            if student in self.extensions:
                return Late(None, due, None, 0.0, score, "Canvas marked it LATE against its own due date, but the "
                            "student has an extension and no submission time is known: not charged (give the time "
                            "in TIMES.csv)")
            return self._charge(None, due, 1, score, "Canvas marked it LATE; the submission time is unknown: "
                                "counted as 1 day late (give the time in TIMES.csv to count it exactly)")
        if submitted is None:
            return Late(None, due, None, 0.0, score, "no submission time known (TIMES.csv, nbgrader's timestamp.txt "
                        "or Canvas's LATE marker): not charged")
        note = "" if student in self.times or not collected.where else f"time from {collected.where}"
        return self._charge(submitted, due, late_days(submitted, due), score, note)

    def _charge(self, submitted: datetime | None, due: datetime, days: int, score: float, note: str) -> Late:
        if self.max_days is not None and days > self.max_days:
            why = f"{days} days late, more than the {self.max_days} day(s) late work is accepted: final score 0"
            return Late(submitted, due, days, 100.0, 0.0, f"{note}; {why}" if note else why, cutoff=True)
        penalty = min(100.0, self.percent_per_day * days)
        return Late(submitted, due, days, penalty, round(score * (100.0 - penalty) / 100.0, 2), note)


def collected_time(path: Path) -> Collected:
    """The time nbgrader's collect wrote beside a folder submission, or Canvas's LATE marker in a
    name Canvas wrote. Reads at most TIMESTAMP_LIMIT bytes of a regular file (never a link, a FIFO or
    a device); never raises; never looks at a file's own times."""
    path = Path(path)
    names = [path.name]
    if path.is_dir() and not path.is_symlink():
        try:
            names += [entry.name for entry in os.scandir(path)]
        except OSError:
            pass
        for candidate in _timestamp_files(path):
            moment = _read_timestamp(candidate)
            if moment is not None:
                return Collected(moment, False, f"nbgrader's {candidate.relative_to(path.parent)}")
    return Collected(None, any(CANVAS_LATE.search(name) for name in names), "")


def _timestamp_files(folder: Path) -> list[Path]:
    """folder/timestamp.txt, else the one of folder/<assignment>/timestamp.txt (nbgrader's submitted/ layout)."""
    found = [folder / TIMESTAMP_FILE]
    try:
        subfolders = [e for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)]
    except OSError:
        subfolders = []
    if len(subfolders) == 1:
        found.append(Path(subfolders[0].path) / TIMESTAMP_FILE)
    return found


def _read_timestamp(path: Path) -> datetime | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        raw = os.read(fd, TIMESTAMP_LIMIT).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        return parse_time(raw.splitlines()[0] if raw.strip() else "", str(path))
    except (LateInputError, IndexError):
        return None


def penalty_is_valid(percent: float) -> bool:
    return math.isfinite(percent) and 0 <= percent <= 100
