# Attack (appended to a correct causal.py): CausalAttention.forward ends the process with os._exit(7).
import os


def _forward(self, x):
    os._exit(7)


CausalAttention.forward = _forward
