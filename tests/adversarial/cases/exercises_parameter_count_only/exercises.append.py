# Attack: Exercise 3.3 answered with the book's printed parameter count and no attention at all: one
# bias-free layer of 768 x 3073 weights has GPT-2 small's 2,360,064 parameters. The baseline (attack
# off) is the same layer with 3072 outputs (2,359,296 parameters): the same wrong module, without the count.
import torch as _torch

_ATTACK = "@@ATTACK@@" == "on"


def gpt2_small_attention():
    return _torch.nn.Linear(768, 3073 if _ATTACK else 3072, bias=False)
