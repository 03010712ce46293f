"""The codec's one walk (issue 38.7): decode checks and builds in a single pass, the grader's cleaning
of strings rides in it, encode takes plain items without a call; what it accepts and refuses is the
wire format's, and a malformed answer is a ProtocolError (never another exception in the grader)."""
import json
import os
import threading
import time
import types

import numpy as np
import pytest
import torch

from autograder import text
from autograder.inside import protocol
from autograder.sandbox import part_child
from autograder.sandbox.part_child import PartChild
from autograder.student import Student, StudentError

pytestmark = pytest.mark.quick  # the whole file is in the quick subset

ARRAY = {"__array__": 0, "kind": "torch", "dtype": "float32", "shape": [1]}


def wire(value):
    structure, buffers = protocol.encode(value)
    return json.loads(json.dumps(structure)), b"".join(buffers)


def nested(depth):
    value = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("structure, message", [
    ({"__seq__": "tuple", "items": "abc"}, "bad sequence"),  # once rebuilt as ('a', 'b', 'c')
    ({"__seq__": "list", "items": 5}, "bad sequence"),  # once a TypeError in the grader
    ({"__seq__": "tuple", "items": {"x": 1}}, "bad sequence"),  # once the keys, ('x',)
    ({"__map__": 1}, "bad dictionary"),
    ({"__map__": ["ab"]}, "bad dictionary"),  # once {'a': 'b'}
    ({"__map__": [[1, 2, 3]]}, "bad dictionary"),  # once a ValueError
    ({"__map__": [[{"__seq__": "tuple", "items": [{"__seq__": "list", "items": []}]}, 1]]}, "keys must be plain"),
    ({"__map__": [[{"__seq__": "list", "items": []}, 1]]}, "keys must be plain"),
    ({"__seq__": "list", "items": [{**ARRAY, "__array__": 1}, ARRAY]}, "indices"),  # in the order encode numbers them
])
def test_malformed_structures_are_protocol_errors(structure, message):
    with pytest.raises(protocol.ProtocolError, match=message):
        protocol.decode(structure, b"\0" * 8 if "__array__" in json.dumps(structure) else b"")


def test_the_structure_is_judged_before_the_arrays_and_the_arrays_before_the_keys():
    short = {**ARRAY, "shape": [4]}
    with pytest.raises(protocol.ProtocolError, match="unexpected object"):  # met later, raised first
        protocol.decode({"__seq__": "list", "items": [short, {"__pickle__": 1}]}, b"")
    with pytest.raises(protocol.ProtocolError, match="indices"):
        protocol.decode({"__seq__": "list", "items": [short, {**ARRAY, "__array__": 5}]}, b"")
    with pytest.raises(protocol.ProtocolError, match="shorter"):
        protocol.decode({"__map__": [[{"__seq__": "list", "items": []}, short]]}, b"")
    with pytest.raises(protocol.ProtocolError, match="longer"):
        protocol.decode({"__map__": [[{"__seq__": "list", "items": []}, ARRAY]]}, b"\0" * 8)


def test_the_depth_encode_sends_is_the_depth_decode_takes():
    structure, payload = wire(nested(protocol.MAX_DEPTH))
    assert protocol.decode(structure, payload) == nested(protocol.MAX_DEPTH)
    with pytest.raises(TypeError, match="nested too deeply"):
        protocol.encode(nested(protocol.MAX_DEPTH + 1))
    deeper = {"__seq__": "list", "items": [structure]}
    for _ in range(40):
        deeper = {"__seq__": "list", "items": [deeper]}
    with pytest.raises(protocol.ProtocolError, match="nested too deeply"):
        protocol.decode(deeper, b"")


def test_strings_are_cleaned_in_the_walk_keys_and_tuples_included():
    value = {"a\x1b[31m": ["\u202eb", ("c\x00", 2)], ("k\n", 1): "x" * 5000, "n": None, "t": torch.ones(2)}
    back = protocol.decode(*wire(value), strings=text.clean)
    assert list(back) == [text.clean("a\x1b[31m"), (text.clean("k\n"), 1), "n", "t"]
    assert back[text.clean("a\x1b[31m")] == [text.clean("\u202eb"), (text.clean("c\x00"), 2)]
    assert back[(text.clean("k\n"), 1)] == text.clean("x" * 4000)  # cut by encode, then by clean
    assert back["n"] is None and torch.equal(back["t"], torch.ones(2))
    assert protocol.decode(*wire(value))[("k\n", 1)] == "x" * 4000  # without a cleaner, as sent


@pytest.mark.parametrize("tensor", [
    torch.arange(6.0).reshape(2, 3).t(),  # not contiguous
    torch.tensor(2.5),  # no dimensions
    torch.ones(2, 2, requires_grad=True),
    torch.arange(4.0).to(torch.bfloat16),
    torch.tensor([1.0, -2.0]).neg(),
    torch.nn.Parameter(torch.ones(3)),
], ids=["transposed", "0-dim", "requires-grad", "bfloat16", "negative-view", "parameter"])
def test_every_tensor_arrives_with_its_values(tensor):
    back = protocol.decode(*wire(tensor))
    assert type(back) is torch.Tensor and back.shape == tensor.shape
    assert torch.equal(back, tensor.detach().float() if tensor.dtype == torch.bfloat16 else tensor.detach())


def test_a_header_the_json_parser_refuses_otherwise_is_a_protocol_error():
    r, w = os.pipe()
    try:
        head = b'{"result": ' + b"1" * 5000 + b"}"  # past Python's 4300 digits: a ValueError of its own
        os.write(w, protocol.HEAD.pack(len(head), 0) + head)
        with pytest.raises(protocol.ProtocolError, match="not JSON"):
            protocol.receive(r)
    finally:
        os.close(r)
        os.close(w)


class Clocked:
    """A part's session that counts how often its CPU time is read, and answers every call with `reply`."""

    timeout = 10.0

    def __init__(self, reply):
        self.reads, self.reply = 0, reply

    def spent(self):
        self.reads += 1
        return 0.0

    def call(self, header, buffers=(), limit=None):
        return self.reply, b""


def test_a_malformed_answer_is_the_students_error_not_the_graders():
    student = Student(Clocked({"result": {"__seq__": "list", "items": 5}}))
    with pytest.raises(StudentError) as raised:
        student.module("causal").f()
    assert raised.value.kind == "ProtocolError"
    assert raised.value.message == "the answer could not be read back (bad sequence)"


def test_an_exchange_reads_the_childs_clock_only_for_a_call_limit_of_its_own():
    session = Clocked({"result": {"__map__": [["name\x1b", "v\u202e"]]}})
    student = Student(session)
    assert student.module("causal").f() == {text.clean("name\x1b"): text.clean("v\u202e")}
    assert session.reads == 0
    student.call_limit = 1.0
    student.module("causal").f()
    assert session.reads >= 2  # before and after: the call's own limit (Student._left)


def test_arrays_of_other_families_and_orders_still_travel():
    value = [np.arange(3, dtype=">i4"), np.ones((2, 0), np.float16), np.bool_(True), np.float32(0.5)]
    back = protocol.decode(*wire(value))
    assert back[0].dtype == np.int32 and back[0].tolist() == [0, 1, 2]
    assert back[1].shape == (2, 0) and back[2] is True and back[3] == 0.5


def test_a_peer_that_stops_reading_meets_the_deadline_whatever_the_frame():
    """The grader's ends are non-blocking (PartChild): a frame larger than what the pipe can still take
    waits for the reader only until the deadline; a blocking write would wait for it for ever."""
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        while True:  # the reader reads nothing: fill the pipe
            try:
                os.write(w, b"\0" * 4096)
            except BlockingIOError:
                break
        outcome = []

        def write():
            try:
                protocol.send(w, {"n": 1}, [b"\0" * 200_000], deadline=time.monotonic() + 0.2, nonblocking=True)
            except protocol.Deadline:
                outcome.append("deadline")

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        writer.join(600)  # a bound on a hang only: the deadline above ends it
        assert outcome == ["deadline"]
    finally:
        os.close(r)
        os.close(w)


def test_non_blocking_ends_read_whole_frames_and_wait_without_a_deadline():
    r, w = os.pipe()
    os.set_blocking(r, False)
    try:
        with pytest.raises(protocol.Deadline):
            protocol.receive(r, deadline=time.monotonic(), nonblocking=True)  # nothing there, no time left
        writer = threading.Thread(target=protocol.send, args=(w, {"n": 2}, [b"\1" * 300_000]))
        writer.start()  # more than the pipe holds: the reader waits for the rest (select), never spins on EAGAIN
        assert protocol.receive(r, nonblocking=True) == ({"n": 2}, b"\1" * 300_000)
        writer.join()
    finally:
        os.close(r)
        os.close(w)


@pytest.mark.parametrize("raw", [b'{"a":1}', b"{", b'{\x00"\x00}\x00', b'\xef\xbb\xbf{"a":2}', b'{"a":"\xed\xa0\x80"}',
                                 b'{"a":"\xff"}', b'{"a": NaN}', b"[1]", b'{"a": "\\ud800"}', b"{}  x"])
def test_a_header_is_read_as_json_loads_reads_it(raw):
    """protocol._json_object skips json.loads's look at the encoding only where it would find UTF-8."""
    def read(parse):
        try:
            return parse(raw)
        except ValueError as e:
            return f"{type(e).__name__}: {e}"
    assert read(protocol._json_object) == read(json.loads)


def _waiting_part(replies_r, kept_waiting=False):
    """What PartChild._await_reply reads of its child: the reply pipe, its clocks (none used up)."""
    return types.SimpleNamespace(saw_hidden=False, measuring=None, replies_r=replies_r, TICK=PartChild.TICK,
                                 WALL_SLACK=PartChild.WALL_SLACK,
                                 spent=lambda: 0.0, _kept_waiting=lambda now: kept_waiting, cpu_out=False, idle_out=False)


def test_a_reply_is_awaited_with_one_select_and_taken_whatever_the_clock(monkeypatch):
    r, w = os.pipe()
    calls = []
    real_select = part_child.select.select

    def counted(*args):
        calls.append(args[3])
        return real_select(*args)

    monkeypatch.setattr(part_child.select, "select", counted)
    try:
        with pytest.raises(protocol.Deadline):  # nothing there, the wall clock out, the child not kept waiting
            PartChild._await_reply(_waiting_part(r), 10.0, time.monotonic() - 1)
        os.write(w, b"x")
        calls.clear()
        soon = time.monotonic() + 600
        assert PartChild._await_reply(_waiting_part(r), 10.0, soon) == soon
        assert len(calls) == 1  # no poll before the wait: the wait itself ends at once
        late = time.monotonic() - 1  # the reply is there past the wall clock: taken, as ever
        assert PartChild._await_reply(_waiting_part(r), 10.0, late) == late
    finally:
        os.close(r)
        os.close(w)
