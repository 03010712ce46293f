"""The wire format between the grader and the sandboxed child: JSON plus raw array bytes.

A frame is  u32 header length | u64 payload length | header (UTF-8 JSON) | payload.
Arrays (torch tensors, NumPy arrays) travel as {"__array__": index, "kind", "dtype", "shape"}
entries in the JSON, their bytes concatenated in the payload. Nothing is ever pickled: the
grader rebuilds every array itself from dtype, shape and bytes, after checking all three.
"""
import json
import math
import os
import select
import struct
import time

import numpy as np

HEAD = struct.Struct(">IQ")
DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")
MAX_HEADER = 4 << 20
MAX_PAYLOAD = 256 << 20
MAX_STRING = 4000


class ProtocolError(Exception):
    """What came back is not a well-formed answer (or the peer went away)."""


class Deadline(Exception):
    """The peer did not answer in time."""


def _is_torch_tensor(value):
    torch = _torch()
    return torch is not None and isinstance(value, torch.Tensor)


def _torch():
    import sys

    return sys.modules.get("torch")


def encode(obj, fallback=None):
    """obj -> (json-able structure, list of byte buffers).

    Objects that are not data go to fallback(value) -> JSON dict (the child turns them into
    handles); without a fallback they raise TypeError.
    """
    buffers = []

    def walk(value, depth=0):
        if depth > 20:
            raise TypeError("structure nested too deeply")
        if value is None or isinstance(value, (bool, str)):
            return value[:MAX_STRING] if isinstance(value, str) else value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if isinstance(value, float) and not math.isfinite(value):
                return {"__float__": repr(value)}
            return value
        if isinstance(value, (np.integer, np.floating, np.bool_)):
            return walk(value.item(), depth)
        if _is_torch_tensor(value):
            torch = _torch()
            with torch._C.DisableTorchFunctionSubclass():
                t = value.detach().cpu().contiguous()
            if t.dtype == torch.bfloat16:
                t = t.float()
            array = t.numpy() if t.dim() else t.reshape(1).numpy().reshape(())
            kind = "torch"
        elif isinstance(value, np.ndarray):
            array, kind = np.ascontiguousarray(value), "numpy"
        elif isinstance(value, (list, tuple)):
            return {"__seq__": type(value).__name__, "items": [walk(v, depth + 1) for v in value]}
        elif isinstance(value, dict):
            return {"__map__": [[walk(k, depth + 1), walk(v, depth + 1)] for k, v in value.items()]}
        elif fallback is not None:
            return fallback(value)
        else:
            raise TypeError(f"cannot send a {type(value).__name__}")
        if array.dtype.name not in DTYPES:
            raise TypeError(f"arrays of dtype {array.dtype} are not accepted")
        buffers.append(array.tobytes())
        return {"__array__": len(buffers) - 1, "kind": kind, "dtype": array.dtype.name, "shape": list(array.shape)}

    return walk(obj), buffers


def decode(structure, payload, handle_factory=None):
    """Inverse of encode, validating every array against its declared dtype and shape."""
    offsets = []

    def array(spec):
        if set(spec) != {"__array__", "kind", "dtype", "shape"} or spec["dtype"] not in DTYPES:
            raise ProtocolError(f"bad array entry {str(spec)[:200]}")
        shape = spec["shape"]
        if not isinstance(shape, list) or not all(isinstance(d, int) and 0 <= d < 2**31 for d in shape):
            raise ProtocolError("bad array shape")
        offsets.append(spec)
        return spec

    def walk(value):
        if isinstance(value, dict):
            if "__array__" in value:
                return ("array", array(value))
            if "__float__" in value:
                text = value["__float__"]
                if text not in ("nan", "inf", "-inf"):
                    raise ProtocolError("bad float")
                return float(text)
            if "__seq__" in value:
                items = [walk(v) for v in value["items"]]
                return ("seq", value["__seq__"], items)
            if "__map__" in value:
                return ("map", [(walk(k), walk(v)) for k, v in value["__map__"]])
            if "__handle__" in value and handle_factory is not None:
                return ("handle", value)
            raise ProtocolError(f"unexpected object {str(value)[:200]}")
        if isinstance(value, list):
            raise ProtocolError("bare lists are not part of the protocol")
        return value

    tree = walk(structure)
    # arrays are laid out in index order; rebuild them from the payload
    by_index = sorted(offsets, key=lambda s: s["__array__"])
    if [s["__array__"] for s in by_index] != list(range(len(by_index))):
        raise ProtocolError("array indices are not 0..n-1")
    built, position = {}, 0
    for spec in by_index:
        dtype = np.dtype(spec["dtype"])
        count = int(np.prod(spec["shape"], dtype=np.int64)) if spec["shape"] else 1
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

    def build(node):
        if isinstance(node, tuple):
            tag = node[0]
            if tag == "array":
                return built[node[1]["__array__"]]
            if tag == "seq":
                items = [build(v) for v in node[2]]
                return tuple(items) if node[1] == "tuple" else items
            if tag == "map":
                return {_hashable(build(k)): build(v) for k, v in node[1]}
            if tag == "handle":
                return handle_factory(node[1])
        return node

    return build(tree)


def _hashable(key):
    if isinstance(key, (str, int, float, bool, type(None), tuple)):
        return key
    raise ProtocolError("dictionary keys must be plain values")


def pack(header, buffers=()):
    head = json.dumps(header, separators=(",", ":")).encode()
    payload = b"".join(buffers)
    return HEAD.pack(len(head), len(payload)) + head + payload


def send(fd, header, buffers=(), deadline=None):
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


def receive(fd, deadline=None, max_payload=MAX_PAYLOAD):
    """Read one frame -> (header, payload bytes). Raises Deadline, or ProtocolError on EOF/garbage."""
    head_len, payload_len = HEAD.unpack(_read_exact(fd, HEAD.size, deadline))
    if head_len > MAX_HEADER or payload_len > max_payload:
        raise ProtocolError(f"frame too large ({head_len} + {payload_len} bytes)")
    try:
        header = json.loads(_read_exact(fd, head_len, deadline))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ProtocolError(f"header is not JSON: {e}") from None
    if not isinstance(header, dict):
        raise ProtocolError("header is not a JSON object")
    return header, _read_exact(fd, payload_len, deadline)


def _read_exact(fd, n, deadline):
    chunks, missing = [], n
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


def _wait(fd, deadline, write):
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


def control_pair():
    import socket

    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


def send_message(sock, header, fds=()):
    import socket

    data = json.dumps(header, allow_nan=False).encode()
    if len(data) > MAX_MESSAGE:
        raise ProtocolError("control message too large")
    socket.send_fds(sock, [data], list(fds))


def receive_message(sock, deadline=None, max_fds=4):
    """-> (header dict, [fds]). Never trusts the peer: the size, the JSON and the number of
    descriptors are all bounded; descriptors beyond max_fds are closed by the kernel (MSG_CTRUNC)."""
    import socket

    timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
    sock.settimeout(timeout)
    try:
        data, fds, flags, _ = socket.recv_fds(sock, MAX_MESSAGE, max_fds)
    except (socket.timeout, BlockingIOError):
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
