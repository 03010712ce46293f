"""A fork server that cannot start where the grader runs (the GPU image of 2026-11-28).

There, Python 3.12 with torch 2.11.0+cu130: the fork server's warm-up imports torch._dynamo, whose
import asks getpass.getuser() for inductor's cache folder; the room has no /etc/passwd, so the
import failed, the server died before its first word, and every part of every submission (the
reference's too) came back "not graded: the machine was overloaded", 30 s each. Two roots, two
tests: the room names a user to whoever asks, and a server that dies of an exception of its own
before it is ready makes the run refuse at once, in that exception's words (a server killed from
outside is still replaced: tests/test_machine_deaths.py).
"""
import subprocess

import pytest

from autograder import chapter, cli
from autograder.sandbox import client, room


@pytest.mark.quick
def test_the_room_names_a_user_to_whoever_asks():
    """getpass.getuser() in the room, as the fork server runs (its command line and environment):
    'sandbox', from USER/LOGNAME, where it raised KeyError (no passwd entry for the uid)."""
    plan = client.plan()
    if not plan["room"]:
        pytest.skip(f"no room on this machine: {plan['why']}")
    paths = [room.INSIDE] + room.import_paths(in_room=True)
    code = f"import sys; sys.path[:0] = {paths!r}; import getpass, os; print(getpass.getuser(), os.getuid())"
    command = room.command(["-I", "-S", "-c", code], plan["user_namespace"], "cpu")
    done = subprocess.run(command, env=client.scrubbed_environment(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    name, _uid = done.stdout.split()
    assert name == room.USER_NAME == "sandbox"
    assert client.scrubbed_environment()["USER"] == "sandbox"  # outside the room too (container mode)


@pytest.mark.parametrize("dead_before_asked", [False, True])
def test_a_fork_server_that_fails_at_its_start_makes_grade_refuse_in_its_own_words(monkeypatch, capsys,
                                                                                  dead_before_asked):
    """Every fork server raises before its first word (here: its boot line raises, as the failed
    import did): `grade` exits 2 after SERVER_STARTS tries with one error line that quotes the
    exception; no score table, no 'overloaded', no traceback of the grader's. The same count whether
    the first server is still starting when the engine first asks or has died already (the engine
    loads the rubric meanwhile; dead_before_asked waits for its end first: .ci/run at b16afca counted
    a fourth start there)."""
    from autograder.engine import Engine
    plan = client.plan()
    if not plan["room"]:
        pytest.skip(f"no room on this machine: {plan['why']}")
    monkeypatch.setattr(client, "BOOT", "raise RuntimeError('a package the warm-up imports is broken here')")
    starts = []
    start = client.Sandbox._start

    def counted(self):
        starts.append(self)
        return start(self)

    monkeypatch.setattr(client.Sandbox, "_start", counted)
    if dead_before_asked:
        load = Engine.load_rubric

        def load_after_its_end(self):
            self.sandbox.process.wait()  # the first server's end, whatever the machine's speed
            return load(self)

        monkeypatch.setattr(Engine, "load_rubric", load_after_its_end)
    status = cli.main(["grade", str(chapter.current().solutions)])
    said = capsys.readouterr()
    assert status == 2
    assert said.err.strip().splitlines() == [
        f"error: the sandbox's fork server fails at its start here, before any student code runs "
        f"({client.SERVER_STARTS} tries): RuntimeError: a package the warm-up imports is broken here. "
        f"CH03_SANDBOX_DEBUG=1 shows all it wrote"], said.err
    assert len(starts) == client.SERVER_STARTS
    assert "total" not in said.out and "overloaded" not in said.out + said.err


def test_a_fork_server_closed_before_its_first_word_leaves_no_file_open():
    """The memfd that holds a starting server's stderr is closed with the door, also when nobody read its
    first word (an engine whose rubric failed to load closes its sandbox before serving())."""
    import os

    plan = client.plan()
    if not plan["room"]:
        pytest.skip(f"no room on this machine: {plan['why']}")
    sandbox = client.Sandbox(slot=7)
    fd = sandbox._stderr
    assert fd is not None and os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:fork-server-stderr")
    sandbox.close()
    assert sandbox._stderr is None
    assert not os.path.exists(f"/proc/self/fd/{fd}") or \
        not os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:fork-server-stderr")
