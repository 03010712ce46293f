"""The chapter's release as `nbgrader generate_assignment ch03` makes it, made once per session (issue 38
item 6), the way the README writes the command: `.venv/bin/nbgrader generate_assignment ch03 --force` in a
fresh copy of the project (its `git ls-files`, the environment beside it as .venv), with the environment not
activated (its bin folder not on PATH: nbgrader_config.py must put the interpreter's folder there for
nbgrader's `alembic`) and no user-level Jupyter or nbgrader configuration.

tests/test_nbgrader_roundtrip.py, tests/test_nbgrader_validate.py and tests/test_nbgrader_commands.py each ran
generate_assignment in a course of their own (about 10 to 13 s idle each, nbgrader's start-up and its
preprocessors). tests/conftest.py's `nbgrader_release` runs it once; test_nbgrader_commands asserts what
the command made (the README's command is what it tests), and each reader copies the course (source/ch03,
release/ch03, gradebook.db) into a folder of its own with `copy_course` (or the whole project copy with
`copy_clone`), so what one file does to its course never reaches another's. tests/xdist_groups.py keeps the
three files on one worker, so the release is made once under `pytest -n N`.

Likewise the exchange (`documented_exchange`, tests/conftest.py's `nbgrader_exchange`): release_assignment and
a student's list, fetch_assignment and submit as docs/notebooks.md gives them, run once per session;
test_nbgrader_commands asserts what they did, and the round trip collects that student's submission (they
ran each in a course of their own before, the round trip with a student's commands of its own).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = Path(sys.executable).parent.parent


@dataclass(frozen=True)
class Release:
    course: Path  # the project copy: source/ch03, release/ch03 and gradebook.db as generate_assignment left them
    output: str  # what generate_assignment printed (stdout and stderr, interleaved)


def clone_project(destination: Path) -> Path:
    """The project's files as a clone has them (git ls-files), with the environment beside them as .venv."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    (destination / ".venv").symlink_to(VENV)
    return destination


def not_activated(base: Path) -> dict[str, str]:
    """The environment of a shell where .venv is not activated: its bin folder not on PATH, no
    VIRTUAL_ENV or PYTHON* variables, Jupyter's own folders in base (no user-level configuration)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("VIRTUAL_ENV", "PYTHON"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and Path(p).resolve() != (VENV / "bin").resolve()) or "/usr/bin:/bin"
    for name in ("CONFIG", "DATA", "RUNTIME"):
        folder = base / f"jupyter-{name.lower()}"
        folder.mkdir(exist_ok=True)
        env[f"JUPYTER_{name}_DIR"] = str(folder)
    assert shutil.which("alembic", path=env["PATH"]) is None, "alembic is on PATH: the test would prove nothing"
    return env


def make_release(base: Path) -> Release:
    """A fresh copy of the project at base/clone, and the README's `.venv/bin/nbgrader generate_assignment
    ch03 --force` run in it (its nbgrader_config.py, the course root the project copy) with the
    environment not activated."""
    clone = clone_project(base / "clone")
    done = subprocess.run([".venv/bin/nbgrader", "generate_assignment", "ch03", "--force"], cwd=clone,
                          env=dict(not_activated(base), PYTHONUNBUFFERED="1"),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert done.returncode == 0, f"nbgrader generate_assignment failed:\n{done.stdout[-6000:]}"
    return Release(clone, done.stdout)


def copy_course(release: Release, destination: Path) -> Path:
    """A course at destination (which must not exist) holding a copy of the release's source/ch03,
    release/ch03 and gradebook.db, for one reader to use."""
    for folder in ("source", "release"):
        shutil.copytree(release.course / folder / "ch03", destination / folder / "ch03")
    shutil.copy2(release.course / "gradebook.db", destination / "gradebook.db")
    return destination


def copy_clone(release: Release, destination: Path) -> Path:
    """A copy of the whole project copy the release was made in (its .venv link kept), for one reader."""
    shutil.copytree(release.course, destination, symlinks=True)
    return destination


# --- the exchange as docs/notebooks.md sets it up, and a student's commands as it gives them ------------

COURSE_ID = "ch03-attention"
DOCUMENTED_EXCHANGE = "/srv/nbgrader/exchange"


def student_commands() -> list[str]:
    """The `nbgrader ...` lines of docs/notebooks.md's students' block, comments dropped. Each names
    the exchange: a student's nbgrader never reads the course folder's nbgrader_config.py."""
    text = (ROOT / "docs" / "notebooks.md").read_text()
    block = text.split("from the\nfolder they want to work in:\n\n```bash\n", 1)[1].split("```", 1)[0]
    commands = [" ".join(line.split("#")[0].split()) for line in block.splitlines() if line.startswith("nbgrader ")]
    assert commands and all(f"--Exchange.root={DOCUMENTED_EXCHANGE}" in c for c in commands), commands
    return commands


def nbgrader(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """The environment's nbgrader as the README runs it (.venv/bin/nbgrader where cwd has .venv); it must succeed."""
    program = ".venv/bin/nbgrader" if (Path(cwd) / ".venv").exists() else str(VENV / "bin" / "nbgrader")
    done = subprocess.run([program, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"nbgrader {' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@dataclass(frozen=True)
class Exchange:
    course: Path  # the project copy (a copy of the release's) that released the assignment
    root: Path  # the exchange folder, in place of DOCUMENTED_EXCHANGE
    home: Path  # the folder the student ran their commands in; ch03/ is what they fetched and solved
    commands: list[str]  # the students' commands as docs/notebooks.md gives them
    listed: str  # what their `nbgrader list` printed (stdout and stderr)
    student: str  # the student id of the one entry their `nbgrader submit` put in the inbound folder


def documented_exchange(release: Release, base: Path, solve) -> Exchange:
    """The exchange as docs/notebooks.md sets it up (a folder every user may write) in base, the README's
    `.venv/bin/nbgrader release_assignment ch03` run in a copy of the release's project copy (not
    activated, the exchange named on the command line), then a student's `nbgrader list`,
    `nbgrader fetch_assignment ch03 ...` and `nbgrader submit ch03 ...` exactly as docs/notebooks.md gives
    them (the one change: the machine's exchange is this one), run in a folder of their own with no nbgrader
    configuration; between fetch and submit, solve(folder) writes their answers into the fetched notebooks."""
    course = copy_clone(release, base / "clone")
    env = not_activated(base)
    exchange = base / "exchange"
    exchange.mkdir(mode=0o777)
    exchange.chmod(0o777)  # docs/notebooks.md: `sudo install -d -m 0777 /srv/nbgrader/exchange`
    nbgrader(env, course, "release_assignment", "ch03", f"--Exchange.root={exchange}")
    home = base / "student"
    home.mkdir()
    commands = student_commands()
    run = [c.replace(DOCUMENTED_EXCHANGE, str(exchange)).split()[1:] for c in commands]
    assert [args[0] for args in run] == ["list", "fetch_assignment", "submit"], commands
    listed = nbgrader(env, home, *run[0])
    nbgrader(env, home, *run[1])
    for path in (home / "ch03").iterdir():
        path.chmod(0o644)
    solve(home / "ch03")
    nbgrader(env, home, *run[2])
    entries = [p.name for p in (exchange / COURSE_ID / "inbound").iterdir()]
    student = entries[0].split("+", 1)[0] if len(entries) == 1 else ""
    return Exchange(course, exchange, home, commands, listed.stdout + listed.stderr, student)
