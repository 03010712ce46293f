"""A batch's workers share one fork server (torch imported once in the room), each through a door
of its own (client.Sandbox.attach): its own uid block and, where control groups exist, its own
group for its sessions' memory and processes. A server that dies is replaced by the door that
needs it next.
"""
import csv
import json
import os
import re
import shutil
import signal
from pathlib import Path

import pytest
from rubric_points import TOTAL, g

from autograder import batch
from autograder.sandbox import client
from autograder.sandbox.client import Sandbox
from autograder.student import Student

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions" / "ch03"
PROBE = Path(__file__).resolve().parent / "isolation_probe.py"

if not client.plan()["room"]:
    pytest.skip(f"this machine cannot build the sandbox: {client.plan()['why']}", allow_module_level=True)


def _submission(tmp_path, name):
    folder = tmp_path / name
    shutil.copytree(SOLUTIONS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(PROBE, folder / "probe.py")
    return folder


def _identity(door, folder, key, memory_mb=2048):
    """(probe.identity() from a part child of a new session on door, the control groups of the
    session's leader as /proc shows them here while the part runs)."""
    session = door.session(folder, key)
    part = session.part(60, memory_mb)
    try:
        identity = Student(part).module("probe").identity()
        with open(f"/proc/{client._host_pid(session.leader_pidfd)}/cgroup") as f:
            return identity, f.read()
    finally:
        part.close()
        session.close()


# not quick: a batch grading three students; the quick subset opens a door on a shared server
# (test_doors_share_the_server_not_uids_or_groups; issue 38 item 6)
def test_a_batch_starts_one_fork_server_for_all_its_workers(tmp_path, monkeypatch):
    """Three students, two workers: one fork server is started (by the batch, none by a worker),
    every student gets full marks and a uid of their own."""
    started = tmp_path / "started"
    start = Sandbox._start

    def recording(self):
        with open(started, "a") as f:
            f.write(f"{os.getpid()}\n")
        return start(self)

    monkeypatch.setattr(Sandbox, "_start", recording)  # the workers are forked: they inherit it
    classroom = tmp_path / "class"
    for name in ("ann", "ben", "cat"):
        shutil.copytree(SOLUTIONS, classroom / name, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "out"
    assert batch.run_batch(classroom, out, jobs=2, progress=None) == 3
    assert started.read_text().split() == [str(os.getpid())], "a worker started a fork server of its own"
    with open(out / "grades.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    students = ("ann", "ben", "cat")
    assert [(r["student"], r["score"], r["max_score"]) for r in rows] == [(n, g(TOTAL), g(TOTAL)) for n in students]
    uids = set()
    for name in ("ann", "ben", "cat"):
        protections = json.loads((out / "results" / f"{name}.json").read_text())["extra_data"]["protections"]
        uids |= {m.group(1) for p in protections if (m := re.match(r"uid (\d+) \(this submission's own\)", p))}
    assert len(uids) == 3, uids


@pytest.mark.quick
def test_doors_share_the_server_not_uids_or_groups(tmp_path):
    """An attached door reaches the same server; its sessions run under uids of its own block and,
    with control groups, join its own group (the owner's sessions join the owner's), capped at the
    part's memory."""
    folder = _submission(tmp_path, "student")
    with Sandbox(slot=5) as owner:
        door = owner.attach(6)
        try:
            mine, mine_groups = _identity(owner, folder, "first")
            theirs, their_groups = _identity(door, folder, "second", memory_mb=300)
            assert door.process.pid == owner.process.pid
            assert mine["uid"] // client.UIDS_PER_SLOT + 1 == theirs["uid"] // client.UIDS_PER_SLOT, (mine, theirs)
            if owner.group is None:
                pytest.skip("no control groups here (not root, or none handed down): uids checked only")
            assert os.path.basename(owner.session_group.folders[0]) in mine_groups
            assert os.path.basename(door.session_group.folders[0]) in their_groups
            caps = [Path(f, name) for f in door.session_group.folders
                    for name in ("memory.max", "memory.limit_in_bytes")]
            assert [int(p.read_text()) for p in caps if p.exists()] == [300 << 20]
        finally:
            door.close()
        assert owner.alive(), "closing an attached door ended the shared server"


def test_a_door_whose_server_died_starts_its_own(tmp_path):
    """The shared server is killed (the OOM killer, say): the next session on an attached door
    starts a server of its own and grades as before; the owner's door does the same."""
    folder = _submission(tmp_path, "student")
    with Sandbox(slot=8) as owner:
        door = owner.attach(9)
        try:
            door.ready()
            dead = owner.process.pid
            os.killpg(dead, signal.SIGKILL)
            owner.process.wait(timeout=30)
            identity, _ = _identity(door, folder, "after")
            assert door.owner and door.process.pid != dead
            assert identity["uid"] // client.UIDS_PER_SLOT == 9 + client._first_uid() // client.UIDS_PER_SLOT
            again, _ = _identity(owner, folder, "owner-after")
            assert owner.process.pid not in (dead, door.process.pid) and again["uid"] != identity["uid"]
        finally:
            door.close()
