"""Grade a whole class: every subfolder, .zip or notebook folder of DIR is one student.

    python -m autograder batch DIR --out OUT [--jobs N] [--force]

Workers are processes with one fork server each (torch imported once per worker); the parent
alone writes the gradebook (OUT/gradebook.db), the per-student files and OUT/grades.csv.
"""
import csv
import hashlib
import json
import multiprocessing
import multiprocessing.util
import os
import re
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from autograder import PARTS, reports
from autograder.gradebook import Gradebook
from autograder.reports import class_report, html_feedback

_worker = {}


def find_submissions(folder):
    """[(student name, path)] for each subfolder or .zip in folder, sorted by name."""
    found = {}
    for entry in sorted(Path(folder).iterdir()):
        if entry.name.startswith(".") or entry.is_symlink():
            continue
        if entry.is_dir() or entry.suffix == ".zip" and entry.is_file():
            name = entry.stem if entry.suffix == ".zip" else entry.name
            safe = re.sub(r"[^A-Za-z0-9_.@+-]", "_", name)
            if safe in found:
                safe = f"{safe}-{hashlib.sha1(entry.name.encode()).hexdigest()[:6]}"
            found[safe] = entry
    return sorted(found.items())


def digest(path):
    """A fingerprint of what was handed in: regrade only when it changes."""
    h = hashlib.sha256()
    paths = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file() and not p.is_symlink())
    for p in paths:
        h.update(str(p.relative_to(path) if path.is_dir() else p.name).encode() + b"\0")
        with open(p, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def _init_worker(slot_queue, hide, rubric_path, batch_pid):
    import torch

    from autograder import grading
    from autograder.sandbox import isolation
    from autograder.sandbox.client import Sandbox

    isolation.die_with_parent(batch_pid)  # and its fork server with it, and that one's children
    torch.set_num_threads(1)  # a forked copy of a parent's thread pool can deadlock; one per core anyway
    slot = slot_queue.get()
    _worker["sandbox"] = Sandbox(hide=hide, slot=slot)
    multiprocessing.util.Finalize(None, _worker["sandbox"].close, exitpriority=10)  # run as the worker exits
    _worker["rubric"], _worker["suites"] = grading.load_rubric(rubric_path)


def _grade_one(student, path):
    from autograder import grading
    from autograder.submission import SubmissionError

    try:
        grade = grading.grade_submission(path, _worker["rubric"], _worker["suites"], _worker["sandbox"])
        return student, reports.results_json(grade), ""
    except SubmissionError as e:
        return student, None, str(e)


def broken_results(rubric, problem):
    """A submission that could not be staged at all: every check failed with the reason."""
    tests = [{"name": f"{c.part}: {c.name}", "score": 0.0, "max_score": c.points, "status": "failed",
              "output": problem, "visibility": c.visibility} for part in rubric.parts.values() for c in part.checks.values()]
    return {"score": 0.0, "max_score": rubric.max_score, "output": problem, "tests": tests,
            "parts": {name: {"score": 0.0, "max_score": part.max_score} for name, part in rubric.parts.items()}}


def run_batch(folder, out, jobs=2, force=False, rubric_path=None, progress=sys.stderr):
    from autograder import grading

    out = Path(out)
    for sub in ("results", "feedback"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    rubric_path = rubric_path or grading.RUBRIC_PATH
    rubric, _ = grading.load_rubric(rubric_path)
    book = Gradebook(out / "gradebook.db")
    todo = []
    for student, path in find_submissions(folder):
        fingerprint = digest(path)
        if force or book.graded_digest(student) != fingerprint:
            todo.append((student, path, fingerprint))
    total, done, started = len(todo), 0, time.monotonic()
    _progress(progress, done, total, started, "")
    remaining = list(todo)
    while remaining:
        ctx = multiprocessing.get_context("fork")
        slots = ctx.Queue()
        for slot in range(jobs):
            slots.put(slot)
        pending = {s: (p, f) for s, p, f in remaining}
        try:
            with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init_worker,
                                     initargs=(slots, [str(Path(folder).resolve()), str(out.resolve())], str(rubric_path),
                                               os.getpid())) as pool:
                futures = [pool.submit(_grade_one, s, str(p)) for s, p, _ in remaining]
                for future in as_completed(futures):
                    student, results, problem = future.result()
                    if results is None:
                        results = broken_results(rubric, problem)
                    path, fingerprint = pending.pop(student)
                    _store(book, out, student, fingerprint, results, problem)
                    done += 1
                    _progress(progress, done, total, started, student)
            remaining = []
        except BrokenProcessPool:
            # a worker died (not a student's child: those are contained); grade what is left anew
            remaining = [(s, p, f) for s, (p, f) in pending.items()]
    write_csv(book, out / "grades.csv")
    class_report.write_class_report(out, book.records())  # report.html, misconceptions.csv
    count = book.count()
    book.close()
    if progress:
        print(file=progress)
    return count


def _store(book, out, student, fingerprint, results, problem):
    _atomic_write(out / "results" / f"{student}.json", json.dumps(results, indent=1))
    _atomic_write(out / "feedback" / f"{student}.md", _feedback(student, results))
    _atomic_write(out / "feedback" / f"{student}.html", html_feedback.feedback_html(student, results, problem))
    book.record(student, fingerprint, results, problem)


def _feedback(student, results):
    lines = [f"# Chapter 3 feedback for {student}", "", f"Score: {results['score']:g} / {results['max_score']:g}", ""]
    lines += [f"- {name}: {p['score']:g} / {p['max_score']:g}" for name, p in results["parts"].items()]
    failed = [t for t in results["tests"] if t["status"] == "failed" and t["visibility"] == "visible"]
    if failed:
        lines += ["", "## What to fix", ""] + [f"- **{t['name']}**: {t['output']}" for t in failed]
    hidden = sum(1 for t in results["tests"] if t["status"] == "failed" and t["visibility"] != "visible")
    if hidden:
        lines += ["", f"{hidden} hidden check(s) also failed."]
    return "\n".join(lines) + "\n"


def write_csv(book, path):
    parts = [p for p in PARTS]
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, newline="") as tmp:
        writer = csv.writer(tmp)
        writer.writerow(["student", "score", "max_score", *parts])
        for student, score, max_score, by_part in book.rows():
            writer.writerow([student, f"{score:g}", f"{max_score:g}", *(f"{by_part.get(p, 0):g}" for p in parts)])
    os.replace(tmp.name, path)


def _atomic_write(path, text):
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False) as tmp:
        tmp.write(text)
    os.replace(tmp.name, path)


def _progress(stream, done, total, started, last):
    if not stream:
        return
    elapsed = time.monotonic() - started
    eta = (elapsed / done * (total - done)) if done else 0
    width = 30
    bar = "#" * (width * done // max(total, 1))
    stream.write(f"\r[{bar:<{width}}] {done}/{total} eta {int(eta) // 60}:{int(eta) % 60:02d} {last[:30]:<30}")
    stream.flush()
