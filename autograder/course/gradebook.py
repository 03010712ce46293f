"""The class gradebook: a SQLite file with one committed transaction per graded submission.

Killed at any moment (even SIGKILL) and started again, a batch finds here what is done: a
submission counts as graded only once its transaction committed, so nothing is lost and
nothing is graded twice (a submission whose files changed since, or that another grader graded,
is graded again).

Tables: submissions (each student's current grade, with the fingerprints of what was handed in,
`digest`, and of the grader that graded it, `grader`), part_scores and check_results (that grade's
detail: what the grader computed), history (every grade ever recorded, one row per student per run,
with why it was graded, and every override set or removed: never deleted), runs (one row per batch
run), graders (each grader fingerprint's parts: regrades.grader_parts), regrades (every run's moved
scores, appended: never emptied), overrides (a person's score for one part of one student, with who,
when, why and the automatic score it replaced: it stands over every regrade until removed),
standings (what each student's feedback last said of their grade of record) and lateness (the last
run's late policy per student).
"Why did my grade change": `python -m autograder history OUT --student NAME`, or

    SELECT h.graded_at, h.reason, h.score, h.parts, h.grader FROM history h
    WHERE h.student = 'alice' ORDER BY h.id;
"""
from __future__ import annotations

import json
import os
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autograder.course.lateness import Late

SCHEMA = """
CREATE TABLE IF NOT EXISTS submissions (
    student    TEXT PRIMARY KEY,
    digest     TEXT NOT NULL,
    score      REAL NOT NULL,
    max_score  REAL NOT NULL,
    problem    TEXT NOT NULL DEFAULT '',
    graded_at  TEXT NOT NULL,
    results    TEXT NOT NULL,
    grader     TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS part_scores (
    student    TEXT NOT NULL REFERENCES submissions(student) ON DELETE CASCADE,
    part       TEXT NOT NULL,
    score      REAL NOT NULL,
    max_score  REAL NOT NULL,
    PRIMARY KEY (student, part)
);
CREATE TABLE IF NOT EXISTS check_results (
    student    TEXT NOT NULL REFERENCES submissions(student) ON DELETE CASCADE,
    part       TEXT NOT NULL,
    check_name TEXT NOT NULL,
    passed     INTEGER NOT NULL,
    score      REAL NOT NULL,
    max_score  REAL NOT NULL,
    visibility TEXT NOT NULL,
    message    TEXT NOT NULL,
    PRIMARY KEY (student, part, check_name)
);
CREATE TABLE IF NOT EXISTS runs (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at TEXT NOT NULL,
    grader     TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS history (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    run        INTEGER,
    student    TEXT NOT NULL,
    graded_at  TEXT NOT NULL,
    reason     TEXT NOT NULL,
    digest     TEXT NOT NULL,
    grader     TEXT NOT NULL,
    score      REAL NOT NULL,
    max_score  REAL NOT NULL,
    parts      TEXT NOT NULL,
    problem    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS history_student ON history (student, id);
CREATE TABLE IF NOT EXISTS graders (
    grader     TEXT PRIMARY KEY,
    parts      TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS regrades (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    run        INTEGER NOT NULL,
    at         TEXT NOT NULL,
    student    TEXT NOT NULL,
    before     REAL NOT NULL,
    after      REAL NOT NULL,
    parts      TEXT NOT NULL,
    why        TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS overrides (
    student    TEXT NOT NULL,
    part       TEXT NOT NULL,
    score      REAL NOT NULL,
    automatic  REAL NOT NULL,
    reason     TEXT NOT NULL,
    by_whom    TEXT NOT NULL,
    at         TEXT NOT NULL,
    PRIMARY KEY (student, part)
);
CREATE TABLE IF NOT EXISTS standings (
    student    TEXT PRIMARY KEY,
    standing   TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS lateness (
    student      TEXT PRIMARY KEY,
    submitted_at TEXT NOT NULL,
    due          TEXT NOT NULL,
    late_days    INTEGER,
    penalty      REAL NOT NULL,
    final_score  REAL NOT NULL,
    note         TEXT NOT NULL DEFAULT '',
    cutoff       INTEGER NOT NULL DEFAULT 0
);
"""


class Gradebook:
    def __init__(self, path: str | Path, db: sqlite3.Connection | None = None) -> None:
        if db is not None:  # read_only
            self.db = db
            return
        try:  # readable by the grader's user only, like every file batch writes (SQLite's -wal/-shm follow it)
            os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
        except OSError:
            pass  # sqlite3 says what is wrong with the path
        self.db = sqlite3.connect(path, isolation_level=None)  # transactions are explicit
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.executescript(SCHEMA)
        columns = [row[1] for row in self.db.execute("PRAGMA table_info(submissions)")]
        if "grader" not in columns:  # a gradebook written before grader fingerprints: all from "another grader"
            self.db.execute("ALTER TABLE submissions ADD COLUMN grader TEXT NOT NULL DEFAULT ''")
        if "cutoff" not in [row[1] for row in self.db.execute("PRAGMA table_info(lateness)")]:
            self.db.execute("ALTER TABLE lateness ADD COLUMN cutoff INTEGER NOT NULL DEFAULT 0")

    @classmethod
    def read_only(cls, path: str | Path) -> Gradebook:
        """Open an existing gradebook for reading only (history, export): nothing is created or changed."""
        return cls(path, sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True))

    def graded_digest(self, student):
        row = self.db.execute("SELECT digest FROM submissions WHERE student = ?", (student,)).fetchone()
        return row[0] if row else None

    def graded(self) -> dict[str, tuple[str, str, float, dict[str, float]]]:
        """{student: (digest, grader fingerprint, score, {part: score})} of every current grade."""
        parts = self.part_scores()
        return {s: (d, g, score, parts.get(s, {})) for s, d, g, score in
                self.db.execute("SELECT student, digest, grader, score FROM submissions")}

    def part_scores(self) -> dict[str, dict[str, float]]:
        parts: dict[str, dict[str, float]] = {}
        for student, part, score in self.db.execute("SELECT student, part, score FROM part_scores"):
            parts.setdefault(student, {})[part] = score
        return parts

    def start_run(self, grader: str) -> int | None:
        """A new batch run -> its number (history rows carry it)."""
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        return self.db.execute("INSERT INTO runs (started_at, grader) VALUES (?, ?)", (now, grader)).lastrowid

    def record(self, student: str, digest: str, results: dict[str, Any], problem: str = "", grader: str = "",
               reason: str | None = "graded", run: int | None = None) -> None:
        """Store one submission's results (a results_json dict) atomically, replacing any earlier grade,
        and add it to the student's history (with `reason`: why it was graded in this run; None: nothing
        new for the history, e.g. the same problem again, and no row is added)."""
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        parts = {part: p["score"] for part, p in results["parts"].items()}
        standing = self.overrides(student).get(student, {})
        if standing and run is not None and reason is not None:  # the grader's scores are recorded; the person's stand (both are said)
            effective = apply_overrides(results, standing)
            reason += "; scores by hand stand: " + ", ".join(
                f"{part} {o['score']:g} (the grader's: {parts.get(part, 0):g})" for part, o in sorted(standing.items())
            ) + f"; grade of record {effective['score']:g} / {effective['max_score']:g}"
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute("DELETE FROM submissions WHERE student = ?", (student,))
            self.db.execute("INSERT INTO submissions (student, digest, score, max_score, problem, graded_at, results, "
                            "grader) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            (student, digest, results["score"], results["max_score"], problem, now, json.dumps(results),
                             grader))
            if reason is not None:
                self.db.execute("INSERT INTO history (run, student, graded_at, reason, digest, grader, score, "
                                "max_score, parts, problem) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                (run, student, now, reason, digest, grader, results["score"], results["max_score"],
                                 json.dumps(parts, sort_keys=True), problem))
            self.db.executemany("INSERT INTO part_scores VALUES (?, ?, ?, ?)",
                                [(student, part, p["score"], p["max_score"]) for part, p in results["parts"].items()])
            self.db.executemany("INSERT INTO check_results VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [
                (student, t["name"].split(": ", 1)[0], t["name"].split(": ", 1)[-1], t["status"] == "passed",
                 t["score"], t["max_score"], t["visibility"], t["output"]) for t in results["tests"]])
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def not_graded_runs(self, student: str, digest: str) -> int:
        """How many runs kept this submission (its digest) ungraded because the machine kept parts from
        running: its history rows recorded as retry:machine:DIGEST (batch.settle sets that fingerprint from
        the grader's structured not_graded record; no problem text is read)."""
        return self.db.execute("SELECT COUNT(*) FROM history WHERE student = ? AND digest = ?",
                               (student, "retry:machine:" + digest)).fetchone()[0]

    def rows(self) -> list[tuple[str, float, float, dict[str, float]]]:
        """[(student, score, max_score, {part: score})] sorted by student."""
        parts = self.part_scores()
        return [(s, score, mx, parts.get(s, {})) for s, score, mx in
                self.db.execute("SELECT student, score, max_score FROM submissions ORDER BY student")]

    def students(self) -> list[str]:
        return [row[0] for row in self.db.execute("SELECT student FROM submissions ORDER BY student")]

    def problems(self) -> dict[str, str]:
        """{student: why the submission could not be graded} for those that have a problem."""
        return dict(self.db.execute("SELECT student, problem FROM submissions WHERE problem != ''"))

    def not_graded(self) -> dict[str, list[str]]:
        """{student: [parts the machine kept from being graded]} for every current grade with any, read
        from the grader's structured record (results' extra_data.not_graded), never from `problem`,
        which may quote the student (issue 37.3)."""
        found: dict[str, list[str]] = {}
        for student, results in self.db.execute("SELECT student, results FROM submissions"):
            try:
                extra = json.loads(results).get("extra_data") or {}
            except (ValueError, AttributeError):
                continue
            parts = extra.get("not_graded") if isinstance(extra, dict) else None
            if isinstance(parts, dict) and parts:
                found[student] = sorted(str(part) for part in parts)
        return found

    def records(self) -> list[tuple[str, dict[str, Any], str]]:
        """[(student, results dict, problem)] of every graded submission, sorted by student."""
        return [(s, json.loads(results), problem) for s, results, problem in
                self.db.execute("SELECT student, results, problem FROM submissions ORDER BY student")]

    def history(self, student=None):
        """[{id, run, student, graded_at, reason, digest, grader, score, max_score, parts, problem}] in the
        order they were recorded (one student's, or everyone's)."""
        query = ("SELECT id, run, student, graded_at, reason, digest, grader, score, max_score, parts, problem "
                 "FROM history" + (" WHERE student = ?" if student is not None else "") + " ORDER BY id")
        keys = ("id", "run", "student", "graded_at", "reason", "digest", "grader", "score", "max_score", "parts",
                "problem")
        rows = [dict(zip(keys, row, strict=True)) for row in self.db.execute(query, () if student is None else (student,))]
        for row in rows:
            row["parts"] = json.loads(row["parts"])
        return rows

    def moves(self, run: int | None = None) -> list[tuple[str, float, float, dict[str, tuple[float, float]]]]:
        """[(student, before, after, {part: (before, after)})]: the students graded in run (default: the
        latest run that graded anyone) whose score differs from their grade before it (only parts that
        moved; the grader's scores: an override is not a grade of the grader). Grades that did not
        finish (kept as retry:, e.g. parts the machine kept from running) are no grade: skipped."""
        finished = "digest NOT LIKE 'retry:%' AND run IS NOT NULL"
        latest = run if run is not None else self.db.execute(f"SELECT MAX(run) FROM history WHERE {finished}").fetchone()[0]
        if latest is None:
            return []
        moved: list[tuple[str, float, float, dict[str, tuple[float, float]]]] = []
        for student in [row[0] for row in self.db.execute(
                f"SELECT DISTINCT student FROM history WHERE run = ? AND {finished} ORDER BY student", (latest,))]:
            rows = self.db.execute(f"SELECT score, parts, run FROM history WHERE student = ? AND {finished} "
                                   "ORDER BY id DESC LIMIT 2", (student,)).fetchall()
            if len(rows) < 2 or rows[0][2] != latest:
                continue
            (after, parts_after, _), (before, parts_before, _) = rows
            after_parts, before_parts = json.loads(parts_after), json.loads(parts_before)
            changed = {p: (before_parts.get(p, 0.0), after_parts.get(p, 0.0))
                       for p in sorted(set(after_parts) | set(before_parts))
                       if before_parts.get(p, 0.0) != after_parts.get(p, 0.0)}
            if after != before or changed:
                moved.append((student, before, after, changed))
        return moved

    # ------------------------------------------------------------ graders and regrades (issue 36 item 3)

    def remember_grader(self, grader: str, parts: Any) -> None:
        """Keep the parts (regrades.grader_parts) of the grader with this fingerprint."""
        self.db.execute("INSERT OR REPLACE INTO graders (grader, parts) VALUES (?, ?)",
                        (grader, json.dumps(parts, sort_keys=True)))

    def grader_parts(self, grader: str) -> Any:
        """The parts recorded for a grader fingerprint, or None (a grade from before they were kept)."""
        row = self.db.execute("SELECT parts FROM graders WHERE grader = ?", (grader,)).fetchone()
        return json.loads(row[0]) if row else None

    def add_regrades(self, run: int | None, moves: list[tuple[str, float, float, dict[str, tuple[float, float]]]],
                     why: dict[str, str] | None = None) -> None:
        """Append the moves of run ([(student, before, after, {part: (before, after)})]) with each one's
        reason (why: {student: reason}); earlier runs' rows stay."""
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.db.executemany("INSERT INTO regrades (run, at, student, before, after, parts, why) VALUES (?, ?, ?, ?, ?, ?, ?)",
                            [(run, now, student, before, after, json.dumps(parts), (why or {}).get(student, ""))
                             for student, before, after, parts in moves])

    def regrades(self) -> list[dict[str, Any]]:
        """[{run, at, student, before, after, parts: {part: (before, after)}, why}] of every run, oldest first."""
        keys = ("run", "at", "student", "before", "after", "parts", "why")
        rows = [dict(zip(keys, row, strict=True)) for row in self.db.execute(
            "SELECT run, at, student, before, after, parts, why FROM regrades ORDER BY id")]
        for row in rows:
            row["parts"] = {part: tuple(pair) for part, pair in json.loads(row["parts"]).items()}
        return rows

    # ------------------------------------------------------------ overrides by hand (issue 36 item 5)

    def overrides(self, student: str | None = None) -> dict[str, dict[str, dict[str, Any]]]:
        """{student: {part: {score, automatic, reason, by, at}}}: the overrides that stand."""
        query = "SELECT student, part, score, automatic, reason, by_whom, at FROM overrides"
        args: tuple[str, ...] = ()
        if student is not None:
            query, args = query + " WHERE student = ?", (student,)
        found: dict[str, dict[str, dict[str, Any]]] = {}
        for who, part, score, automatic, reason, by, at in self.db.execute(query + " ORDER BY student, part", args):
            found.setdefault(who, {})[part] = {"score": score, "automatic": automatic, "reason": reason, "by": by,
                                               "at": at}
        return found

    def set_override(self, student, part, score, reason, by):
        """A person's score for one part of one student's current grade: stored with who, when and why, and
        added to the history. ValueError (said to the user) when there is no such grade or part, or the
        score is outside 0..the part's points."""
        record = self.db.execute("SELECT digest, grader, results FROM submissions WHERE student = ?",
                                 (student,)).fetchone()
        if record is None:
            raise ValueError(f"no grade recorded for {student!r} (grades.csv's student names them)")
        results = json.loads(record[2])
        parts = results.get("parts") or {}
        if part not in parts:
            raise ValueError(f"{student!r} has no part {part!r} (parts: {', '.join(parts)})")
        top = float(parts[part]["max_score"])
        if not 0 <= score <= top:
            raise ValueError(f"score {score:g} is outside 0..{top:g}, the points of {part}")
        if not reason.strip():
            raise ValueError("give the reason (--reason): the student's feedback shows it")
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        automatic = float(parts[part]["score"])
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute("INSERT OR REPLACE INTO overrides VALUES (?, ?, ?, ?, ?, ?, ?)",
                            (student, part, score, automatic, reason.strip(), by, now))
            self._history_of_override(student, record, f"override by {by}: {part} {automatic:g} -> {score:g} "
                                      f"({reason.strip()})", now)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return automatic

    def remove_override(self, student, part, by, reason=""):
        """Remove the override of student's part (the automatic score counts again); ValueError when none stands."""
        row = self.db.execute("SELECT score FROM overrides WHERE student = ? AND part = ?", (student, part)).fetchone()
        if row is None:
            raise ValueError(f"no override of {student!r}'s {part!r} stands")
        record = self.db.execute("SELECT digest, grader, results FROM submissions WHERE student = ?",
                                 (student,)).fetchone()
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute("DELETE FROM overrides WHERE student = ? AND part = ?", (student, part))
            if record is not None:
                self._history_of_override(student, record, f"override of {part} removed by {by}"
                                          + (f" ({reason.strip()})" if reason.strip() else ""), now)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def _history_of_override(self, student, record, reason, now):
        """A history row (no run) with the grade of record after an override was set or removed."""
        digest, grader, results = record
        effective = apply_overrides(json.loads(results), self.overrides(student).get(student, {}))
        parts = {part: p["score"] for part, p in effective["parts"].items()}
        self.db.execute("INSERT INTO history (run, student, graded_at, reason, digest, grader, score, max_score, "
                        "parts, problem) VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, '')",
                        (student, now, reason, digest, grader, effective["score"], effective["max_score"],
                         json.dumps(parts, sort_keys=True)))

    def effective_records(self) -> list[tuple[str, dict[str, Any], str]]:
        """records() with every standing override applied (apply_overrides): the grade of record before lateness."""
        overrides = self.overrides()
        return [(s, apply_overrides(results, overrides.get(s, {})), problem) for s, results, problem in self.records()]

    # ------------------------------------------------------------ what the feedback last said

    def standings(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT student, standing FROM standings"))

    def set_standing(self, student: str, standing: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO standings VALUES (?, ?)", (student, standing))

    def set_lateness(self, rows: dict[str, Late]) -> None:
        """Replace the late policy's rows: {student: lateness.Late}; {} when the run had no due date."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute("DELETE FROM lateness")
            self.db.executemany("INSERT INTO lateness (student, submitted_at, due, late_days, penalty, final_score, "
                                "note, cutoff) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [
                                    (student, *late.cells()[:2], late.late_days, late.penalty, late.final_score,
                                     late.note, int(late.cutoff)) for student, late in sorted(rows.items())])
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def lateness(self) -> dict[str, dict[str, Any]]:
        """{student: {submitted_at, due, late_days, penalty, final_score, note, cutoff}} of the last run's late policy."""
        keys = ("submitted_at", "due", "late_days", "penalty", "final_score", "note", "cutoff")
        return {row[0]: dict(zip(keys, row[1:], strict=True)) for row in self.db.execute(
            "SELECT student, submitted_at, due, late_days, penalty, final_score, note, cutoff FROM lateness "
            "ORDER BY student")}

    def count(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM submissions").fetchone()[0]

    def close(self) -> None:
        self.db.close()


def apply_overrides(results, overrides):
    """A copy of a record (results_json) with overrides ({part: {score, automatic, reason, by, at}}) in
    place of the grader's part scores, the total recomputed, and extra_data.overrides saying, per
    part, the person's score, the grader's current score (`automatic`), the score it replaced when it
    was set (`automatic_then`), who, when and why. No overrides: the record itself."""
    if not overrides:
        return results
    parts = {part: dict(p) for part, p in (results.get("parts") or {}).items()}
    said = {}
    for part, o in overrides.items():
        if part not in parts:
            continue
        said[part] = {"score": o["score"], "automatic": parts[part]["score"], "automatic_then": o["automatic"],
                      "max_score": parts[part]["max_score"], "reason": o["reason"], "by": o["by"], "at": o["at"]}
        parts[part]["score"] = o["score"]
    if not said:
        return results
    total = float(results.get("score", 0)) + sum(o["score"] - o["automatic"] for o in said.values())
    extra = dict(results.get("extra_data") or {})
    extra["overrides"] = said
    return {**results, "parts": parts, "score": round(total, 6), "extra_data": extra}
