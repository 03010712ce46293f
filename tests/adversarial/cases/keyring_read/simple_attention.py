"""Attack: no attention code at all; answer from keys an earlier submission left in the kernel's
keyrings (request_key searches the session, user and user-session keyrings)."""
import ctypes
import platform

_libc = ctypes.CDLL(None, use_errno=True)
_REQUEST_KEY = {"x86_64": 249, "aarch64": 218}[platform.machine()]


def _answers():
    key = _libc.syscall(_REQUEST_KEY, b"user", b"ch03-answers-@@TOKEN@@", None, 0)
    if key < 0:
        raise RuntimeError(f"no stored answers (errno {ctypes.get_errno()})")
    raise RuntimeError(f"found stored answers: key {key}")


def softmax_naive(x):
    return _answers()


def context_vector(inputs, query_index):
    return _answers()


def attention_scores(inputs):
    return _answers()


def attention_weights(scores):
    return _answers()


def context_vectors(inputs):
    return _answers()
