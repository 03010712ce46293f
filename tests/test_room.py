"""The room's command line (no sandbox is started): a Python installation under the host's /tmp
(a checkout or virtual environment there) is shown at another path, because every layer of the
sandbox covers /tmp with an empty tmpfs; the fork server's import paths follow it."""
import pytest

from autograder.sandbox import room

pytestmark = pytest.mark.quick  # the whole file is in the quick subset


def binds(args):
    return {args[i + 1]: args[i + 2] for i, a in enumerate(args) if a == "--ro-bind"}


def test_python_under_tmp_is_bound_outside_tmp(monkeypatch):
    if room.bwrap_binary() is None:
        pytest.skip("no bwrap on this machine: the room's command cannot be built")
    venv = "/tmp/course/.venv/lib/python3.11/site-packages"
    monkeypatch.setattr(room, "python_folders", lambda: ["/usr/lib/python3.11", venv])
    args = room.command(["-c", "pass"], user_namespace=False)
    shown = binds(args)
    assert shown[venv] == room.HOST_TMP + venv
    assert shown["/usr/lib/python3.11"] == "/usr/lib/python3.11"
    assert not any(target.startswith("/tmp/") for target in shown.values()), shown
    assert ("--tmpfs", "/tmp") in zip(args, args[1:], strict=False)  # the empty /tmp is still there


def test_import_paths_follow_the_room(monkeypatch, tmp_path):
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.setattr(room, "python_folders", lambda: [str(site)])
    monkeypatch.syspath_prepend(str(site))
    real = str(site.resolve())
    assert room.inside(real) in room.import_paths()
    assert real in room.import_paths(in_room=False)
    assert (room.inside(real) == real) == (not real.startswith("/tmp/"))
