"""Hidden checks for mha.py (book section 3.6): MultiHeadAttentionWrapper and MultiHeadAttention.

The wrapper is built from the student's own CausalAttention, so it is judged on its own terms:
its output must be the concatenation of its own heads' outputs, and its heads must be what
CausalAttention gives when made one after the other. A bug inside CausalAttention costs points
in causal only. The efficient MultiHeadAttention is judged against the grader's math (reference.py)
with seeded and with known weights, against stacked single heads, and for causality and dropout.
"""
import pytest
import torch

from autograder.suites import expect, helpers, reference
from autograder.suites.helpers import QKV
from autograder.suites.misconceptions import judge, matches, multi_head_mistakes, weights
from autograder.student import StudentError

pytestmark = pytest.mark.mha
PART = "mha"
MHA_ORDER = "W_query, W_key, W_value, out_proj"


# ---------------------------------------------------------------- the wrapper

def wrapper_heads(student, wrapper, num_heads, what):
    children = dict(wrapper.describe()["children"])
    if children.get("heads") != "ModuleList":
        raise AssertionError(f"{what} should keep its heads in an nn.ModuleList named heads; its children are "
                             f"{sorted(children.items())}")
    count = student.module("builtins").len(wrapper.get("heads"))  # a head listed twice counts twice
    if count != num_heads:
        raise AssertionError(f"{what} has {count} heads in self.heads; expected num_heads={num_heads}")
    return [wrapper.get(f"heads.{i}") for i in range(count)]


def concat_mistakes(outs):
    return [
        (torch.cat(outs, dim=0), "the heads' outputs are concatenated on dim 0 (the batch): concatenate on the last dim"),
        (torch.cat(outs, dim=1), "the heads' outputs are concatenated on dim 1 (the tokens): concatenate on the last dim"),
        (torch.stack(outs, dim=-1), "the heads' outputs are stacked on a new dim: concatenate them on the last dim"),
        (torch.cat(outs[::-1], dim=-1), "the heads' outputs are concatenated in reverse order: keep the head order"),
        (sum(outs), "the heads' outputs are added: concatenate them on the last dim"),
    ]


def head_draws(seed, d_in, d_out, num_heads, bias):
    layers = [(f"{i}.{name}", d_in, d_out, bias) for i in range(num_heads) for name in QKV]
    drawn = helpers.drawn_linears(seed, layers)
    return [{k.split(".", 1)[1]: v for k, v in drawn.items() if k.startswith(f"{i}.")} for i in range(num_heads)]


def same_state(a, b):
    return sorted(a) == sorted(b) and all(tuple(a[k].shape) == tuple(b[k].shape) and torch.allclose(
        a[k].double(), b[k].double(), atol=1e-6, rtol=0) for k in a)


def judge_wrapper_seeded(student, wrapper, x, want, what, seed, d_in, d_out, ctx, num_heads, bias, reveal=False):
    """Right output; or the wrapper's own fault (output is not its heads' concatenation, heads not
    made in turn after the seed); a difference that comes from CausalAttention is not charged here."""
    got = expect.as_tensor(wrapper(x), what)
    if matches(got, want, 1e-4):
        return
    heads = wrapper_heads(student, wrapper, num_heads, what)
    outs = [expect.as_tensor(head(x), f"{what}, head {i}") for i, head in enumerate(heads)]
    judge(got, torch.cat(outs, dim=-1), f"{what}, compared with the concatenation of its own heads' outputs",
          concat_mistakes(outs), reveal=reveal)
    for i in range(1, len(heads)):
        if heads[i].same_object(heads[0]):
            raise AssertionError(f"{what}: head {i} is the same CausalAttention object as head 0 (a list repeated "
                                 f"with *?): make a new CausalAttention for each head")
    drawn = head_draws(seed, d_in, d_out, num_heads, bias)
    states = [helpers.state_of(head, f"head {i}") for i, head in enumerate(heads)]
    first = student.module("causal").CausalAttention(d_in, d_out, ctx, 0.0, qkv_bias=bias, _seed=seed)
    first_state = helpers.state_of(first, "CausalAttention")
    params = [k for k in drawn[0]]
    if same_state({k: first_state[k] for k in params if k in first_state}, drawn[0]):
        for i, state in enumerate(states):
            problem = helpers.seeding_problem(state, drawn[i], seed)
            if problem:
                raise AssertionError(f"{what}: head {i} is not what the specification gives ({problem}); make the heads "
                                     f"one after the other, each a new CausalAttention(d_in, d_out, context_length, "
                                     f"dropout, qkv_bias), with no other random draws")
        return  # heads made as specified, output = their concatenation: the rest is CausalAttention's (causal)
    # this CausalAttention draws its weights differently (graded in causal); the wrapper must still make
    # its heads right after the seed, one after the other
    if not same_state({k: states[0][k] for k in first_state if k in states[0]}, first_state):
        raise AssertionError(f"{what}: head 0 does not hold what CausalAttention gives right after the seed: make the "
                             f"heads first thing in __init__, one after the other")
    if num_heads > 1 and all(same_state(s, states[0]) for s in states[1:]):
        raise AssertionError(f"{what}: all heads hold the same weights: make a new CausalAttention for each head")


def test_wrapper_book_example(student, book):
    wrapper = student.module(PART).MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2, _seed=123)
    judge_wrapper_seeded(student, wrapper, book.batch, book["mha_wrapper_seed123"],
                         "torch.manual_seed(123); MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)(batch)",
                         123, 3, 2, 6, 2, False, reveal=True)


def test_wrapper_builds_its_heads(student, rng):
    d_in, d_out, ctx, p, h = 4, 3, 7, 0.1, 3
    what = "MultiHeadAttentionWrapper(4, 3, 7, 0.1, num_heads=3, qkv_bias=True)"
    wrapper = student.module(PART).MultiHeadAttentionWrapper(d_in, d_out, ctx, p, num_heads=h, qkv_bias=True)
    heads = wrapper_heads(student, wrapper, h, what)
    for i in range(1, h):
        if heads[i].same_object(heads[0]):
            raise AssertionError(f"{what}: head {i} is the same CausalAttention object as head 0 (a list repeated "
                                 f"with *?): make a new CausalAttention for each head")
    x = torch.rand(2, ctx, d_in, generator=rng)  # num_tokens == context_length: shorter inputs are causal's
    for i, head in enumerate(heads):
        fresh = student.module("causal").CausalAttention(d_in, d_out, ctx, p, qkv_bias=True)
        mine, theirs = head.describe(), fresh.describe()
        if mine["class"] != theirs["class"] or mine["parameters"] != theirs["parameters"] or \
                mine["buffers"] != theirs["buffers"]:
            raise AssertionError(f"{what}: head {i} is not a CausalAttention(d_in, d_out, context_length, dropout, "
                                 f"qkv_bias) made with the wrapper's arguments")
        trained = {n for n, _, _ in theirs["parameters"]}
        helpers.load_known(fresh, {k: v for k, v in helpers.state_of(head, f"head {i}").items() if k in trained},
                           "CausalAttention")
        head.train()
        fresh.train()
        if not matches(expect.as_tensor(head(x, _seed=3), f"head {i}"), fresh(x, _seed=3), 1e-6):
            raise AssertionError(f"{what}: head {i} computes differently from CausalAttention(4, 3, 7, 0.1, qkv_bias=True) "
                                 f"with the same weights: pass dropout (and every other argument) on to each head")


def test_wrapper_concatenates_its_heads(student, rng):
    for d_in, d_out, ctx, h, b, T in ((4, 2, 8, 3, 3, 8), (3, 3, 4, 2, 1, 4)):
        what = f"MultiHeadAttentionWrapper({d_in}, {d_out}, {ctx}, 0.0, num_heads={h}) on {b}x{T} tokens"
        wrapper = student.module(PART).MultiHeadAttentionWrapper(d_in, d_out, ctx, 0.0, num_heads=h, qkv_bias=True)
        wrapper.eval()
        x = torch.rand(b, T, d_in, generator=rng)
        heads = wrapper_heads(student, wrapper, h, what)
        outs = [expect.as_tensor(head(x), f"head {i}") for i, head in enumerate(heads)]
        judge(wrapper(x), torch.cat(outs, dim=-1), f"{what}, compared with the concatenation of its own heads' outputs",
              concat_mistakes(outs))


def test_wrapper_unseen_seed(student, rng):
    seed, d_in, d_out, ctx, h, T = 5, 4, 3, 7, 3, 7
    x = torch.rand(1, T, d_in, generator=rng)
    want = torch.cat([reference.single_head(x, state) for state in head_draws(seed, d_in, d_out, h, True)], dim=-1)
    wrapper = student.module(PART).MultiHeadAttentionWrapper(d_in, d_out, ctx, 0.0, num_heads=h, qkv_bias=True, _seed=seed)
    judge_wrapper_seeded(student, wrapper, x, want, "MultiHeadAttentionWrapper(4, 3, 7, 0.0, num_heads=3, qkv_bias=True) "
                         "made after another seed", seed, d_in, d_out, ctx, h, True)


# ---------------------------------------------------------------- the efficient version

def mha_layers(d_in, d_out, bias):
    return helpers.qkv_layers(d_in, d_out, bias) + [("out_proj", d_out, d_out, True)]


def run(mha, x, what, _seed=0):
    try:
        return mha(x, _seed=_seed)
    except StudentError as e:
        if not e.not_implemented and any(w in e.message.lower() for w in ("size", "match", "shape", "view")):
            raise AssertionError(f"{what}: {e.explain()}. Hint: for inputs shorter than the context use "
                                 f"self.mask[:num_tokens, :num_tokens]; split with .view(b, num_tokens, num_heads, "
                                 f"head_dim) and merge with .contiguous().view(b, num_tokens, d_out)") from None
        raise


def test_mha_book_example(student, book):
    mha = student.module(PART).MultiHeadAttention(3, 2, 6, 0.0, num_heads=2, _seed=123)
    drawn = helpers.drawn_linears(123, mha_layers(3, 2, False))
    helpers.judge_seeded(mha(book.batch), book["mha_seed123"],
                         "torch.manual_seed(123); MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)(batch)", mha, drawn, 123,
                         lambda: multi_head_mistakes(book.batch, drawn, 2), book=True, reveal=True, order_hint=MHA_ORDER)


def test_mha_unseen_seeds(student, rng):
    for seed, d_in, d_out, ctx, h, T, b, bias in ((3, 4, 6, 8, 3, 5, 1, True), (99, 6, 4, 5, 2, 5, 3, False)):
        what = f"MultiHeadAttention({d_in}, {d_out}, {ctx}, 0.0, num_heads={h}, qkv_bias={bias}) made after another seed"
        x = torch.rand(b, T, d_in, generator=rng)
        mha = student.module(PART).MultiHeadAttention(d_in, d_out, ctx, 0.0, num_heads=h, qkv_bias=bias, _seed=seed)
        drawn = helpers.drawn_linears(seed, mha_layers(d_in, d_out, bias))
        helpers.judge_seeded(run(mha, x, what), reference.multi_head(x, drawn, h), what, mha, drawn, seed,
                             lambda: multi_head_mistakes(x, drawn, h), order_hint=MHA_ORDER)


def test_mha_math_with_known_weights(student, rng):
    for d_in, d_out, ctx, h, T, b, bias in ((4, 6, 8, 3, 5, 2, False), (3, 4, 4, 2, 4, 1, True), (5, 8, 10, 4, 7, 3, True),
                                            (2, 2, 3, 1, 3, 2, False), (4, 6, 8, 2, 1, 2, False)):
        what = f"MultiHeadAttention({d_in}, {d_out}, {ctx}, 0.0, num_heads={h}, qkv_bias={bias}) with known weights on " \
               f"{b}x{T} tokens"
        x = torch.rand(b, T, d_in, generator=rng)
        state = helpers.random_mha_state(d_in, d_out, rng, bias, scale=2.0)
        mha = student.module(PART).MultiHeadAttention(d_in, d_out, ctx, 0.0, num_heads=h, qkv_bias=bias)
        helpers.load_known(mha, state, f"MultiHeadAttention({d_in}, {d_out}, {ctx}, 0.0, num_heads={h}, qkv_bias={bias})")
        mha.eval()
        judge(run(mha, x, what), reference.multi_head(x, state, h), what, multi_head_mistakes(x, state, h),
              hint="Split into heads, scale by 1/sqrt(head_dim), mask, softmax over the last dim, merge, out_proj")


def test_mha_matches_stacked_single_heads(student, rng):
    d_in, h, hd, ctx, T = 4, 3, 2, 6, 6
    per_head = [helpers.random_qkv_state(d_in, hd, rng, scale=2.0) for _ in range(h)]
    stacked = {k: torch.cat([s[k] for s in per_head], dim=0) for k in per_head[0]}
    stacked["out_proj.weight"], stacked["out_proj.bias"] = torch.eye(h * hd), torch.zeros(h * hd)
    x = torch.rand(2, T, d_in, generator=rng)
    want = torch.cat([reference.single_head(x, s) for s in per_head], dim=-1)
    what = "MultiHeadAttention(4, 6, 6, 0.0, num_heads=3) holding three single heads' weights (out_proj = identity)"
    mha = student.module(PART).MultiHeadAttention(d_in, h * hd, ctx, 0.0, num_heads=h)
    helpers.load_known(mha, stacked, "MultiHeadAttention(4, 6, 6, 0.0, num_heads=3)")
    mha.eval()
    judge(run(mha, x, what), want, what, multi_head_mistakes(x, stacked, h),
          hint="it must equal the wrapper of those heads: head i uses output features i*head_dim .. (i+1)*head_dim - 1 "
               "of each projection, and the heads come back side by side in head order")


def test_mha_scales_by_head_dim(student, rng):
    d_in, d_out, h, T = 4, 8, 4, 5
    state = helpers.random_mha_state(d_in, d_out, rng, scale=4.0)
    x = torch.rand(2, T, d_in, generator=rng)
    what = "MultiHeadAttention(4, 8, 5, 0.0, num_heads=4) (head_dim 2) with known weights"
    mha = student.module(PART).MultiHeadAttention(d_in, d_out, T, 0.0, num_heads=h)
    helpers.load_known(mha, state, "MultiHeadAttention(4, 8, 5, 0.0, num_heads=4)")
    mha.eval()
    judge(run(mha, x, what), reference.multi_head(x, state, h), what, multi_head_mistakes(x, state, h),
          hint="each head's scores are scaled by 1/sqrt(head_dim), head_dim = d_out // num_heads")


def test_mha_rejects_indivisible_d_out(student):
    for d_in, d_out, h in ((3, 5, 2), (4, 6, 4)):
        try:
            student.module(PART).MultiHeadAttention(d_in, d_out, 6, 0.0, num_heads=h)
        except StudentError as e:
            if e.not_implemented:
                raise
            if e.kind not in ("ValueError", "AssertionError"):
                raise AssertionError(f"MultiHeadAttention({d_in}, {d_out}, 6, 0.0, num_heads={h}) raised {e.kind}; "
                                     f"when num_heads does not divide d_out raise a ValueError (or assert) with a clear "
                                     f"message, before creating any layer") from None
            continue
        raise AssertionError(f"MultiHeadAttention({d_in}, {d_out}, 6, 0.0, num_heads={h}) was created although d_out={d_out} "
                             f"is not divisible by num_heads={h}: check d_out % num_heads == 0 in __init__ and raise a "
                             f"ValueError (or assert) otherwise")
    student.module(PART).MultiHeadAttention(3, 6, 6, 0.0, num_heads=3)  # divisible: must be accepted


def test_mha_causal_and_dropout(student, rng):
    d_in, d_out, h, ctx, T = 4, 6, 2, 8, 6
    state = helpers.random_mha_state(d_in, d_out, rng, scale=2.0)
    name = "MultiHeadAttention(4, 6, 8, 0.5, num_heads=2)"
    mha = student.module(PART).MultiHeadAttention(d_in, d_out, ctx, 0.5, num_heads=h)
    helpers.load_known(mha, state, name)
    mha.eval()
    x = torch.rand(2, T, d_in, generator=rng)
    base = run(mha, x, f"{name} in eval mode", _seed=1)
    if not matches(expect.as_tensor(base, name), expect.as_tensor(run(mha, x, name, _seed=2), name), 0.0):
        raise AssertionError(f"{name} after .eval() gives different outputs from call to call: dropout is still active "
                             f"in eval mode (use self.dropout, an nn.Dropout)")
    judge(base, reference.multi_head(x, state, h), f"{name} in eval mode", multi_head_mistakes(x, state, h),
          hint="in eval mode dropout must do nothing")
    for t in range(T - 1):
        changed = x.clone()
        changed[:, t + 1:] = torch.rand(2, T - t - 1, d_in, generator=rng) * 4 - 2
        out = expect.shape(run(mha, changed, name), (2, T, d_out), name)
        if not torch.allclose(out[:, :t + 1], base[:, :t + 1], atol=1e-6, rtol=0):
            raise AssertionError(f"{name}: changing only the tokens after position {t} changed the outputs at positions "
                                 f"0..{t}: mask every score above the diagonal with -inf, in every head")
    # training mode, through identity projections: the output is the heads' attention weights side by side
    T, h, p, b = 5, 2, 0.2, 300
    d = h * T
    probe = helpers.random_mha_state(d, d, rng, scale=3.0)
    probe.update({"W_value.weight": torch.eye(d), "out_proj.weight": torch.eye(d), "out_proj.bias": torch.zeros(d)})
    name = "MultiHeadAttention(10, 10, 5, 0.2, num_heads=2)"
    mha = student.module(PART).MultiHeadAttention(d, d, T, p, num_heads=h)
    helpers.load_known(mha, probe, name)
    mha.train()
    x = torch.eye(T).repeat(1, h).expand(b, T, d).contiguous()
    train = expect.shape(run(mha, x, name, _seed=7), (b, T, d), name)
    q = reference.linear(x[:1], probe["W_query.weight"]).view(1, T, h, T).transpose(1, 2)
    k = reference.linear(x[:1], probe["W_key.weight"]).view(1, T, h, T).transpose(1, 2)
    eval_weights = weights(q @ k.transpose(-2, -1), T, True)  # (1, h, T, T)
    per_head = train.view(b, T, h, T).transpose(1, 2)
    again = expect.shape(run(mha, x, name, _seed=9), (b, T, d), name).view(b, T, h, T).transpose(1, 2)
    helpers.dropout_verdict(per_head, eval_weights.expand(b, h, T, T), p, name, again=again)


def test_mha_structure_and_gradients(student, rng):
    d_in, d_out, ctx, h = 4, 6, 7, 3
    name = "MultiHeadAttention(4, 6, 7, 0.0, num_heads=3)"
    mha = student.module(PART).MultiHeadAttention(d_in, d_out, ctx, 0.0, num_heads=h)
    info = mha.describe()
    table = [(n, tuple(s)) for n, s, _ in info["parameters"]]
    want = [("W_query.weight", (d_out, d_in)), ("W_key.weight", (d_out, d_in)), ("W_value.weight", (d_out, d_in)),
            ("out_proj.weight", (d_out, d_out)), ("out_proj.bias", (d_out,))]
    if not any(n.startswith("out_proj.") for n, _ in table):
        raise AssertionError(f"{name} has no out_proj: add self.out_proj = nn.Linear(d_out, d_out) after W_value and apply "
                             f"it to the merged heads")
    if sorted(table) != sorted(want):  # the creation order is judged by the seeded checks
        raise AssertionError(f"{name} should have the parameters {want}; it has {table}")
    buffers = {n: tuple(s) for n, s, _ in info["buffers"]}
    if buffers.get("mask") != (ctx, ctx):
        raise AssertionError(f"{name} should register a (context_length, context_length) buffer named 'mask' with "
                             f"self.register_buffer; its buffers are {buffers or 'none'}")
    state = helpers.random_mha_state(d_in, d_out, rng, scale=2.0, dtype=torch.float64)
    mha.double()
    helpers.load_known(mha, state, f"{name}.double()")
    mha.eval()
    x = torch.rand(2, 5, d_in, generator=rng, dtype=torch.float64)
    got = run(mha, x, f"{name}.double()")
    if getattr(got, "dtype", None) != torch.float64:
        raise AssertionError(f"{name}.double() on float64 inputs returns {getattr(got, 'dtype', type(got).__name__)}: "
                             f"compute in the dtype of the inputs and weights")
    judge(got, reference.multi_head(x, state, h), f"{name}.double() on float64 inputs", multi_head_mistakes(x, state, h),
          atol=1e-6)
    g = torch.rand(2, 5, d_out, generator=rng, dtype=torch.float64)
    want_grads = helpers.reference_grads(lambda s: reference.multi_head(x, s, h), state, g)
    helpers.compare_grads(mha.grads(x, grad_output=g), want_grads, "MultiHeadAttention", atol=1e-6)
    _, after = helpers.call_keeping_arguments(student, mha, x.clone())
    helpers.assert_unchanged([x], after, "MultiHeadAttention.forward")
