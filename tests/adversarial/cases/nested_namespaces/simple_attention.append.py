# Attack (appended to a correct simple_attention.py): open kernel attack surface from inside the
# sandbox: a new user namespace (unshare, clone), a mount, ptrace of the parent, a BPF program.
import ctypes as _ctypes
import os as _os
import platform as _platform

_libc = _ctypes.CDLL(None, use_errno=True)
_x86 = _platform.machine() == "x86_64"
_tries = {
    "unshare(CLONE_NEWUSER)": lambda: _libc.unshare(0x10000000),
    "clone(CLONE_NEWUSER)": lambda: _libc.syscall(56 if _x86 else 220, 0x10000000 | 17, 0, 0, 0, 0),
    "mount tmpfs": lambda: _libc.mount(b"none", b"/run/submission", b"tmpfs", 0, None),
    "ptrace(ATTACH, parent)": lambda: _libc.ptrace(16, _os.getppid(), 0, 0),
    "bpf": lambda: _libc.syscall(321 if _x86 else 280, 5, 0, 0),
}
_results = {}
for _what, _call in _tries.items():
    _r = _call()
    if _r == 0 and _what.startswith("clone"):
        _os._exit(0)
    _results[_what] = "worked" if _r >= 0 else _os.strerror(_ctypes.get_errno())
print("namespaces:", _results, flush=True)
