# Attack (appended to a correct simple_attention.py): reach the kernel state that rooms graded at
# the same time share, as a sender would to pass data to a classmate: locks and leases on a
# read-only file every room holds (this interpreter's standard library), a watch on it, a Linux AIO
# context, a pseudo-terminal, a page-cache probe, a POSIX message queue, a netlink socket.
# It prints what worked; nothing may.
import ctypes as _ctypes
import os as _os
import platform as _platform

_libc = _ctypes.CDLL(None, use_errno=True)
_NR = {"x86_64": {"io_setup": 206, "inotify_init1": 294, "flock": 73, "mq_open": 240, "fcntl": 72, "mincore": 27},
       "aarch64": {"io_setup": 0, "inotify_init1": 26, "flock": 32, "mq_open": 180, "fcntl": 25, "mincore": 232}}
_nr = _NR[_platform.machine()]
_shared = _os.open(_os.__file__, _os.O_RDONLY)
_lock = _ctypes.create_string_buffer(32)  # struct flock, all zero: F_RDLCK over the whole file
_tried = {
    "flock": _libc.syscall(_nr["flock"], _shared, 1 | 4),
    "fcntl F_SETLK": _libc.syscall(_nr["fcntl"], _shared, 6, _lock),
    "fcntl F_OFD_SETLK": _libc.syscall(_nr["fcntl"], _shared, 37, _lock),
    "fcntl F_GETLK": _libc.syscall(_nr["fcntl"], _shared, 5, _lock),
    "fcntl F_SETLEASE": _libc.syscall(_nr["fcntl"], _shared, 1024, 0),
    "inotify": _libc.syscall(_nr["inotify_init1"], 0),
    "io_setup": _libc.syscall(_nr["io_setup"], 8, _ctypes.byref(_ctypes.c_ulong(0))),
    "mq_open": _libc.syscall(_nr["mq_open"], b"ch03-@@TOKEN@@", 0o100 | 2, 0o600, None),
}
for _name, _path in (("ptmx", "/dev/ptmx"), ("pts", "/dev/pts/ptmx"), ("tty", "/dev/tty")):
    try:
        _tried[_name] = _os.open(_path, _os.O_RDWR | _os.O_NOCTTY)
    except OSError:
        _tried[_name] = -1
try:
    import socket as _socket

    _socket.socket(16, _socket.SOCK_RAW, 0).close()
    _tried["netlink"] = 0
except OSError:
    _tried["netlink"] = -1
print("shared state:", sorted(f"{k} worked" if v >= 0 else f"{k} refused" for k, v in _tried.items()), flush=True)
