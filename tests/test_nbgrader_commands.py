"""Issue 11 item 11: the README's nbgrader commands work exactly as written, in a fresh copy of the
project, with the environment not activated (its bin folder not on PATH).

- `.venv/bin/nbgrader generate_assignment ch03 --force` makes release/ch03 and a whole gradebook.db
  (nbgrader runs `alembic` from PATH: nbgrader_config.py puts the interpreter's folder there);
- the exchange as docs/notebooks.md sets it up (a folder every user may write) takes
  `nbgrader release_assignment ch03`, and a student's `nbgrader list`, `nbgrader fetch_assignment ch03
  --course=ch03-attention` and `nbgrader submit ch03 --course=ch03-attention` work against it.

The students' commands are read from docs/notebooks.md (and found again in the README); each
names the exchange, since a student's nbgrader reads no course configuration. The exchange here
is a temporary folder put in place of the documented one (/srv/nbgrader/exchange is the machine's own).
"""
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import PROJECT_ROOT

pytest.importorskip("nbgrader", reason="nbgrader is not installed (pip install '.[notebooks]', nbgrader==0.9.6)")
VENV = Path(sys.executable).parent.parent
COURSE_ID = "ch03-attention"


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """The project's files as a clone has them (git ls-files), with the environment beside them as .venv."""
    base = tmp_path_factory.mktemp("fresh")
    clone = base / "clone"
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=PROJECT_ROOT, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = PROJECT_ROOT / name
        if source.is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, clone / name)
    (clone / ".venv").symlink_to(VENV)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("VIRTUAL_ENV", "PYTHON"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and Path(p).resolve() != (VENV / "bin").resolve()) or "/usr/bin:/bin"
    for name in ("CONFIG", "DATA", "RUNTIME"):  # no user-level Jupyter or nbgrader config leaks in
        (base / f"jupyter-{name.lower()}").mkdir()
        env[f"JUPYTER_{name}_DIR"] = str(base / f"jupyter-{name.lower()}")
    assert shutil.which("alembic", path=env["PATH"]) is None, "alembic is on PATH: the test would prove nothing"
    return base, clone, env


def nbgrader(env, cwd, *args):
    done = subprocess.run([".venv/bin/nbgrader" if (Path(cwd) / ".venv").exists() else str(VENV / "bin" / "nbgrader"),
                           *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"nbgrader {' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def test_generate_assignment_as_written(clone):
    base, root, env = clone
    nbgrader(env, root, "generate_assignment", "ch03", "--force")
    released = sorted(p.name for p in (root / "release" / "ch03").iterdir())
    assert released == sorted(p.name for p in (root / "source" / "ch03").iterdir())
    db = sqlite3.connect(root / "gradebook.db")
    try:
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() != []  # migrations recorded
        assert db.execute("SELECT name FROM assignment").fetchall() == [("ch03",)]
    finally:
        db.close()


def test_the_exchange_as_documented(clone):
    base, root, env = clone
    if not (root / "release" / "ch03").is_dir():
        nbgrader(env, root, "generate_assignment", "ch03", "--force")
    exchange = base / "exchange"
    exchange.mkdir(mode=0o777)
    exchange.chmod(0o777)  # docs/notebooks.md: `sudo install -d -m 0777 /srv/nbgrader/exchange`
    where = f"--Exchange.root={exchange}"
    nbgrader(env, root, "release_assignment", "ch03", where)
    assert sorted(p.name for p in (exchange / COURSE_ID / "outbound" / "ch03").iterdir()) == sorted(
        p.name for p in (root / "release" / "ch03").iterdir())
    student = base / "student"
    student.mkdir()
    # the students' commands exactly as docs/notebooks.md and the README give them, in a folder of
    # their own with no nbgrader configuration; the one change: the machine's exchange is this test's
    commands = student_commands()
    assert [c.split()[1] for c in commands] == ["list", "fetch_assignment", "submit"]
    readme = " ".join((PROJECT_ROOT / "README.md").read_text().split())
    assert all(c in readme for c in commands[1:]), "the README's student commands are the docs' commands"
    run = [c.replace(DOCUMENTED_EXCHANGE, str(exchange)).split()[1:] for c in commands]
    listed = nbgrader(env, student, *run[0])
    assert f"{COURSE_ID} ch03" in listed.stdout + listed.stderr
    nbgrader(env, student, *run[1])
    fetched = sorted(p.name for p in (student / "ch03").iterdir())
    assert fetched == sorted(p.name for p in (root / "release" / "ch03").iterdir())
    nbgrader(env, student, *run[2])
    assert len(list((exchange / COURSE_ID / "inbound").iterdir())) == 1


DOCUMENTED_EXCHANGE = "/srv/nbgrader/exchange"


def student_commands():
    """The `nbgrader ...` lines of docs/notebooks.md's students' block, comments dropped. Each names
    the exchange: a student's nbgrader never reads the course folder's nbgrader_config.py."""
    text = (PROJECT_ROOT / "docs" / "notebooks.md").read_text()
    block = text.split("from the\nfolder they want to work in:\n\n```bash\n", 1)[1].split("```", 1)[0]
    commands = [" ".join(line.split("#")[0].split()) for line in block.splitlines() if line.startswith("nbgrader ")]
    assert commands and all(f"--Exchange.root={DOCUMENTED_EXCHANGE}" in c for c in commands), commands
    return commands
