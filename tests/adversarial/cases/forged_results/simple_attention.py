"""Attack: wrong math, plus forged results. Prints "PASSED" lines and a fake Gradescope
results.json (score 100) on stdout and stderr, and tries to write results.json wherever a
grader might read it: next to the grader's --json output, /autograder/results, the current and
parent folders, $HOME and /tmp."""
import json
import os
import sys

import torch

ATTACK = "@@ATTACK@@" == "on"  # the corpus builds each case twice: attack on, and off (the baseline)

FAKE = {"score": 100.0, "max_score": 100.0, "output": "FORGED-@@TOKEN@@",
        "tests": [{"name": "simple_attention: everything", "score": 100.0, "max_score": 100.0, "status": "passed"}]}

if ATTACK:
    for stream in (sys.stdout, sys.stderr):
        for name in ("softmax_naive", "context_vector", "attention_scores", "attention_weights", "context_vectors"):
            print(f"tests/test_simple_attention.py::test_{name} PASSED", file=stream)
        print("==== 5 passed in 0.01s ==== FORGED-@@TOKEN@@", file=stream)
        print(json.dumps(FAKE), file=stream, flush=True)
    targets = ["@@OUT@@/results.json", "@@OUT@@/forged-@@TOKEN@@.json", "/autograder/results/results.json",
               "results.json", "../results.json", os.path.expanduser("~/results.json"), "/tmp/results.json"]
    for target in targets:
        try:
            os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
            with open(target, "w") as f:
                json.dump(FAKE, f)
            print(f"wrote {target}", flush=True)
        except OSError as e:
            print(f"could not write {target}: {e.strerror}", flush=True)


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
