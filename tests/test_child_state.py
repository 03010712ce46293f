"""What the child resets before each operation (child.reset_global_state) and between two parts
(inside/part_reset.py), made cheaper by issue 38 item 7, still undoes or notices everything it did.

- Before each operation: a student's change to the default dtype, the grad switch or any generator
  (drawn from, or seeded again) is undone, so an operation's numbers never depend on what ran before
  it; in the sandboxed child and in-process.
- Between two parts: every kind of left-over part_reset's docstring lists is still found (a replaced
  function, a name added or removed in a watched namespace, a signal handler), and nothing else.
"""
import random
import shutil
import signal
import sys

import numpy as np
import pytest
import torch

from autograder import PROJECT_ROOT
from autograder.inside import child, part_reset, protocol
from autograder.sandbox import client
from autograder.student import Student

WATCHED_TOO = (protocol, sys.modules[child.__name__])  # as the child watches them (child.serve)

STATE_MODULE = '''
import random
import numpy as np
import torch

def spoil():
    """What a student's code may leave behind: every global switch and generator moved."""
    torch.set_default_dtype(torch.float64)
    torch.set_grad_enabled(False)
    torch.rand(7)
    torch.manual_seed(99)
    np.random.rand(5)
    random.random()
    random.gauss(0, 1)  # leaves a second normal draw waiting in Python's generator
    return "spoiled"

def writes_bytecode():
    import sys
    return not sys.dont_write_bytecode

def prepared():
    """How many namespaces the fork server kept for this child's snapshot (part_reset.prepare), and
    whether their dict versions are read here."""
    import sys
    part_reset = sys.modules["autograder.inside.part_reset"]
    return [len(part_reset._PREPARED), part_reset.VERSIONS]

def look():
    """What an operation's numbers depend on."""
    return [str(torch.get_default_dtype()), torch.is_grad_enabled(), torch.rand(4), torch.randn(3),
            np.random.rand(3), random.random(), random.gauss(0, 1)]
'''


def same(a, b):
    return len(a) == len(b) and all(torch.equal(x, y) if isinstance(x, torch.Tensor) else
                                    np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
                                    for x, y in zip(a, b, strict=True))


@pytest.mark.quick
def test_a_students_change_to_the_global_state_is_undone_in_process():
    """reset_global_state after every kind of change gives exactly the state it gives after none,
    for each seed and for a seed seen before (Python's generator restored from its kept state)."""
    namespace: dict = {}
    exec(STATE_MODULE, namespace)
    dtype, grad = torch.get_default_dtype(), torch.is_grad_enabled()
    try:
        for seed in (7, 123, 7, 2**40 + 3):
            child.reset_global_state(seed)
            clean = namespace["look"]()
            namespace["spoil"]()
            child.reset_global_state(seed)
            assert same(namespace["look"](), clean), seed
            assert clean[:2] == ["torch.float32", True]
        # the kept state is the one random.seed leaves (its pending normal draw cleared too)
        random.seed(5)
        fresh = random.getstate()
        random.gauss(0, 1)
        assert child.python_state(5) == fresh and child.python_state(5) == fresh
    finally:
        torch.set_default_dtype(dtype)
        torch.set_grad_enabled(grad)


@pytest.mark.skipif(not client.plan()["room"], reason="this machine cannot build the sandbox")
def test_a_students_change_to_the_global_state_is_undone_in_the_child(engine, tmp_path):
    """In the sandboxed child: the same operation with the same seed gives the same numbers whether
    a spoiling operation ran just before it or not, and whatever operations came first."""
    folder = tmp_path / "student"
    shutil.copytree(PROJECT_ROOT / "solutions" / "ch03", folder)
    (folder / "state.py").write_text(STATE_MODULE)
    session = engine.sandbox.session(folder)
    try:
        part = session.part(60, 2048)
        try:
            state = Student(part).module("state")
            clean = state.look(_seed=11)
            assert clean[:2] == ["torch.float32", True]
            assert state.spoil(_seed=11) == "spoiled"
            assert same(state.look(_seed=11), clean)
            other = state.look(_seed=12)
            assert not same(other, clean)  # the seed moves the draws: the comparison above can fail
            assert state.spoil(_seed=3) == "spoiled"
            assert same(state.look(_seed=11), clean) and same(state.look(_seed=12), other)
            # the room's submission folder is read-only: no compiled module is tried there (child.serve)
            assert state.writes_bytecode() is False
            # the snapshot shared the fork server's namespaces (part_reset.prepare): every watched one kept
            kept, versions = state.prepared()
            assert versions is True and kept == len(part_reset._watched(WATCHED_TOO)), (kept, versions)
        finally:
            part.close()
    finally:
        session.close()


@pytest.fixture(params=["prepared", "in_place", "no_versions"])
def snapshot_kind(request, monkeypatch):
    """How the child's snapshot of the namespaces is made: from the fork server's (prepare(), read by
    dict versions), in the child itself, or where dict versions cannot be read (compared in full)."""
    monkeypatch.setattr(part_reset, "_PREPARED", {})
    if request.param == "no_versions":
        monkeypatch.setattr(part_reset, "VERSIONS", False)
    else:
        assert part_reset.VERSIONS, "CPython 3.11's dict versions are read here: the fast path is the one tested"
    return request.param


@pytest.mark.quick
@pytest.mark.parametrize("change", ["replace", "add", "remove", "class_attribute", "child_global", "reordered"])
def test_every_change_to_a_watched_namespace_is_found(change, snapshot_kind):
    """A name of a watched namespace given another object, a name added, a name removed, a method of
    a watched class replaced, a global of the child's own module, a name removed and put back: each
    found (compared with a snapshot as the child takes it, part_reset._namespaces), none once undone.
    (The whole reset, /tmp and the processes included, is compared in a child: tests/test_child_reuse.py.)"""
    if snapshot_kind == "prepared":
        part_reset.prepare(WATCHED_TOO)
    saved = part_reset._namespaces(WATCHED_TOO)
    if snapshot_kind == "prepared":  # the fork server's entries themselves: the child copies none
        assert all(entry is part_reset._PREPARED[id(entry[0])] for entry in saved)
    assert part_reset._namespaces_as_before(saved)
    space, name = {"replace": (torch, "softmax"), "add": (np, "left_behind"), "remove": (torch.nn.functional, "relu"),
                   "class_attribute": (torch.Tensor, "softmax"), "child_global": (child, "reset_global_state"),
                   "reordered": (torch.nn.functional, "softmax")}[change]
    missing = object()
    before = space.__dict__.get(name, missing)
    try:
        if change in ("remove", "reordered"):
            delattr(space, name)
        if change == "reordered":
            setattr(space, name, before)  # the same object, now last
        elif change != "remove":
            setattr(space, name, lambda *args, **kwargs: None)
        assert not part_reset._namespaces_as_before(saved), change
    finally:
        if before is missing:
            delattr(space, name)
        else:
            if change == "reordered":
                delattr(space, name)
            setattr(space, name, before)
    if change not in ("remove", "reordered"):  # undone in place: the snapshot matches again
        assert part_reset._namespaces_as_before(saved), change
    assert part_reset._namespaces_as_before(part_reset._namespaces(WATCHED_TOO))


@pytest.mark.quick
def test_a_signal_handler_left_behind_is_a_changed_setting():
    before = part_reset._switches()
    saved = signal.getsignal(signal.SIGUSR1)
    try:
        signal.signal(signal.SIGUSR1, lambda *args: None)
        assert part_reset._switches() != before
    finally:
        signal.signal(signal.SIGUSR1, saved)
    assert part_reset._switches() == before
    assert set(part_reset.SIGNALS) == set(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP}
