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
MAX_DEPTH = 20  # the deepest a value may sit (the top is 0): encode refuses deeper, decode too
LEAVES = frozenset({int, bool, type(None)})  # values that travel as they are (a str is cut, a float checked)
# in a decoded structure: values kept as they are, with and without a cleaner of strings (decode's `strings`)
PLAIN = frozenset({int, bool, float, type(None)})
PLAIN_OR_STR = PLAIN | {str}
KEYS = frozenset({str, int, float, bool, type(None), tuple})  # what a decoded dictionary's key may be

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
    handles); without a fallback they raise TypeError. A value deeper than MAX_DEPTH raises
    TypeError. One walk over obj: the items of a list, tuple or dict that are None, bools, ints or
    strings (exactly those types; a string cut to MAX_STRING) are taken there, without a call of walk.
    """
    buffers: list[bytes] = []
    torch = sys.modules.get("torch")  # never imported for this: a process without torch sends none
    tensor = torch.Tensor if torch is not None else ()
    plain_tensor = torch.Tensor if torch is not None else None

    def walk(value: Any, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise TypeError("structure nested too deeply")
        kind = type(value)  # the exact built-in types first: most of what travels
        if kind is str:
            return value[:MAX_STRING]
        if value is None or kind is bool or kind is int:
            return value
        if kind is float:
            return value if math.isfinite(value) else {"__float__": repr(value)}
        if isinstance(value, (list, tuple)):  # a subclass keeps its name (torch.Size), decoded as a list
            inner = depth + 1
            if inner > MAX_DEPTH and value:  # its first item's walk would refuse
                raise TypeError("structure nested too deeply")
            return {"__seq__": kind.__name__, "items": [v if type(v) in LEAVES else v[:MAX_STRING] if type(v) is str
                                                         else walk(v, inner) for v in value]}
        if isinstance(value, dict):
            inner = depth + 1
            if inner > MAX_DEPTH and value:
                raise TypeError("structure nested too deeply")
            return {"__map__": [[k[:MAX_STRING] if type(k) is str else walk(k, inner),
                                 v if type(v) in LEAVES else v[:MAX_STRING] if type(v) is str else walk(v, inner)]
                                for k, v in value.items()]}
        if kind is plain_tensor and value.is_cpu and value.dim():
            try:  # a plain CPU tensor's values as they are (tobytes() lays them out in order)
                array, family = (value.detach() if value.requires_grad else value).numpy(), "torch"
            except Exception:  # bfloat16, a conjugate or negative view, a sparse layout: as any tensor
                array, family = _tensor_array(torch, value), "torch"
        elif isinstance(value, tensor):
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

    return walk(obj, 0), buffers


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


def decode(structure: Any, payload: bytes, handle_factory: Callable[[Message], Any] | None = None,
           strings: Callable[[str], str] | None = None) -> Any:
    """Inverse of encode, validating every array against its declared dtype and shape, in one walk
    that checks and builds (each array rebuilt from the payload as its entry is met).

    Refused with ProtocolError: a bare list, an object without a known tag, a sequence whose items
    or a dictionary whose pairs (of two) are not lists, an array entry with other keys, a dtype
    outside DTYPES or a bad shape, a value deeper than MAX_DEPTH (encode sends none); array indices
    that are not 0..n-1 in the order the entries come (as encode numbers them), a payload shorter or
    longer than the arrays declare, a dictionary key that is not a plain value. The structure's own
    faults are raised as the walk meets them, then the arrays' (indices, short, long), then the keys'.
    strings: applied to every string as it is rebuilt, dictionary keys included (the grader's
    text.clean for an answer: Student._answer).
    """
    plain = PLAIN if strings is not None else PLAIN_OR_STR  # kept as they are, without a call
    size = len(payload)
    position = count = 0  # bytes of the payload taken, array entries met
    bad_index = short = bad_key = False
    torch: Any = None

    def walk(value: Any, depth: int) -> Any:
        nonlocal position, count, bad_index, short, bad_key, torch
        kind = type(value)
        if kind is str:
            return value if strings is None else strings(value)
        if kind is not dict:
            if kind is list:
                raise ProtocolError("bare lists are not part of the protocol")
            return value
        if depth > MAX_DEPTH:
            raise ProtocolError("structure nested too deeply")
        if "__array__" in value:
            if value.keys() != ARRAY_KEYS or value["dtype"] not in DTYPES:
                raise ProtocolError(f"bad array entry {str(value)[:200]}")
            shape = value["shape"]
            if type(shape) is not list or not all(type(d) is int and 0 <= d < 2**31 for d in shape):
                raise ProtocolError("bad array shape")
            index = value["__array__"]
            bad_index = bad_index or type(index) is not int or index != count
            count += 1
            if bad_index or short:  # refused once the walk is done: the rest is only checked
                return None
            dtype = NUMPY_DTYPES[value["dtype"]]
            items = math.prod(shape)
            nbytes = items * dtype.itemsize
            if position + nbytes > size:
                short = True
                return None
            data = np.frombuffer(payload, dtype=dtype, count=items, offset=position).reshape(shape).copy()
            position += nbytes
            if value["kind"] == "torch":
                if torch is None:
                    import torch
                return torch.from_numpy(data)
            return data
        if "__float__" in value:
            if value["__float__"] not in ("nan", "inf", "-inf"):
                raise ProtocolError("bad float")
            return float(value["__float__"])
        if "__seq__" in value:
            items = value["items"]
            if type(items) is not list:
                raise ProtocolError("bad sequence")
            inner = depth + 1
            built = [v if type(v) in plain else walk(v, inner) for v in items]
            return tuple(built) if value["__seq__"] == "tuple" else built
        if "__map__" in value:
            pairs = value["__map__"]
            if type(pairs) is not list:
                raise ProtocolError("bad dictionary")
            inner, mapping = depth + 1, {}
            for pair in pairs:
                if type(pair) is not list or len(pair) != 2:
                    raise ProtocolError("bad dictionary")
                key, item = pair
                if type(key) not in plain:
                    key = walk(key, inner)
                if type(item) not in plain:
                    item = walk(item, inner)
                if type(key) in KEYS:
                    try:
                        mapping[key] = item
                        continue
                    except TypeError:  # a tuple holding something without a hash
                        pass
                bad_key = True
            return mapping
        if "__handle__" in value and handle_factory is not None:
            return handle_factory(value)
        raise ProtocolError(f"unexpected object {str(value)[:200]}")

    tree = walk(structure, 0)
    if bad_index:
        raise ProtocolError("array indices are not 0..n-1")
    if short:
        raise ProtocolError("payload shorter than the arrays it declares")
    if position != size:
        raise ProtocolError("payload longer than the arrays it declares")
    if bad_key:
        raise ProtocolError("dictionary keys must be plain values")
    return tree


_JSON = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode  # built once: headers are ours, acyclic


def pack(header: Any, buffers: Sequence[bytes] = ()) -> bytes:
    head = _JSON(header).encode()
    payload = b"".join(buffers)
    return b"".join((HEAD.pack(len(head), len(payload)), head, payload))


def send(fd: int, header: Any, buffers: Sequence[bytes] = (), deadline: float | None = None,
         nonblocking: bool = False) -> None:
    """Write one frame to a file descriptor, giving up at deadline (time.monotonic() value).

    nonblocking: the descriptor is O_NONBLOCK (the grader's ends of a child's channel, PartChild): each
    write is tried at once and waits only for what the pipe cannot take yet, so a peer that stops
    reading meets the deadline whatever the frame's size. Else every write waits until the descriptor
    is writable (none of that without a deadline)."""
    data = memoryview(pack(header, buffers))
    while data:
        if nonblocking:
            _in_time(deadline)
        else:
            _wait(fd, deadline, write=True)
        try:
            written = os.write(fd, data[: 1 << 20])
        except BlockingIOError:
            if nonblocking:
                _ready(fd, deadline, write=True)
            continue
        except (BrokenPipeError, OSError) as e:
            raise ProtocolError(f"the other side closed the channel ({e.strerror})") from None
        data = data[written:]


def receive(fd: int, deadline: float | None = None, max_payload: int = MAX_PAYLOAD,
            nonblocking: bool = False) -> tuple[Any, bytes]:
    """Read one frame -> (header, payload bytes). Raises Deadline, or ProtocolError on EOF/garbage.
    nonblocking: as send's (each read tried at once, a wait only when nothing is there yet)."""
    head_len, payload_len = HEAD.unpack(_read_exact(fd, HEAD.size, deadline, nonblocking))
    if head_len > MAX_HEADER or payload_len > max_payload:
        raise ProtocolError(f"frame too large ({head_len} + {payload_len} bytes)")
    body = memoryview(_read_exact(fd, head_len + payload_len, deadline, nonblocking))  # header and payload: one read
    try:
        header = _json_object(body[:head_len].tobytes())
    except ValueError as e:  # not UTF-8, not JSON, or an integer past Python's 4300 digits
        raise ProtocolError(f"header is not JSON: {e}") from None
    if not isinstance(header, dict):
        raise ProtocolError("header is not a JSON object")
    return header, body[head_len:].tobytes()


_DECODER = json.JSONDecoder()


def _json_object(raw: bytes) -> Any:
    """json.loads(raw), without its look at the encoding where raw starts as every header does ('{'
    and a byte that is not NUL: UTF-8 to json.detect_encoding; other starts go through json.loads)."""
    if raw[:1] == b"{" and b"\0" not in raw[1:2]:
        return _DECODER.decode(raw.decode("utf-8", "surrogatepass"))
    return json.loads(raw)


def _read_exact(fd: int, n: int, deadline: float | None, nonblocking: bool = False) -> bytes:
    chunks: list[bytes] = []
    missing = n
    while missing:
        if nonblocking:
            _in_time(deadline)
        else:
            _wait(fd, deadline, write=False)
        try:
            chunk = os.read(fd, min(missing, 1 << 20))
        except BlockingIOError:
            if nonblocking:
                _ready(fd, deadline, write=False)
            continue
        if not chunk:
            raise ProtocolError("the other side closed the channel")
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def _in_time(deadline: float | None) -> None:
    """Deadline once deadline (a time.monotonic() value; None: none) has passed."""
    if deadline is not None and deadline <= time.monotonic():
        raise Deadline()


def _wait(fd: int, deadline: float | None, write: bool) -> None:
    """Before each read or write of a blocking descriptor: wait until it is ready (not without a deadline)."""
    if deadline is not None:
        _ready(fd, deadline, write)


def _ready(fd: int, deadline: float | None, write: bool) -> None:
    """Wait until fd is readable (writable) -> Deadline when deadline passes first (None: wait as long as it takes)."""
    remaining = None if deadline is None else deadline - time.monotonic()
    if remaining is not None and remaining <= 0:
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
