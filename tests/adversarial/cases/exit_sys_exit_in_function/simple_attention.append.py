# Attack (appended to a correct simple_attention.py): one function calls sys.exit(3).
# context_vectors() looks attention_weights up at call time, so it exits too.
import sys


def attention_weights(scores):
    sys.exit(3)
