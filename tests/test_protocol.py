"""The wire format: what comes back from a child is rebuilt as plain data or refused."""
import json
import os
import threading
import time

import numpy as np
import pytest
import torch

from autograder.inside import protocol

pytestmark = pytest.mark.quick  # the whole file is in the quick subset


def roundtrip(value):
    structure, buffers = protocol.encode(value)
    return protocol.decode(json.loads(json.dumps(structure)), b"".join(buffers))


def test_tensors_arrays_and_containers_survive_the_trip():
    value = {"t": torch.arange(6, dtype=torch.float64).reshape(2, 3), "a": np.ones((2, 2), np.float32),
             "n": [1, 2.5, None, True, "x"], "pair": (torch.tensor(3), float("inf")), 7: torch.zeros(0)}
    back = roundtrip(value)
    assert torch.equal(back["t"], value["t"]) and back["t"].dtype == torch.float64
    assert isinstance(back["a"], np.ndarray) and back["a"].dtype == np.float32
    assert back["n"] == [1, 2.5, None, True, "x"]
    assert isinstance(back["pair"], tuple) and back["pair"][0].item() == 3 and back["pair"][1] == float("inf")
    assert back[7].shape == (0,)


def test_a_tensor_subclass_comes_back_as_a_plain_tensor():
    class Liar(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return True  # claims every comparison succeeds

    lying = torch.ones(3).as_subclass(Liar)
    back = roundtrip(lying)
    assert type(back) is torch.Tensor and torch.equal(back, torch.ones(3))


def test_objects_that_are_not_data_are_refused_without_a_fallback():
    with pytest.raises(TypeError, match="cannot send a object"):
        protocol.encode(object())


@pytest.mark.parametrize("spec, payload, message", [
    ({"__array__": 0, "kind": "torch", "dtype": "object", "shape": [1]}, b"x" * 8, "bad array entry"),
    ({"__array__": 0, "kind": "torch", "dtype": "float32", "shape": [4]}, b"\0" * 8, "shorter"),
    ({"__array__": 0, "kind": "torch", "dtype": "float32", "shape": [1]}, b"\0" * 8, "longer"),
    ({"__array__": 0, "kind": "torch", "dtype": "float32", "shape": [-1]}, b"", "bad array shape"),
    ({"__array__": 1, "kind": "torch", "dtype": "float32", "shape": [1]}, b"\0" * 4, "indices"),
    ({"__pickle__": "gASV"}, b"", "unexpected object"),
])
def test_malformed_answers_are_refused(spec, payload, message):
    with pytest.raises(protocol.ProtocolError, match=message):
        protocol.decode(spec, payload)


def test_frames_over_a_pipe_and_the_deadline():
    r, w = os.pipe()
    try:
        protocol.send(w, {"hello": 1}, [b"abc"])
        assert protocol.receive(r) == ({"hello": 1}, b"abc")
        with pytest.raises(protocol.Deadline):
            protocol.receive(r, deadline=0)  # nothing to read and no time left
        os.write(w, protocol.HEAD.pack(protocol.MAX_HEADER + 1, 0))
        with pytest.raises(protocol.ProtocolError, match="too large"):
            protocol.receive(r)
    finally:
        os.close(r)
        os.close(w)


def test_subclasses_of_plain_types_travel_as_the_plain_types():
    """A student's str/int/float subclass cannot bring its own methods into the grader."""
    class Sly(str):
        def __getitem__(self, item):
            return "forged"

        def __str__(self):
            return "forged"

    class Big(int):
        def __repr__(self):
            return "forged"

    class Wide(float):
        pass

    structure, _ = protocol.encode({"s": Sly("plain"), "i": Big(7), "f": Wide(0.5), "n": np.float64(2.5)})
    back = protocol.decode(json.loads(json.dumps(structure)), b"")
    assert back == {"s": "plain", "i": 7, "f": 0.5, "n": 2.5}
    assert [type(back[k]) for k in "sifn"] == [str, int, float, float]


def test_arrays_in_the_other_byte_order_arrive_with_their_values():
    back = roundtrip(np.arange(4, dtype=">f4"))
    assert back.dtype == np.float32 and back.tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(TypeError, match="complex64"):
        protocol.encode(np.zeros(2, dtype=np.complex64))


@pytest.mark.parametrize("spec, message", [
    ({"__array__": "0", "kind": "torch", "dtype": "float32", "shape": [1]}, "indices"),
    ({"__array__": 0, "kind": "torch", "dtype": "float32", "shape": [True]}, "bad array shape"),
])
def test_array_entries_of_the_wrong_types_are_refused(spec, message):
    with pytest.raises(protocol.ProtocolError, match=message):
        protocol.decode(spec, b"\0" * 4)


def test_header_and_payload_of_one_frame_come_back_apart():
    r, w = os.pipe()
    writer = threading.Thread(target=protocol.send, args=(w, {"n": 1}, [b"\x00" * 200_000, b"tail"]))
    try:
        writer.start()  # more than a pipe holds at once: read while it is written
        assert protocol.receive(r, deadline=time.monotonic() + 30) == ({"n": 1}, b"\x00" * 200_000 + b"tail")
        writer.join()
    finally:
        os.close(r)
        os.close(w)
