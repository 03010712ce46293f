"""Which other parts a part's checks use, and whether the student's own code for them may be used.

weight_transfer hands the student's SelfAttention_v1 and _v2 to the student's transfer function,
a CausalAttention may inherit SelfAttention_v2, mha's wrapper builds the student's CausalAttention,
exercises build mha's classes, the trainable attentions may call simple_attention's functions. Such a check is
about the interaction, and may cost points only when the other part is right on its own. That is
judged here, on data, once per submission and before any hidden input reaches the child: a short
probe builds the other part's classes after a seed the grader knows and compares their weights and
outputs with its own math (reference.py). A part whose probe fails, raises or runs past
PROBE_SECONDS is replaced, for the checks of the parts that use it, by the grader's own classes:
stand-ins in the child that hold their tensors and ask the grader's process for every computation,
done there by the reference solutions themselves (stand_ins.py). A part never receives its own replacement.

Names: SelfAttention_v1 and _v2 must hold W_query, W_key and W_value (the contract there, graded in
their own parts); CausalAttention and MultiHeadAttention may name their layers as they like.
"""
import contextlib
import functools
from collections.abc import Callable
from typing import Any

import torch

from autograder import source_reading
from autograder.stand_ins import MODULES
from autograder.student import SessionDied, Step, Student, StudentError, outcome
from autograder.suites import helpers, reference

# the parts a part's checks build, always probed for it
DEPENDS = {"weight_transfer": ("self_attention_v1", "self_attention_v2"), "mha": ("causal",),
           "exercises": ("causal", "mha")}
# the parts a part's module may use, probed for it where the grader's reading of the submission finds the module
# importing them, directly or through its other modules, or cannot tell (uses): a CausalAttention that inherits
# SelfAttention_v2 (a v2 that ignored qkv_bias cost it its bias check), attentions that call simple_attention's
# attention_weights for their softmax (its dim-0 bug cost v1 9 of 10 points)
MAY_USE = {"self_attention_v1": ("simple_attention",), "self_attention_v2": ("simple_attention",),
           "causal": ("simple_attention", "self_attention_v2"), "mha": ("simple_attention",)}
PROBE_SECONDS = 2  # of CPU time per remote call of a probe: a part that runs longer is replaced
SEED = 2024


class Wrong(Exception):
    """The probed part is not right on its own."""


def uses(student: Student, part: str) -> list[str]:
    """The parts `part`'s checks use (DEPENDS) and those its module may use (MAY_USE) that the grader's reading
    of the submitted sources finds it importing, directly or through the submission's other modules; every
    one of MAY_USE where the reading cannot tell: a module that does not parse, or code that imports by a name
    made at run time or reaches into the import machinery (source_reading.tampering). In import order. A
    module the part's code does not import is not probed in its child (a probe would import it there)."""
    optional = MAY_USE.get(part, ())
    sources = student.sources() if optional else {}
    chain = source_reading.imported_modules(sources, part) if part in sources else []
    unreadable = not chain or any(source_reading.parse(sources[m]) is None for m in chain) or \
        bool(source_reading.tampering({m: sources[m] for m in chain}))
    wanted = set(DEPENDS.get(part, ())) | {m for m in optional if unreadable or m in chain}
    return [module for module in MODULES if module in wanted]


def verdicts(student: Student, part: str, known: dict[str, str], used: list[str] | None = None) -> dict[str, str]:
    """{module: '' (right on its own), 'wrong', 'raises', 'hangs' or 'leaves' (LEAVES)} for the parts `part` uses
    (used, default uses()); known: the submission's verdicts so far (filled in here). A probe that ran past its
    time ends the child: the caller starts another."""
    used = uses(student, part) if used is None else used
    left: list[list[str]] = []  # what the child held that no operation puts back, read once between two probes
    for module in used:
        if module not in known and not student.session.died:
            known[module] = probe(student, module, left)
    return {module: known.get(module, "hangs") for module in used}


def substitutes(found: dict[str, str]) -> list[str]:
    """The parts found not right on their own, in import order: the child gets the grader's classes
    for them (stand-ins whose every computation is the reference solutions', run in the grader:
    stand_ins.py)."""
    return [module for module in MODULES if found.get(module)]


def probe(student, module, left=None):
    """module's verdict (verdicts); left: [what the child held that no operation puts back], as the last
    probe in this child read it after it ran (read here first where empty; replaced by what it reads after)."""
    limit, student.call_limit = student.call_limit, PROBE_SECONDS
    running = getattr(student.session, "running", lambda: None)
    left = [] if left is None else left
    if not left:
        left.append(leftovers(student))
    before, left_before = running(), left[-1]
    try:
        # idleness metered as after a hidden input: a module that sleeps that long at import or in forward
        # would end the child in every hidden check of the part that uses it (2026-11-28: causal.py's
        # `time.sleep(5)` cost mha 14 to 16 checks); here it ends the probe, 'hangs' (the grader's classes)
        with getattr(student.session, "metered_as_hidden", contextlib.nullcontext)():
            verdict = _judged(student, module)
        # a thread or process it left would act on the checks that follow in this child, whatever the verdict;
        # so would a hook on every module, an import finder, or another module put in sys.modules under a
        # name of the submission's (causal.py costing mha all 22 points with mha.py right: the redteam lane's
        # leftover 1)
        after = running()
        left[:] = [leftovers(student)]
        if before is not None and after is not None and after != before:
            return LEAVES
        return LEAVES if left[0] != left_before else verdict
    except SessionDied:
        return "hangs"
    finally:
        student.call_limit = limit


def leftovers(student):
    """The child's word on what the code run in it left that no operation puts back (inside/child.leftovers):
    a list of strings, or the error's type where it could not say (a difference counts as one left)."""
    try:
        answer = student.request("leftovers", {"module": "torch"})
    except StudentError as e:
        return [f"unreadable: {e.kind}"]
    return answer if isinstance(answer, list) else [f"unreadable: {type(answer).__name__}"]


def _judged(student, module):
    try:
        PROBES[module](student)
        return ""
    except StudentError:
        return "raises"
    except (Wrong, AssertionError, LookupError, TypeError, ValueError, AttributeError):
        return "wrong"


# the probed module left a thread or process running in the child, as the grader reads the child's /proc
# (PartChild.running): it may act on any later operation (2026-11-28: a thread started at import drawing from
# torch's generator moved mha's seeded book example, through causal.py). Replaced as one that hangs is, in a
# fresh child.
LEAVES = "leaves"



# every probe's sizes, (batch, tokens, d_in, d_out, context[, heads]; the wrapper's d_out per head): no two
# equal, so a mixup of two dimensions changes a shape or a value; the probes and their expected answers are
# built from these (tests/test_probe_sizes.py). The wrapper and MultiHeadAttention take the same inputs.
# masked_attention_weights takes (batch, heads, tokens, tokens) scores, as a student's mha.py may give them, and d_k
SIZES_APART = {"causal": (2, 4, 3, 5, 6), "wrapper": (6, 5, 3, 2, 9, 4), "mha": (6, 5, 3, 8, 9, 2),
               "masked": (2, 3, 4, 5), "simple": (5, 3)}  # simple_attention's: (tokens, d_in)
MASK_SIZES = (1, 5)  # causal_mask's: 5 tells an inverted mask, an off-by-one and a wrong size apart


def close(got, want):
    return isinstance(got, torch.Tensor) and tuple(got.shape) == tuple(want.shape) and \
        bool(torch.allclose(got.double(), want.double(), atol=1e-5, rtol=0))


def require(condition):
    if not condition:
        raise Wrong()


@functools.lru_cache(maxsize=1)
def expected():
    """The probes' inputs and the grader's answers: the same for every submission, computed once."""
    rng = torch.Generator().manual_seed(SEED)
    v1 = helpers.drawn_matrices(SEED, 3, 4)
    v2 = helpers.drawn_linears(SEED, helpers.qkv_layers(3, 4, False))
    v2_bias = helpers.drawn_linears(SEED, helpers.qkv_layers(3, 4, True))
    # no two of a probe's sizes equal (SIZES_APART): d_k == num_tokens let a head scaled by sqrt(num_tokens)
    # pass as right (then mha's checks used it), batch == num_heads hides heads and batch mixed up
    *causal_in, d_in, d_k, _ = SIZES_APART["causal"]
    *wrapper_in, wrapper_in_d, per_head_d, _, wrapper_heads = SIZES_APART["wrapper"]
    _, _, mha_in_d, mha_d, _, mha_heads = SIZES_APART["mha"]
    head = helpers.drawn_linears(SEED, helpers.qkv_layers(d_in, d_k, True))
    heads = helpers.drawn_linears(SEED, [(f"{i}.{name}", wrapper_in_d, per_head_d, False)
                                         for i in range(wrapper_heads) for name in helpers.QKV])
    mha = helpers.drawn_linears(SEED, helpers.qkv_layers(mha_in_d, mha_d, False) + [("out_proj", mha_d, mha_d, True)])
    x2, x3 = torch.rand(5, 3, generator=rng), torch.rand(*causal_in, d_in, generator=rng)
    x4 = torch.rand(*wrapper_in, wrapper_in_d, generator=rng)  # the wrapper's inputs and MultiHeadAttention's
    tokens_simple, d_simple = SIZES_APART["simple"]
    inputs = torch.rand(tokens_simple, d_simple, generator=rng)
    *heads_shape, tokens, masked_d_k = SIZES_APART["masked"]
    scores = (torch.rand(*heads_shape, tokens, tokens, generator=rng, dtype=torch.float64) - 0.5) * 6
    per_head = [{k.split(".", 1)[1]: v for k, v in heads.items() if k.startswith(f"{i}.")} for i in range(wrapper_heads)]
    return {
        "v1": (v1, x2, reference.attention(*(x2 @ v1[k] for k in helpers.QKV), causal=False)),  # type: ignore[misc]  # a star of 3
        "v2": (v2, x2, reference.single_head(x2, v2, causal=False)),
        "v2_bias": (v2_bias, x2, reference.single_head(x2, v2_bias, causal=False)),
        "causal": (x3, reference.single_head(x3, head)),
        "wrapper": (x4, torch.cat([reference.single_head(x4, h) for h in per_head], dim=-1)),
        "mha": (x4, reference.multi_head(x4, mha, mha_heads)),
        "masked": (scores, masked_d_k, reference.weights_from_scores(scores, masked_d_k, causal=True)),
        "simple": (inputs, {"softmax_naive": ((inputs[:, 0],), torch.softmax(inputs[:, 0], dim=0)),
                            "context_vector": ((inputs, 2), torch.softmax(inputs @ inputs[2], dim=0) @ inputs),
                            "attention_scores": ((inputs,), inputs @ inputs.T),
                            "attention_weights": ((inputs @ inputs.T,), torch.softmax(inputs @ inputs.T, dim=-1)),
                            "context_vectors": ((inputs,), torch.softmax(inputs @ inputs.T, dim=-1) @ inputs)}),
    }


def probe_self_attention(student, module, name, key, *options):
    """SelfAttention_v1 or _v2 after the seed: its parameters (by the contract's names) and its output, asked in
    one exchange (the probe's time limit is the exchange's)."""
    drawn, x, want = expected()[key]
    answers = student.plan([getattr(student.module(module), name).as_step(3, 4, *options, _seed=SEED),
                            Step("call", Step.on(0, "state_dict")), Step("call", Step.on(0), (x,))], one_limit=True)
    require(len(answers) == 3)
    state, output = outcome(answers[1]), outcome(answers[2])
    require(isinstance(state, dict) and sorted(state) == sorted(drawn) and all(close(state[k], drawn[k]) for k in drawn))
    require(close(output, want))


def probe_simple(student):
    """simple_attention's functions on tokens of the probe's own, each against the grader's math, in one
    exchange (a function a trainable attention may call: attention_weights, softmax_naive, ...)."""
    _, calls = expected()["simple"]
    answers = student.plan([Step("call", {"module": "simple_attention", "attr": name}, args)
                            for name, (args, _) in calls.items()], one_limit=True)
    require(len(answers) == len(calls))
    for answer, (_, want) in zip(answers, calls.values(), strict=True):
        require(close(outcome(answer), want))


def probe_v2(student):
    """SelfAttention_v2 without and with qkv_bias (a CausalAttention that inherits it passes qkv_bias on)."""
    probe_self_attention(student, "self_attention_v2", "SelfAttention_v2", "v2")
    probe_self_attention(student, "self_attention_v2", "SelfAttention_v2", "v2_bias", True)


def probe_causal(student):
    """Seeded weights (with biases), inputs shorter than the context: dropout off in eval mode, and
    dropout=0.0 in training mode (a head that ignores its dropout argument, such as a hard-coded
    nn.Dropout(0.5), drops weights in the wrapper's dropout-free checks): each output judged against
    the grader's math on the weights the seed gives (names are free here). Then the module's functions,
    which a student's mha.py may import (a causal_mask off by one cost mha 17 of 22 points with mha.py
    right): the masks of MASK_SIZES, and the weights of float64 scores of a batch of heads, in their dtype."""
    scores, d_k, weights = expected()["masked"]
    answers = student.plan([Step("call", {"module": "causal", "attr": "causal_mask"}, (n,)) for n in MASK_SIZES] +
                           [Step("call", {"module": "causal", "attr": "masked_attention_weights"}, (scores, d_k))],
                           one_limit=True)
    require(len(answers) == len(MASK_SIZES) + 1)
    for n, answer in zip(MASK_SIZES, answers, strict=False):
        mask = outcome(answer)
        require(isinstance(mask, torch.Tensor) and mask.dtype == torch.bool and
                torch.equal(mask, torch.ones(n, n, dtype=torch.bool).triu(1)))
    got = outcome(answers[-1])
    require(close(got, weights) and got.dtype == scores.dtype)
    x, want = expected()["causal"]
    _, _, d_in, d_k, context = SIZES_APART["causal"]
    head = student.module("causal").CausalAttention(d_in, d_k, context, 0.5, qkv_bias=True, _seed=SEED)
    head.eval()
    require(close(head(x), want))
    _, answer = helpers.built_and_called(student.module("causal").CausalAttention, (d_in, d_k, context, 0.0),
                                         {"qkv_bias": True}, SEED, (x,))
    require(close(answer(), want))


def probe_mha(student):
    """Both classes after a seed, on inputs shorter than the context, against the grader's math."""
    mha = student.module("mha")
    for key, cls in (("wrapper", mha.MultiHeadAttentionWrapper), ("mha", mha.MultiHeadAttention)):
        x, want = expected()[key]
        _, _, d_in, d_out, context, heads = SIZES_APART[key]
        require(close(cls(d_in, d_out, context, 0.0, num_heads=heads, _seed=SEED)(x), want))


PROBES: dict[str, Callable[..., Any]] = {"self_attention_v1": functools.partial(probe_self_attention, module="self_attention_v1",
                                                   name="SelfAttention_v1", key="v1"),
          "self_attention_v2": probe_v2,
          "causal": probe_causal, "mha": probe_mha, "simple_attention": probe_simple}
