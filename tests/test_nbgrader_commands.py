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

generate_assignment, release_assignment and the student's commands run once per session, as the README and
docs/notebooks.md write them, in the fresh copy of the project that tests/nbgrader_release.py makes
(tests/conftest.py's `nbgrader_release` and `nbgrader_exchange`, shared with the round trip, which collects
that student's submission, and with validate: issue 38 item 6); the tests here assert what they did.
"""
import sqlite3

from nbgrader_release import COURSE_ID
from optional import require

from autograder import PROJECT_ROOT

require("nbgrader", reason="nbgrader is not installed (pip install '.[notebooks]', nbgrader==0.9.6)")


def test_generate_assignment_as_written(nbgrader_release):
    root = nbgrader_release.course  # `.venv/bin/nbgrader generate_assignment ch03 --force` ran there, not activated
    assert (root / ".venv").is_symlink() and (root / "nbgrader_config.py").is_file()
    assert "[GenerateAssignmentApp | INFO]" in nbgrader_release.output, nbgrader_release.output[-3000:]
    released = sorted(p.name for p in (root / "release" / "ch03").iterdir())
    assert released == sorted(p.name for p in (root / "source" / "ch03").iterdir())
    db = sqlite3.connect(f"file:{root / 'gradebook.db'}?mode=ro", uri=True)  # read only: other files copy it
    try:
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() != []  # migrations recorded
        assert db.execute("SELECT name FROM assignment").fetchall() == [("ch03",)]
    finally:
        db.close()


def test_the_exchange_as_documented(nbgrader_exchange):
    """`.venv/bin/nbgrader release_assignment ch03` fills the exchange's outbound folder; the students'
    commands exactly as docs/notebooks.md and the README give them (run by nbgrader_release.documented_exchange
    in a folder of their own with no nbgrader configuration; the one change: the machine's exchange is
    that one) list the assignment, fetch it and submit it."""
    ran = nbgrader_exchange
    released = sorted(p.name for p in (ran.course / "release" / "ch03").iterdir())
    assert sorted(p.name for p in (ran.root / COURSE_ID / "outbound" / "ch03").iterdir()) == released
    commands = ran.commands
    assert [c.split()[1] for c in commands] == ["list", "fetch_assignment", "submit"]
    readme = " ".join((PROJECT_ROOT / "README.md").read_text().split())
    assert all(c in readme for c in commands[1:]), "the README's student commands are the docs' commands"
    assert f"{COURSE_ID} ch03" in ran.listed
    assert sorted(p.name for p in (ran.home / "ch03").iterdir()) == released
    assert len(list((ran.root / COURSE_ID / "inbound").iterdir())) == 1
