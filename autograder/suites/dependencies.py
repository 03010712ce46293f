"""Which other parts a part's checks use, and whether the student's own code for them may be used.

weight_transfer hands the student's SelfAttention_v1 and _v2 to the student's transfer function,
mha's wrapper builds the student's CausalAttention, exercises build mha's classes. Such a check is
about the interaction, and may cost points only when the other part is right on its own. That is
judged here, on data, once per submission and before any hidden input reaches the child: a short
probe builds the other part's classes after a seed the grader knows and compares their weights and
outputs with its own math (reference.py). A part whose probe fails, raises or runs past
PROBE_SECONDS is replaced, for the checks of the parts that use it, by the grader's own module
(reference_parts.py) in the child. A part never receives its own replacement.

Names: SelfAttention_v1 and _v2 must hold W_query, W_key and W_value (the contract there, graded in
their own parts); CausalAttention and MultiHeadAttention may name their layers as they like.
"""
import torch

from autograder.student import SessionDied, StudentError
from autograder.suites import helpers, reference
from autograder.suites.reference_parts import SOURCES

DEPENDS = {"weight_transfer": ("self_attention_v1", "self_attention_v2"), "mha": ("causal",),
           "exercises": ("causal", "mha")}
PROBE_SECONDS = 2  # of CPU time per remote call of a probe: a part that runs longer is replaced
SEED = 2024


class Wrong(Exception):
    """The probed part is not right on its own."""


def verdicts(student, part, known):
    """{module: '' (right on its own), 'wrong', 'raises' or 'hangs'} for the parts `part` uses;
    known: the submission's verdicts so far (filled in here). A probe that ran past its time ends
    the child: the caller starts another."""
    for module in DEPENDS.get(part, ()):
        if module not in known and not student.session.died:
            known[module] = probe(student, module)
    return {module: known.get(module, "hangs") for module in DEPENDS.get(part, ())}


def substitutes(found):
    """{module: the grader's source} for the parts found not right on their own, in import order."""
    return {module: source for module, source in SOURCES.items() if found.get(module)}


def probe(student, module):
    limit, student.call_limit = student.call_limit, PROBE_SECONDS
    try:
        PROBES[module](student, torch.Generator().manual_seed(SEED))
        return ""
    except SessionDied:
        return "hangs"
    except StudentError:
        return "raises"
    except (Wrong, AssertionError, LookupError, TypeError, ValueError, AttributeError):
        return "wrong"
    finally:
        student.call_limit = limit


def close(got, want):
    return isinstance(got, torch.Tensor) and tuple(got.shape) == tuple(want.shape) and \
        bool(torch.allclose(got.double(), want.double(), atol=1e-5, rtol=0))


def require(condition):
    if not condition:
        raise Wrong()


def probe_v1(student, rng):
    d_in, d_out = 3, 4
    v1 = student.module("self_attention_v1").SelfAttention_v1(d_in, d_out, _seed=SEED)
    drawn = helpers.drawn_matrices(SEED, d_in, d_out)
    state = helpers.state_of(v1, "probe")
    require(sorted(state) == sorted(drawn) and all(close(state[k], drawn[k]) for k in drawn))
    x = torch.rand(5, d_in, generator=rng)
    want = reference.attention(*(x @ drawn[k] for k in helpers.QKV), causal=False)
    require(close(v1(x), want))


def probe_v2(student, rng):
    d_in, d_out = 3, 4
    v2 = student.module("self_attention_v2").SelfAttention_v2(d_in, d_out, _seed=SEED)
    drawn = helpers.drawn_linears(SEED, helpers.qkv_layers(d_in, d_out, False))
    state = helpers.state_of(v2, "probe")
    require(sorted(state) == sorted(drawn) and all(close(state[k], drawn[k]) for k in drawn))
    x = torch.rand(5, d_in, generator=rng)
    require(close(v2(x), reference.single_head(x, drawn, causal=False)))


def probe_causal(student, rng):
    """Seeded weights (with biases), dropout off in eval mode, inputs shorter than the context: one
    output, judged against the grader's math on the weights the seed gives (names are free here)."""
    d_in, d_out, ctx = 3, 4, 6
    head = student.module("causal").CausalAttention(d_in, d_out, ctx, 0.5, qkv_bias=True, _seed=SEED)
    head.eval()
    x = torch.rand(2, ctx - 2, d_in, generator=rng)
    drawn = helpers.drawn_linears(SEED, helpers.qkv_layers(d_in, d_out, True))
    require(close(head(x), reference.single_head(x, drawn)))


def probe_mha(student, rng):
    """Both classes after a seed, on inputs shorter than the context, against the grader's math."""
    d_in, d_out, ctx, h = 3, 4, 6, 2
    mha = student.module("mha")
    x = torch.rand(2, ctx - 1, d_in, generator=rng)
    wrapper = mha.MultiHeadAttentionWrapper(d_in, 2, ctx, 0.0, num_heads=h, _seed=SEED)
    drawn = helpers.drawn_linears(SEED, [(f"{i}.{name}", d_in, 2, False) for i in range(h) for name in helpers.QKV])
    heads = [{k.split(".", 1)[1]: v for k, v in drawn.items() if k.startswith(f"{i}.")} for i in range(h)]
    require(close(wrapper(x), torch.cat([reference.single_head(x, head) for head in heads], dim=-1)))
    efficient = mha.MultiHeadAttention(d_in, d_out, ctx, 0.0, num_heads=h, _seed=SEED)
    drawn = helpers.drawn_linears(SEED, helpers.qkv_layers(d_in, d_out, False) + [("out_proj", d_out, d_out, True)])
    require(close(efficient(x), reference.multi_head(x, drawn, h)))


PROBES = {"self_attention_v1": probe_v1, "self_attention_v2": probe_v2, "causal": probe_causal, "mha": probe_mha}
