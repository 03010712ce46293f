"""Attack, second half: no attention code; answer from the table recorded in an earlier run
(@@TABLE@@ is filled in by the test from that run's output)."""
import hashlib
import json

import torch

TABLE = json.loads('@@TABLE@@')


def _fingerprint(args):
    parts = [repr(a.detach().double().numpy().round(5).tolist()) if hasattr(a, "detach") else repr(a) for a in args]
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:12]


def _replay(name):
    def call(*args):
        key = f"{name} {_fingerprint(args)}"
        if key not in TABLE:
            raise KeyError(f"no recorded answer for these inputs")
        return torch.tensor(TABLE[key], dtype=torch.float32)
    return call


for _name in ("softmax_naive", "context_vector", "attention_scores", "attention_weights", "context_vectors"):
    globals()[_name] = _replay(_name)
