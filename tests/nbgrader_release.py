"""The chapter's release as `nbgrader generate_assignment ch03` makes it, made once per session (issue 38
item 6): tests/test_nbgrader_roundtrip.py and tests/test_nbgrader_validate.py each ran it in a course of
their own (about 13 s idle each, nbgrader's start-up and its preprocessors). tests/conftest.py's
`nbgrader_release` runs it once; each reader copies the course (source/ch03, release/ch03, gradebook.db)
into a folder of its own with `copy_course`, so what one file does to its course never reaches the other's.
tests/xdist_groups.py keeps the two files on one worker, so the release is made once under `pytest -n 2`.
(tests/test_nbgrader_commands.py runs generate_assignment itself: the command as the README writes it is
what it tests.)
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "source" / "ch03"


@dataclass(frozen=True)
class Release:
    course: Path  # the course folder: source/ch03, release/ch03 and gradebook.db, as generate_assignment left them
    output: str  # what generate_assignment printed (stdout and stderr, interleaved)


def make_release(base: Path) -> Release:
    """A temporary course with source/ch03 copied from the project, and `nbgrader generate_assignment ch03
    --force` run in it from the project root (the project's nbgrader_config.py), with no user-level
    Jupyter or nbgrader configuration."""
    course = base / "course"
    shutil.copytree(SOURCE, course / "source" / "ch03")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])  # nbgrader runs alembic
    for name in ("CONFIG", "DATA", "RUNTIME"):
        folder = base / f"jupyter-{name.lower()}"
        folder.mkdir(exist_ok=True)
        env[f"JUPYTER_{name}_DIR"] = str(folder)
    done = subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", "ch03", "--force",
                           f"--CourseDirectory.root={course}"], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert done.returncode == 0, f"nbgrader generate_assignment failed:\n{done.stdout[-6000:]}"
    return Release(course, done.stdout)


def copy_course(release: Release, destination: Path) -> Path:
    """A copy of the released course at destination (which must not exist), for one reader to use."""
    shutil.copytree(release.course, destination)
    return destination
