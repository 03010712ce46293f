"""The run's plan: who is in the class folder (find_submissions: one safe name per entry), what each
handed in (its fingerprint: digest) and whether to grade it now (why_grade: a new or changed submission,
another grader, --force, a grading that did not finish); once graded, how the grading is kept so that
the next run knows (settle: RETRY for a grading to do again, MACHINE for one the machine kept from running)."""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from autograder import submission, text
from autograder.course import regrades
from autograder.reports.records import not_graded_of

if TYPE_CHECKING:
    from autograder.course.gradebook import Gradebook

RETRY = "retry:"  # a fingerprint kept with this prefix is graded again on the next run
Results = dict[str, Any]  # one submission's record, as results.json holds it (reports/results_json.py): JSON
MACHINE = "machine:"  # after RETRY: kept so because the machine kept parts from running (counted, NOT_GRADED_RUNS)
OTHER_GRADER = "graded by another grader"  # then what changed: other_grader_reason


class Todo(NamedTuple):
    """One submission to grade in this run: the student, what they handed in, its fingerprint (digest)
    and why it is graded now (why_grade)."""
    student: str
    path: Path
    fingerprint: str
    reason: str


def to_grade(book: Gradebook, known: dict[str, tuple[str, str, float, dict[str, float]]], found: list[tuple[str, Path, str]], grader: str,
             parts_now: dict[str, Any], force: bool) -> list[Todo]:
    """The submissions of found (find_submissions) to grade in this run, with why. known: the
    gradebook's (book.graded()); grader, parts_now: the grader's fingerprint and parts now; force:
    --force. A submission with a problem of its own (an ambiguous name) is never graded."""
    todo = []
    for student, path, problem in found:
        fingerprint = digest(path)
        reason = None if problem else why_grade(known.get(student), fingerprint, grader, force)
        if reason == OTHER_GRADER:  # name what changed since the grader of the student's last grade
            reason = other_grader_reason(book.grader_parts(known[student][1]), parts_now)
        if reason:
            todo.append(Todo(student, path, fingerprint, reason))
    return todo


NAME_LIMIT = 80  # characters of a student's name kept in its file names (results/<name>.json, ...)


SAFE = re.compile(r"[^A-Za-z0-9_.@+-]")


def find_submissions(folder: str | Path) -> list[tuple[str, Path, str]]:
    """[(student name, path, problem)] for each subfolder or .zip in folder, sorted by name.

    A name keeps the characters a file name can safely hold (the others become _) and at most
    NAME_LIMIT of them; a longer one ends in ~ and a hash of its whole name (any bytes), so it
    still names one entry. Two entries that would get the same name (`a b` and `a_b`, `c` and
    `c.zip`) are ambiguous: neither takes that name; each is recorded under the name and a hash of
    its own file name, with the problem, and graded once one of them is renamed."""
    by_name: dict[str, list[Path]] = {}
    for entry in sorted(Path(folder).iterdir()):
        if entry.name.startswith(".") or entry.is_symlink():
            continue
        if entry.is_dir() or entry.suffix == ".zip" and entry.is_file():
            name = SAFE.sub("_", entry.stem if entry.suffix == ".zip" else entry.name)
            if len(name) > NAME_LIMIT:
                name = _hashed(name[:NAME_LIMIT], entry)
            by_name.setdefault(name, []).append(entry)
    found = []
    for name, entries in by_name.items():
        if len(entries) == 1:
            found.append((name, entries[0], ""))
            continue
        for entry in entries:
            others = ", ".join(repr(text.clean(os.fsdecode(e.name))) for e in entries if e != entry)
            found.append((_hashed(name, entry), entry,
                          f"ambiguous name: {text.clean(os.fsdecode(entry.name))!r} and {others} both become "
                          f"{name!r}: rename one of them so that each student has a name of their own"))
    return sorted(found, key=lambda item: item[0])


def _hashed(name: str, entry: Path) -> str:
    """name, ~ and a hash of the entry's file name (any bytes): never a name SAFE leaves as it is."""
    return f"{name}~{hashlib.sha256(os.fsencode(entry.name)).hexdigest()[:10]}"


def digest(path: str | Path) -> str:
    """A fingerprint of what was handed in: regrade only when it changes.

    Bounded like staging: the files staging could read (submission.read_limit) count by name and a
    streamed hash of their bytes; every other file by its name and size only (never read, whatever
    its size); a folder is walked as staging walks it. Never raises: what cannot be read is
    fingerprinted by the error (staging will say what it is)."""
    path = Path(path)
    h = hashlib.sha256()
    try:
        if path.is_dir():
            listing = [(str(rel / name), path / rel / name, size)
                       for rel, files in submission.walk(path) for name, size in sorted(files.items())]
        else:
            listing = [(path.name, path, path.stat().st_size)]
    except (submission.SubmissionError, OSError) as e:
        return hashlib.sha256(f"unreadable: {e}".encode("utf-8", "replace")).hexdigest()
    for name, file, size in listing:
        h.update(name.encode("utf-8", "surrogateescape") + b"\0" + str(size).encode() + b"\0")
        if size <= submission.read_limit(name):
            h.update(_file_hash(file))
    return h.hexdigest()


def _file_hash(path: Path) -> bytes:
    h = hashlib.sha256()
    try:
        with open(path, "rb", opener=lambda p, flags: os.open(p, flags | os.O_NOFOLLOW)) as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    except OSError as e:
        h.update(f"unreadable: {e.errno}".encode())
    return h.digest()


def why_grade(previous: tuple[str, str, float, dict[str, float]] | None, fingerprint: str, grader: str, force: bool) -> str | None:
    """Why this submission is graded in this run (None: it is up to date). previous: the gradebook's
    (digest, grader, ...) for the student, or None."""
    if previous is None:
        return "first grade"
    if force:
        return "regraded with --force"
    if previous[0] != fingerprint:
        return "graded again: its last grading did not finish" if previous[0].startswith(RETRY) else \
            "the submission changed"
    if previous[1] != grader:
        return OTHER_GRADER
    return None


def other_grader_reason(before: dict[str, Any] | None, now: dict[str, Any]) -> str:
    """Why a student graded by another grader is regraded, naming what changed (regrades.changes):
    "graded by another grader: points of mha.book_example 4 -> 5; torch 2.12.0 -> 2.13.0"."""
    said = regrades.changes(before, now)
    if not said:
        said = ["what changed was not recorded (a grade from before the grader's parts were kept)"] if before is None \
            else ["the rubric's text or the suites' snapshots changed, not its points, files or versions"]
    return f"{OTHER_GRADER}: {'; '.join(said)}"


def settle(book: Gradebook, student: str, fingerprint: str, results: Results, problem: str,
           internal: str) -> tuple[str, str]:
    """How one grading is kept -> (fingerprint to record, problem). A failure of the grader
    (internal) is kept as RETRY, graded again on the next run; so is a grade the machine kept from
    running (runner.NOT_GRADED), NOT_GRADED_RUNS runs at most for the same submission: then it is
    graded as it stands (charged_after_not_graded), and no run after regrades it."""
    if internal:  # not the student's doing: kept for the instructor, graded again on the next run
        return RETRY + fingerprint, f"{problem} ({internal})"
    if not_graded_of(results):  # the grader's structured record (issue 37.3), never the problem's text
        runs = book.not_graded_runs(student, fingerprint) + 1
        if runs < NOT_GRADED_RUNS:
            return RETRY + MACHINE + fingerprint, problem
        return fingerprint, charged_after_not_graded(results, runs)
    return fingerprint, problem


NOT_GRADED_RUNS = 3  # runs a submission may stay "not graded" (the machine's doing) before it is graded as it stands


def charged_after_not_graded(results: Results, runs: int) -> str:
    """A submission no run could grade in full (runs of them): graded now as it stands, the parts the
    machine kept from running scored as failed (the code's, as a part that dies in every fresh child
    is), with a note for the instructor -> the problem to record. results is changed in place: its
    score stands (extra_data.not_graded becomes extra_data.charged_after_not_graded)."""
    extra = results.setdefault("extra_data", {})
    parts = extra.pop("not_graded", {}) or {}
    extra["charged_after_not_graded"] = parts
    note = (f"graded as it stands after {runs} runs in which parts were not graded ({', '.join(parts) or 'parts'}: "
            f"scored as failed); regrade with --force once the machine is quiet")
    results["output"] = f"Graded: {note}"
    return note
