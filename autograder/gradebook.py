"""The class gradebook: a SQLite file with one committed transaction per graded submission.

Killed at any moment (even SIGKILL) and started again, a batch finds here what is done: a
submission counts as graded only once its transaction committed, so nothing is lost and
nothing is graded twice (a submission whose files changed since is graded again).
"""
import json
import sqlite3
from datetime import datetime, timezone

SCHEMA = """
CREATE TABLE IF NOT EXISTS submissions (
    student    TEXT PRIMARY KEY,
    digest     TEXT NOT NULL,
    score      REAL NOT NULL,
    max_score  REAL NOT NULL,
    problem    TEXT NOT NULL DEFAULT '',
    graded_at  TEXT NOT NULL,
    results    TEXT NOT NULL
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
"""


class Gradebook:
    def __init__(self, path):
        self.db = sqlite3.connect(path, isolation_level=None)  # transactions are explicit
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.executescript(SCHEMA)

    def graded_digest(self, student):
        row = self.db.execute("SELECT digest FROM submissions WHERE student = ?", (student,)).fetchone()
        return row[0] if row else None

    def record(self, student, digest, results, problem=""):
        """Store one submission's results (a results_json dict) atomically, replacing any earlier grade."""
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute("DELETE FROM submissions WHERE student = ?", (student,))
            self.db.execute("INSERT INTO submissions VALUES (?, ?, ?, ?, ?, ?, ?)",
                            (student, digest, results["score"], results["max_score"], problem, now, json.dumps(results)))
            self.db.executemany("INSERT INTO part_scores VALUES (?, ?, ?, ?)",
                                [(student, part, p["score"], p["max_score"]) for part, p in results["parts"].items()])
            self.db.executemany("INSERT INTO check_results VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [
                (student, t["name"].split(": ", 1)[0], t["name"].split(": ", 1)[-1], t["status"] == "passed",
                 t["score"], t["max_score"], t["visibility"], t["output"]) for t in results["tests"]])
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def rows(self):
        """[(student, score, max_score, {part: score})] sorted by student."""
        parts = {}
        for student, part, score in self.db.execute("SELECT student, part, score FROM part_scores"):
            parts.setdefault(student, {})[part] = score
        return [(s, score, mx, parts.get(s, {})) for s, score, mx in
                self.db.execute("SELECT student, score, max_score FROM submissions ORDER BY student")]

    def students(self):
        return [row[0] for row in self.db.execute("SELECT student FROM submissions ORDER BY student")]

    def problems(self):
        """{student: why the submission could not be graded} for those that have a problem."""
        return dict(self.db.execute("SELECT student, problem FROM submissions WHERE problem != ''"))

    def records(self):
        """[(student, results dict, problem)] of every graded submission, sorted by student."""
        return [(s, json.loads(results), problem) for s, results, problem in
                self.db.execute("SELECT student, results, problem FROM submissions ORDER BY student")]

    def count(self):
        return self.db.execute("SELECT COUNT(*) FROM submissions").fetchone()[0]

    def close(self):
        self.db.close()
