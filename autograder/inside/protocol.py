"""The wire format between the grader and the sandboxed child: JSON plus raw array bytes.

A frame is  u32 header length | u64 payload length | header (UTF-8 JSON) | payload.
Arrays (torch tensors, NumPy arrays) travel as {"__array__": index, "kind", "dtype", "shape"}
entries in the JSON, their bytes concatenated in the payload. Nothing is ever pickled: the
grader rebuilds every array itself from dtype, shape and bytes, after checking all three.
"""
from __future__ import annotations

import json
import math
import os
import select
import struct
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import socket  # imported where it is used: the child's side loads no more than it needs

HEAD = struct.Struct(">IQ")
DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")
DTYPE_NAMES = {np.dtype(name): name for name in DTYPES}  # a dtype's .name is slow to compute
NUMPY_DTYPES = {name: np.dtype(name) for name in DTYPES}
MAX_HEADER = 4 << 20
MAX_PAYLOAD = 256 << 20
MAX_STRING = 4000

# a decoded JSON object from the other side (a frame's header, a control message, an array's entry):
# what it holds is checked where it is read, so its values are Any
Message = dict[str, Any]


class ProtocolError(Exception):
    """What came back is not a well-formed answer (or the peer went away)."""


class Deadline(Exception):
    """The peer did not answer in time."""


def encode(obj: Any, fallback: Callable[[Any], Any] | None = None) -> tuple[Any, list[bytes]]:
    """obj -> (json-able structure, list of byte buffers).

    Objects that are not data go to fallback(value) -> JSON dict (the child turns them into
    handles); without a fallback they raise TypeError.
    """
    buffers: list[bytes] = []
    torch = sys.modules.get("torch")  # never imported for this: a process without torch sends none
    tensor = torch.Tensor if torch is not None else ()

    def walk(value: Any, depth: int = 0) -> Any:
        if depth > 20:
            raise TypeError("structure nested too deeply")
        kind = type(value)  # the exact built-in types first: most of what travels
        if kind is str:
            return value[:MAX_STRING]
        if value is None or kind is bool or kind is int:
            return value
        if kind is float:
            return value if math.isfinite(value) else {"__float__": repr(value)}
        if isinstance(value, (list, tuple)):  # a subclass keeps its name (torch.Size), decoded as a list
            return {"__seq__": kind.__name__, "items": [walk(v, depth + 1) for v in value]}
        if isinstance(value, dict):
            return {"__map__": [[walk(k, depth + 1), walk(v, depth + 1)] for k, v in value.items()]}
        if isinstance(value, tensor):
            array, family = _tensor_array(torch, value), "torch"
        elif isinstance(value, np.ndarray):
            array, family = np.ascontiguousarray(value), "numpy"
            if array.dtype not in DTYPE_NAMES and array.dtype.byteorder == ">":  # sent in this machine's order
                array = array.astype(array.dtype.newbyteorder("="))
        else:
            return _other(value, depth, walk, fallback)
        dtype = DTYPE_NAMES.get(array.dtype)
        if dtype is None:
            raise TypeError(f"arrays of dtype {array.dtype} are not accepted")
        buffers.append(array.tobytes())
        return {"__array__": len(buffers) - 1, "kind": family, "dtype": dtype, "shape": list(array.shape)}

    return walk(obj), buffers


def _tensor_array(torch: Any, value: Any) -> np.ndarray[Any, Any]:
    """A tensor (of any subclass, on any device) as a NumPy array of its values."""
    with torch._C.DisableTorchFunctionSubclass():
        t = value.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        t = t.float()
    array: np.ndarray[Any, Any] = t.numpy() if t.dim() else t.reshape(1).numpy().reshape(())  # torch: Any here
    return array


def _other(value: Any, depth: int, walk: Callable[[Any, int], Any], fallback: Callable[[Any], Any] | None) -> Any:
    """What is not a built-in type, an array or a tensor: subclasses of str, int and float (sent as
    those types), NumPy scalars, and objects that are not data (fallback, else TypeError)."""
    if isinstance(value, str):
        return str.__str__(value)[:MAX_STRING]
    if isinstance(value, (int, float)):
        return walk(float.__float__(value) if isinstance(value, float) else int.__int__(value), depth)
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return walk(value.item(), depth)
    if fallback is not None:
        return fallback(value)
    raise TypeError(f"cannot send a {type(value).__name__}")


ARRAY_KEYS = frozenset({"__array__", "kind", "dtype", "shape"})


def decode(structure: Any, payload: bytes, handle_factory: Callable[[Message], Any] | None = None) -> Any:
    """Inverse of encode, validating every array against its declared dtype and shape."""
    specs: list[Message] = []

    def walk(value: Any) -> Any:
        if type(value) is dict:
            if "__array__" in value:
                if value.keys() != ARRAY_KEYS or value["dtype"] not in DTYPES:
                    raise ProtocolError(f"bad array entry {str(value)[:200]}")
                shape = value["shape"]
                if type(shape) is not list or not all(type(d) is int and 0 <= d < 2**31 for d in shape):
                    raise ProtocolError("bad array shape")
                specs.append(value)
                return ("array", value)
            if "__float__" in value:
                if value["__float__"] not in ("nan", "inf", "-inf"):
                    raise ProtocolError("bad float")
                return float(value["__float__"])
            if "__seq__" in value:
                return ("seq", value["__seq__"], [walk(v) for v in value["items"]])
            if "__map__" in value:
                return ("map", [(walk(k), walk(v)) for k, v in value["__map__"]])
            if "__handle__" in value and handle_factory is not None:
                return ("handle", value)
            raise ProtocolError(f"unexpected object {str(value)[:200]}")
        if type(value) is list:
            raise ProtocolError("bare lists are not part of the protocol")
        return value

    tree = walk(structure)
    built = _arrays(specs, payload)

    def build(node: Any) -> Any:
        if type(node) is tuple:
            tag = node[0]
            if tag == "array":
                return built[node[1]["__array__"]]
            if tag == "seq":
                items = [build(v) for v in node[2]]
                return tuple(items) if node[1] == "tuple" else items
            if tag == "map":
                return {_hashable(build(k)): build(v) for k, v in node[1]}
            if tag == "handle":
                assert handle_factory is not None  # walk makes a handle node only with one
                return handle_factory(node[1])
        return node

    return build(tree)


def _arrays(specs: list[Message], payload: bytes) -> dict[int, Any]:
    """{index: array} rebuilt from the payload, laid out in index order (0..n-1, each once)."""
    by_index = sorted(specs, key=lambda s: s["__array__"] if type(s["__array__"]) is int else -1)
    if [s["__array__"] for s in by_index] != list(range(len(by_index))):
        raise ProtocolError("array indices are not 0..n-1")
    built: dict[int, Any] = {}
    position = 0
    for spec in by_index:
        dtype = NUMPY_DTYPES[spec["dtype"]]
        count = math.prod(spec["shape"])
        nbytes = count * dtype.itemsize
        if position + nbytes > len(payload):
            raise ProtocolError("payload shorter than the arrays it declares")
        data = np.frombuffer(payload, dtype=dtype, count=count, offset=position).reshape(spec["shape"]).copy()
        position += nbytes
        if spec["kind"] == "torch":
            import torch

            data = torch.from_numpy(data)
        built[spec["__array__"]] = data
    if position != len(payload):
        raise ProtocolError("payload longer than the arrays it declares")
    return built


def _hashable(key: Any) -> Any:
    if isinstance(key, (str, int, float, bool, type(None), tuple)):
        return key
    raise ProtocolError("dictionary keys must be plain values")


def pack(header: Any, buffers: Sequence[bytes] = ()) -> bytes:
    head = json.dumps(header, separators=(",", ":")).encode()
    payload = b"".join(buffers)
    return HEAD.pack(len(head), len(payload)) + head + payload


def send(fd: int, header: Any, buffers: Sequence[bytes] = (), deadline: float | None = None) -> None:
    """Write one frame to a file descriptor, giving up at deadline (time.monotonic() value)."""
    data = memoryview(pack(header, buffers))
    while data:
        _wait(fd, deadline, write=True)
        try:
            written = os.write(fd, data[: 1 << 20])
        except BlockingIOError:
            continue
        except (BrokenPipeError, OSError) as e:
            raise ProtocolError(f"the other side closed the channel ({e.strerror})") from None
        data = data[written:]


def receive(fd: int, deadline: float | None = None, max_payload: int = MAX_PAYLOAD) -> tuple[Any, bytes]:
    """Read one frame -> (header, payload bytes). Raises Deadline, or ProtocolError on EOF/garbage."""
    head_len, payload_len = HEAD.unpack(_read_exact(fd, HEAD.size, deadline))
    if head_len > MAX_HEADER or payload_len > max_payload:
        raise ProtocolError(f"frame too large ({head_len} + {payload_len} bytes)")
    body = memoryview(_read_exact(fd, head_len + payload_len, deadline))  # header and payload: one read
    try:
        header = json.loads(body[:head_len].tobytes())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ProtocolError(f"header is not JSON: {e}") from None
    if not isinstance(header, dict):
        raise ProtocolError("header is not a JSON object")
    return header, body[head_len:].tobytes()


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    chunks: list[bytes] = []
    missing = n
    while missing:
        _wait(fd, deadline, write=False)
        try:
            chunk = os.read(fd, min(missing, 1 << 20))
        except BlockingIOError:
            continue
        if not chunk:
            raise ProtocolError("the other side closed the channel")
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def _wait(fd: int, deadline: float | None, write: bool) -> None:
    if deadline is None:
        return
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise Deadline()
    ready = select.select([], [fd], [], remaining) if write else select.select([fd], [], [], remaining)
    if not (ready[1] if write else ready[0]):
        raise Deadline()


# ---------------------------------------------------------------- control messages (with file descriptors)
# Between the grader, the fork server and a session leader: one small JSON object per message over
# an AF_UNIX SOCK_SEQPACKET pair (message boundaries kept), file descriptors alongside (SCM_RIGHTS).

MAX_MESSAGE = 1 << 16


def control_pair() -> tuple[socket.socket, socket.socket]:
    import socket

    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


def send_message(sock: socket.socket, header: Message, fds: Sequence[int] = ()) -> None:
    import socket

    data = json.dumps(header, allow_nan=False).encode()
    if len(data) > MAX_MESSAGE:
        raise ProtocolError("control message too large")
    socket.send_fds(sock, [data], list(fds))


def receive_message(sock: socket.socket, deadline: float | None = None, max_fds: int = 4) -> tuple[Message, list[int]]:
    """-> (header dict, [fds]). Never trusts the peer: the size, the JSON and the number of
    descriptors are all bounded; descriptors beyond max_fds are closed by the kernel (MSG_CTRUNC)."""
    import socket

    timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
    sock.settimeout(timeout)
    try:
        data, fds, flags, _ = socket.recv_fds(sock, MAX_MESSAGE, max_fds)
    except (TimeoutError, BlockingIOError):
        raise Deadline("no control message in time") from None
    except OSError as e:
        raise ProtocolError(f"control channel: {e}") from None
    finally:
        sock.settimeout(None)
    if not data:
        for fd in fds:
            os.close(fd)
        raise ProtocolError("control channel closed")
    try:
        header = json.loads(data)
        if not isinstance(header, dict):
            raise ValueError("not an object")
    except (ValueError, RecursionError) as e:
        for fd in fds:
            os.close(fd)
        raise ProtocolError(f"control message is not JSON ({type(e).__name__})") from None
    return header, list(fds)
