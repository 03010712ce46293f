"""Which misconception a message names, by cause id, in the grader's words and in the public tests'
(assignments/ch03/tests/_diagnose.py): the two say the same mistake in different sentences, so a test
that compares their diagnoses (test_suites.test_public_tests_and_grader_agree) compares ids.

CAUSES: id -> the phrases (regular expressions, case-insensitive) that name it in either wording. A
message names every id one of whose phrases it holds (a grader message naming several possible
mistakes names each). NAMES_NONE: the public messages that name no misconception (the numbers are
wrong, a shape, an error the student's code raised): every other public message must name an id.
"""
import re

CAUSES = {
    "unscaled": [r"scores are not scaled"],
    "scores-of-embedding-dims": [r"inputs\.T @ inputs"],
    "scaled-by-d_k": [r"divided by d_k"],
    "scaled-by-d_in": [r"1/sqrt\(d_in\)"],
    "scaled-by-d_out": [r"sqrt\(d_out\)"],
    "softmax-dim": [r"softmax runs over (the wrong dim|dim 0)"],
    "no-mask": [r"no causal mask"],
    "masked-fill-discarded": [r"result of masked_fill is discarded"],
    "zero-fill": [r"set to (0|#) instead of -inf"],
    "mask-after-softmax": [r"zeroed after the softmax", r"mask is applied after the softmax"],
    "hides-diagonal": [r"mask hides too much", r"diagonal is off by one: it also hides", r"also hides the diagonal"],
    "sees-next": [r"hides too little", r"each token still sees the next"],
    "inverted": [r"mask is inverted"],
    "mask-overwritten": [r"overwrites the mask buffer"],
    "mask-not-sliced": [r"use its first num_tokens rows and columns"],
    "global-read": [r"reads a variable set at the top of the module"],
    "arrays-dot-T": [r"k\.T on a batch reverses every axis"],
    "split-and-merge": [r"split and merged without"],
    "split": [r"split without (the|a) transpose"],
    "merge": [r"(?<!split and )merged without (the|a) transpose"],
    "no-out-proj": [r"out_proj is (not applied|missing)"],
    "out-proj-from-d_in": [r"out_proj takes the merged heads"],
    "head-dim": [r"do not split into num_heads heads"],
    "dropout-never": [r"dropout is never applied", r"dropout is not applied"],
    "dropout-on-context": [r"dropout acts on the values or (on )?the context vectors",
                           r"dropout seems to act on the values or the output"],
    "heads-swapped": [r"swaps heads and tokens"],
    "dropout-before-softmax": [r"dropout acts before the softmax", r"not on the scores"],
    "dropout-in-place": [r"nn\.Dropout is made with inplace=True", r"nn\.Dropout\(inplace=True\) overwrites",
                         r"fails in training mode only: dropout seems to change", r"dropout seems to change the softmax's"],
    "dropout-on-masked-scores": [r"dropout acts on the masked scores", r"dropout seems to act on the masked scores"],
    "dropout-before-mask": [r"mask the scores before the softmax and dropout", r"dropout must come after the causal mask"],
    "dropout-not-rescaled": [r"not scaled up by 1/\(1 - p\)", r"weights dropout keeps are not rescaled"],
    "dropout-in-eval": [r"dropout is still active in eval mode", r"in eval mode dropout must do nothing"],
    "dropout-same-mask": [r"drops the same positions in every sequence"],
    "dropout-rate": [r"attention weights are dropped in training mode, expected", r"zeroes too (many|few)"],
    "transfer-changes-v2": [r"changed sa_v2"],
    "transfer-transpose": [r"nn\.Linear (keeps|stores) its weight as \(d_out, d_in\)"],
    "other-token": [r"belongs to another token"],
    "in-place": [r"in place: use out-of-place"],
    "bool-index": [r"2-D bool mask used as an index"],
    "global-max": [r"max of the whole array"],
    "float-cast": [r"float32 and float64 tensors meet"],
    "module-list": [r"nn\.ModuleList"],
    "dropout-ignored": [r"ignores its dropout"],
    "gradients-off": [r"switched gradients off"],
    "no-gradient": [r"no gradient (reached|can flow back)"],
    "dropout-reseeded": [r"same positions on every call"],
    "gpt2-heads": [r"GPT-2 small has 12 heads"],
    "gpt2-context": [r"GPT-2 small's context length is 1024"],
    "gpt2-dropout": [r"the exercise asks for dropout=0\.0"],
}
NAMES_NONE = [r" is wrong at ", r" is wrong$", r"expected shape", r"^(\w+Error|DID NOT RAISE)",
              r"already wrong \(the module's other tests say how\)", r"not implemented yet", r"could not be imported",
              r"^AssertionError", r"row \d+ should be True"]


def ids(message: str) -> set[str]:
    """The cause ids a message names."""
    return {cause for cause, phrases in CAUSES.items() if any(re.search(p, message, re.I) for p in phrases)}


def names_none(message: str) -> bool:
    return any(re.search(p, message) for p in NAMES_NONE)
