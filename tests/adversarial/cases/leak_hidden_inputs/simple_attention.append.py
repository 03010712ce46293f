# Attack (appended to a correct simple_attention.py): remember a fingerprint of every input seen
# in this process and raise with all of them, so that a visible check's message would carry the
# inputs of hidden checks run before it in the same process.
import hashlib as _hashlib

_SEEN = []


def _fingerprint(args):
    sums = [round(float(a.double().sum()), 4) for a in args if hasattr(a, "double")]
    return _hashlib.sha1(repr(sums).encode()).hexdigest()[:8]


def _leaky(name):
    def call(*args):
        _SEEN.insert(0, _fingerprint(args))
        raise RuntimeError("SEEN " + " ".join(_SEEN))
    return call


for _name in ("softmax_naive", "context_vector", "attention_scores", "attention_weights", "context_vectors"):
    globals()[_name] = _leaky(_name)
