"""Hidden checks for mha.py (book section 3.6): MultiHeadAttentionWrapper and MultiHeadAttention.

The wrapper is built from the student's own CausalAttention, so it is judged on its own terms:
its output must be the concatenation of its own heads' outputs, and its heads must be what
CausalAttention gives when made one after the other. A bug inside CausalAttention costs points
in causal only. The efficient MultiHeadAttention is judged against the grader's math (reference.py)
with seeded and with known weights, against stacked single heads, and for causality and dropout.
"""
import torch

from autograder import source_reading
from autograder.student import RemoteObject, Step, StudentError, outcome
from autograder.suites import efficiency, expect, helpers, part_marker, reference, source_mistakes
from autograder.suites.helpers import QKV
from autograder.suites.misconceptions import (
    deferred,
    error_diagnosis,
    judge,
    matches,
    multi_head_mistakes,
    named_mistake,
    raised_in,
    weights,
)

pytestmark = part_marker("mha")
PART = "mha"
MHA_ORDER = "W_query, W_key, W_value, out_proj"
MHA_SIGNATURE = "MultiHeadAttention(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)"
WRAPPER_SIGNATURE = "MultiHeadAttentionWrapper(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)"


# ---------------------------------------------------------------- the wrapper

def wrapper_heads(student, wrapper, num_heads, what):
    """The wrapper's heads as handles, read one index at a time (a head listed twice counts twice)."""
    children = dict(wrapper.describe()["children"])
    if children.get("heads") != "ModuleList":
        expect.fail(f"{what} should keep its heads in an nn.ModuleList named heads", f"children: {sorted(children.items())}")
    heads = []
    for i in range(num_heads + 1):
        try:
            heads.append(wrapper.get(f"heads.{i}"))
        except StudentError:
            break
    if len(heads) != num_heads:
        expect.fail(f"{what} does not hold num_heads heads in self.heads", f"{len(heads)} heads, num_heads={num_heads}")
    return heads


@deferred
def concat_mistakes(outs):
    return [
        (torch.cat(outs, dim=0), "the heads' outputs are concatenated on dim 0 (the batch): concatenate on the last dim"),
        (torch.cat(outs, dim=1), "the heads' outputs are concatenated on dim 1 (the tokens): concatenate on the last dim"),
        (torch.stack(outs, dim=-1), "the heads' outputs are stacked on a new dim: concatenate them on the last dim"),
        (torch.cat(outs[::-1], dim=-1), "the heads' outputs are concatenated in reverse order: keep the head order"),
        (torch.stack(outs, dim=-1).flatten(-2),
         "the heads' outputs are interleaved (stacked on the last dim, then flattened): each head's d_out values must "
         "stay side by side in head order; concatenate them on the last dim (torch.cat(..., dim=-1))"),
        (sum(outs), "the heads' outputs are added: concatenate them on the last dim"),
    ]


# ---------------------------------------------------------------- the wrapper through stand-in heads

CAUSAL_PATCHES = (("mha", "CausalAttention"), ("causal", "CausalAttention"))
HEAD_ARGUMENTS = ("d_in", "d_out", "context_length", "dropout", "qkv_bias")


def stand_in_heads(student, d_in, d_out, num_heads, rng):
    """num_heads nn.Linear(d_in, d_out) modules made in the child with known weights: they stand in for
    CausalAttention, so the wrapper is judged whatever causal.py does. -> (handles, states)."""
    handles: list[RemoteObject] = []
    states: list[dict[str, torch.Tensor]] = []
    steps: list[Step] = []
    for _ in range(num_heads + 1):  # one spare: a wrapper that makes one head too many still gets a module
        state = {"weight": torch.rand(d_out, d_in, generator=rng) - 0.5, "bias": torch.rand(d_out, generator=rng) - 0.5}
        steps += [student.module("torch.nn").Linear.as_step(d_in, d_out),
                  Step("call", Step.on(len(steps), "load_state_dict"), (state,))]
        states.append(state)
    # every head's construction and load in one exchange (Student.plan): the grader looks at none of
    # their answers but to stop at an exception
    answers = student.plan(steps)
    for i, state in enumerate(states):
        if 2 * i + 1 < len(answers) or 2 * i < len(answers) and isinstance(answers[2 * i], StudentError):
            linear = outcome(answers[2 * i])
            outcome(answers[2 * i + 1])
        else:  # the plan stopped before a load, its construction gave no module: the rest as before, one by one
            linear = outcome(answers[2 * i]) if 2 * i < len(answers) else student.module("torch.nn").Linear(d_in, d_out)
            linear.load_state_dict(state)
        handles.append(linear)
    return handles, states


def build_with_stand_ins(student, d_in, d_out, ctx, p, num_heads, rng, bias=False, _seed=0):
    """MultiHeadAttentionWrapper(...) built with every CausalAttention it asks for replaced by a
    stand-in head -> (wrapper, recorded calls, stand-in states)."""
    handles, states = stand_in_heads(student, d_in, d_out, num_heads, rng)
    options = {"qkv_bias": True} if bias else {}
    wrapper, calls = student.record(student.module(PART).MultiHeadAttentionWrapper, d_in, d_out, ctx, p,
                                    num_heads=num_heads, patches=CAUSAL_PATCHES, returns=handles, _seed=_seed, **options)
    if not isinstance(wrapper, RemoteObject):
        expect.fail("MultiHeadAttentionWrapper(...) did not return a module")
    return wrapper, calls, states


def head_call_problem(calls, d_in, d_out, ctx, p, num_heads, bias):
    """'' when the wrapper asked for num_heads CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)."""
    if len(calls) == 1 and num_heads > 1:
        return ("the wrapper makes a single CausalAttention for all its heads (a list repeated with *?): make a new "
                "CausalAttention for each head")
    if len(calls) != num_heads:
        return "the wrapper does not make one CausalAttention per head (num_heads of them)"
    want = [d_in, d_out, ctx, p, bias]
    for call in calls:
        got = call.bound if call.bound is not None else call.args
        if [v for v in got[:5]] != want[:len(got[:5])] or len(got) < 4:
            return ("each head must be CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) with the "
                    "wrapper's own arguments, in this order")
    return ""


def extra_projection(got, concat):
    """Is got an affine map of the concatenated heads (an out_proj the wrapper should not have)?"""
    if got.dim() != concat.dim() or got.shape[:-1] != concat.shape[:-1]:
        return False
    rows = concat.reshape(-1, concat.shape[-1]).double()
    design = torch.cat([rows, torch.ones(rows.shape[0], 1, dtype=rows.dtype)], dim=1)
    target = got.reshape(-1, got.shape[-1]).double()
    if design.shape[0] <= design.shape[1]:
        return False
    solution = torch.linalg.lstsq(design, target).solution
    return bool(((design @ solution - target).abs().max() < 1e-4).item())


def heads_by_behaviour(student, d_in, d_out, ctx, num_heads, bias, x, what):
    """For a wrapper that makes no CausalAttention (by identity: it wrote a head class of its own): its
    heads judged by what they are -> (wrapper, each head's output on x), or None when they are not
    num_heads distinct modules that each compute causal attention with their own weights."""
    options = {"qkv_bias": True} if bias else {}
    wrapper = student.module(PART).MultiHeadAttentionWrapper(d_in, d_out, ctx, 0.0, num_heads=num_heads, **options)
    wrapper.eval()
    heads, outs = wrapper_heads(student, wrapper, num_heads, what), []
    names = [f"{n}.{kind}" for n in QKV for kind in (("weight", "bias") if bias else ("weight",))]
    for i, head in enumerate(heads):
        if any(head.same_object(other) for other in heads[:i]):
            return None
        order = [name for name, _ in helpers.parameter_order(head)]
        state = helpers.state_of(head, f"head {i}")
        if len(order) != len(names) or any(name not in state for name in order):
            return None
        own = {want: state[name] for want, name in zip(names, order, strict=True)}
        got = head(x)
        if not (isinstance(got, torch.Tensor) and matches(got, reference.single_head(x, own), 1e-5)):
            return None
        outs.append(got)
    return wrapper, outs


def judge_concatenation(student, rng, d_in, d_out, ctx, num_heads, b, T, what, case=""):
    """The wrapper's output with stand-in heads must be their outputs side by side, in head order;
    heads of a class of the student's own are judged by what they compute (heads_by_behaviour)."""
    wrapper, calls, states = build_with_stand_ins(student, d_in, d_out, ctx, 0.0, num_heads, rng)
    x = torch.rand(b, T, d_in, generator=rng)
    own = heads_by_behaviour(student, d_in, d_out, ctx, num_heads, False, x, what) if not calls else None
    if own is not None:
        wrapper, outs = own
        judge(expect.as_tensor(wrapper(x), what), torch.cat(outs, dim=-1), what, concat_mistakes(outs), atol=1e-5,
              case=case)
        return
    problem = head_call_problem(calls, d_in, d_out, ctx, 0.0, num_heads, False)
    if problem:
        expect.fail(f"{what}: {problem}", case)
    wrapper.eval()
    outs = [reference.linear(x, state["weight"], state["bias"]) for state in states[:num_heads]]
    concat = torch.cat(outs, dim=-1)
    got = expect.as_tensor(wrapper(x), what)
    # a reordering of the heads' features is an affine map too: a named mistake says which one first
    if not matches(got, concat, 1e-5) and not named_mistake(got, concat, concat_mistakes(outs), 1e-5) and \
            extra_projection(got, concat):
        expect.fail(f"{what}: the wrapper transforms the concatenated heads (an extra out_proj?): the book's "
                    f"MultiHeadAttentionWrapper only concatenates its heads' outputs; the projection belongs to "
                    f"MultiHeadAttention", case)
    judge(got, concat, what, concat_mistakes(outs), atol=1e-5, case=case)


def dependency_failed(error):
    """A StudentError raised inside causal.py: CausalAttention's bug, graded in causal."""
    return isinstance(error, StudentError) and not error.not_implemented and raised_in(error, "causal")


def head_draws(seed, d_in, d_out, num_heads, bias):
    layers = [(f"{i}.{name}", d_in, d_out, bias) for i in range(num_heads) for name in QKV]
    drawn = helpers.drawn_linears(seed, layers)
    return [{k.split(".", 1)[1]: v for k, v in drawn.items() if k.startswith(f"{i}.")} for i in range(num_heads)]


def same_state(a, b):
    return sorted(a) == sorted(b) and all(tuple(a[k].shape) == tuple(b[k].shape) and torch.allclose(
        a[k].double(), b[k].double(), atol=1e-6, rtol=0) for k in a)


CHANGED_HEADS = ("the wrapper's heads compute differently from CausalAttention as causal.py defines it, which is "
                 "right on its own: the wrapper must use CausalAttention as it is, and mha.py must change neither "
                 "the class nor its heads")
# the layers of a head's forward whose code file the child is asked for: the function itself and what it wraps
FORWARD_LAYERS = ("forward", "forward.__wrapped__", "forward.__wrapped__.__wrapped__")


def heads_changed_here(student, wrapper, num_heads):
    """Is a difference the wrapper's heads carry (their outputs side by side are the wrapper's, they hold the
    seed's weights, and still the output is not the specification's) this part's own doing? Where the heads
    are the grader's own stand-ins, it is. Where causal.py's CausalAttention is right on its own (the
    dependency probe, run on causal.py alone: Student.verdicts), it is when a head has forward hooks, or
    every module has (a head the probe found right has none to change its output), or the code it runs as
    its forward (the function or a function it wraps) was written in mha.py or is not causal.py's (the
    child says which file it compiled the code from, inside/child.origin; never the file name a code
    object carries, which mha.py may write): mha.py replaced CausalAttention.forward, or the wrapper its
    heads' or hooked them. Otherwise the difference is CausalAttention's, graded in causal (a bug the
    probe did not meet is one of them)."""
    if ("causal", "CausalAttention") in student.given:
        return True
    if student.verdicts.get("causal") != "":
        return False
    own = PART
    # hooks on every module (torch.nn.modules.module.register_module_forward_hook): none before student code
    everywhere = [Step("call", {"module": "torch.nn.modules.module", "attr": f"{hooks}.__len__"})
                  for hooks in ("_global_forward_hooks", "_global_forward_pre_hooks")]
    if any(type(answer) is int and answer > 0 for answer in student.plan(everywhere)):
        return True
    for i in range(num_heads):
        # its forward hooks and pre-hooks first (a plan stops at the first attribute a head lacks: __wrapped__)
        steps = [Step("call", {"handle": wrapper._id, "attr": f"heads.{i}.{hooks}.__len__"})
                 for hooks in ("_forward_hooks", "_forward_pre_hooks")]
        # the module each layer was written in, as the child compiled it from the submission's files
        # (inside/child.origin: never the file name a code object gives, which mha.py may have written)
        steps += [Step("origin", {"handle": wrapper._id, "attr": f"heads.{i}.{layer}"}) for layer in FORWARD_LAYERS]
        answers = student.plan(steps)
        if any(type(answer) is int and answer > 0 for answer in answers[:2]):
            return True
        origins = [answer for answer in answers[2:] if type(answer) is str]
        # written in mha.py, or the code the head runs (its innermost layer) is no code of causal.py's
        if own in origins or (origins and origins[-1] != "causal"):
            return True
    return False


def judge_wrapper_seeded(student, rng, build, x, want, what, seed, d_in, d_out, ctx, num_heads, bias, reveal=False,
                         case=""):
    """Right output; or the wrapper's own fault (output is not its heads' concatenation, heads not
    made in turn after the seed); a difference that comes from CausalAttention is not charged here,
    nor a CausalAttention that raises or whose output is degenerate (all zero, NaN, Inf): then the
    wrapper is judged through stand-in heads."""
    try:
        wrapper = build()
        got = expect.as_tensor(wrapper(x), what)
    except StudentError as e:
        if not dependency_failed(e):
            raise
        return judge_concatenation(student, rng, d_in, d_out, ctx, num_heads, 2, ctx, what, case)
    if matches(got, want, 1e-4):
        return
    heads = wrapper_heads(student, wrapper, num_heads, what)
    try:
        outs = [expect.as_tensor(head(x), f"{what}, head {i}") for i, head in enumerate(heads)]
    except StudentError as e:
        if not dependency_failed(e):
            raise
        return judge_concatenation(student, rng, d_in, d_out, ctx, num_heads, 2, ctx, what, case)
    if any(helpers.degenerate(out) for out in outs):  # all-zero heads say nothing of the wrapper: stand-ins do
        return judge_concatenation(student, rng, d_in, d_out, ctx, num_heads, 2, ctx, what, case)
    judge(got, torch.cat(outs, dim=-1), f"{what}, compared with the concatenation of its own heads' outputs",
          concat_mistakes(outs), reveal=reveal, case=case)
    for i in range(1, len(heads)):
        if heads[i].same_object(heads[0]):
            expect.fail(f"{what}: the heads are one CausalAttention object repeated (a list repeated with *?): make a "
                        f"new CausalAttention for each head", case)
    drawn = head_draws(seed, d_in, d_out, num_heads, bias)
    states = [helpers.state_of(head, f"head {i}") for i, head in enumerate(heads)]
    options = {"qkv_bias": True} if bias else {}
    first = student.module("causal").CausalAttention(d_in, d_out, ctx, 0.0, _seed=seed, **options)
    first_state = helpers.state_of(first, "CausalAttention")
    params = [k for k in drawn[0]]
    if same_state({k: first_state[k] for k in params if k in first_state}, drawn[0]):
        for i, state in enumerate(states):
            problem = helpers.seeding_problem(state, drawn[i], seed, book=reveal)
            if problem:
                expect.fail(f"{what}: the heads are not what the specification gives ({problem}); make the heads "
                            f"one after the other, each a new CausalAttention(d_in, d_out, context_length, "
                            f"dropout, qkv_bias), with no other random draws", case)
        if heads_changed_here(student, wrapper, num_heads):
            expect.fail(f"{what}: {CHANGED_HEADS}", case)
        return  # heads made as specified, output = their concatenation: the rest is CausalAttention's (causal)
    # this CausalAttention draws its weights differently (graded in causal); the wrapper must still make
    # its heads right after the seed, one after the other
    if not same_state({k: states[0][k] for k in first_state if k in states[0]}, first_state):
        expect.fail(f"{what}: the first head does not hold what CausalAttention gives right after the seed: make the "
                    f"heads first thing in __init__, one after the other", case)
    if num_heads > 1 and all(same_state(s, states[0]) for s in states[1:]):
        expect.fail(f"{what}: all heads hold the same weights: make a new CausalAttention for each head", case)


def test_wrapper_book_example(student, book, rng):
    judge_wrapper_seeded(student, rng, lambda: student.module(PART).MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2,
                                                                                              _seed=123),
                         book.batch, book["mha_wrapper_seed123"],
                         "torch.manual_seed(123); MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)(batch)",
                         123, 3, 2, 6, 2, False, reveal=True)


def test_wrapper_builds_its_heads(student, rng):
    d_in, d_out, ctx, p, h = 4, 3, 7, 0.1, 3
    what = "MultiHeadAttentionWrapper with qkv_bias=True and dropout"
    wrapper, calls, states = build_with_stand_ins(student, d_in, d_out, ctx, p, h, rng, bias=True)
    if not calls and heads_by_behaviour(student, d_in, d_out, ctx, h, True, torch.rand(2, ctx, d_in, generator=rng),
                                        what) is not None:
        return  # heads of a class of its own, each computing causal attention (with biases) as CausalAttention does
    problem = head_call_problem(calls, d_in, d_out, ctx, p, h, True)
    if problem:
        expect.fail(f"{what}: {problem}", f"MultiHeadAttentionWrapper({d_in}, {d_out}, {ctx}, {p}, num_heads={h}, "
                                          f"qkv_bias=True)")
    wrapper_heads(student, wrapper, h, what)


def test_wrapper_concatenates_its_heads(student, rng):
    for d_in, d_out, ctx, h, b, T in ((4, 2, 8, 3, 3, 8), (3, 3, 4, 2, 2, 4)):
        judge_concatenation(student, rng, d_in, d_out, ctx, h, b, T, "MultiHeadAttentionWrapper's output (its heads "
                            "replaced by the grader's stand-ins)", f"({d_in}, {d_out}, {ctx}, 0.0, num_heads={h}) on {b}x{T}")


def test_wrapper_unseen_seed(student, rng):
    seed, d_in, d_out, ctx, h, T = helpers.draw_seed(rng), 4, 3, 7, 3, 7
    x = torch.rand(1, T, d_in, generator=rng)
    want = torch.cat([reference.single_head(x, state) for state in head_draws(seed, d_in, d_out, h, True)], dim=-1)
    build = lambda: student.module(PART).MultiHeadAttentionWrapper(d_in, d_out, ctx, 0.0, num_heads=h,  # noqa: E731
                                                                   qkv_bias=True, _seed=seed)
    judge_wrapper_seeded(student, rng, build, x, want, "MultiHeadAttentionWrapper made after another seed", seed,
                         d_in, d_out, ctx, h, True, case=f"seed {seed}, ({d_in}, {d_out}, {ctx}, 0.0, num_heads={h}, "
                                                         f"qkv_bias=True)")


# ---------------------------------------------------------------- the efficient version

def mha_layers(d_in, d_out, bias):
    return helpers.qkv_layers(d_in, d_out, bias) + [("out_proj", d_out, d_out, True)]


SPLIT_HINT = ("the projections do not split into num_heads heads: head_dim must be d_out // num_heads, "
              "the split .view(b, num_tokens, num_heads, head_dim) and the merge "
              ".contiguous().view(b, num_tokens, d_out)")
MASK_HINT = "for inputs shorter than the context use self.mask[:num_tokens, :num_tokens]"


def shape_hint(message):
    """The likely cause of a shape error first: a reshape that cannot hold the elements is the head
    split (head_dim); a size mismatch elsewhere is most often the unsliced mask."""
    message = message.lower()
    if "invalid for input of size" in message or "view" in message:
        return f"{SPLIT_HINT}; or {MASK_HINT}"
    return f"{MASK_HINT}; or {SPLIT_HINT}"


def run(mha, x, what, _seed=0, eval_first=False, answer=None):
    """mha(x) (after mha.eval() where eval_first, in the same exchange: helpers.forward; answer: that
    call's answer, already asked for)."""
    answer = answer or helpers.forward(mha, x, _seed=_seed, eval_first=eval_first)
    try:
        return answer()
    except StudentError as e:
        if not e.not_implemented and any(w in e.message.lower() for w in ("size", "match", "shape", "view")):
            why = source_mistakes.shape_error_cause(mha._student.sources(), True, PART) \
                if isinstance(mha, RemoteObject) else ""
            if why:  # the grader's reading of mha.py shows the cause
                raise expect.Mismatch(f"{what}: {e.explain()}: {why}", student_text=e.student_text(), cause=why,
                                      kind="raised", hint=why) from None
            raise expect.Mismatch(f"{what}: {e.explain()}. Hint: {shape_hint(e.message)}",
                                  student_text=e.student_text()) from None
        raise


def make(student, d_in, d_out, ctx, dropout, num_heads, bias=False, _seed=0):
    """MultiHeadAttention(...), with qkv_bias=True passed only where it matters."""
    options = {"qkv_bias": True} if bias else {}
    return student.module(PART).MultiHeadAttention(d_in, d_out, ctx, dropout, num_heads=num_heads, _seed=_seed, **options)


def known(student, d_in, d_out, ctx, dropout, num_heads, state):
    """make(...) with state loaded (helpers.build_known: one exchange where the names are the module's)."""
    options = {"qkv_bias": True} if "W_query.bias" in state else {}
    return helpers.build_known(student.module(PART).MultiHeadAttention, (d_in, d_out, ctx, dropout),
                               {"num_heads": num_heads, **options}, state, "MultiHeadAttention")


def causality_problem(mha, x, base, rng, what):
    """Change only later tokens: the outputs of earlier ones must not move. Run before any value is
    compared, so that a missing or inverted mask is named as such."""
    T, d_in = x.shape[1], x.shape[2]
    for t in range(T - 1):
        changed = x.clone()
        changed[:, t + 1:] = torch.rand(x.shape[0], T - t - 1, d_in, generator=rng) * 4 - 2
        out = expect.shape(run(mha, changed, what), base.shape, what)
        if not torch.allclose(out[:, :t + 1], base[:, :t + 1], atol=1e-6, rtol=0):
            return t
    return None


def test_mha_book_example(student, book):
    mha, answer = helpers.built_and_called(student.module(PART).MultiHeadAttention, (3, 2, 6, 0.0), {"num_heads": 2},
                                           123, (book.batch,))
    drawn = helpers.drawn_linears(123, mha_layers(3, 2, False))
    helpers.judge_seeded(answer(), book["mha_seed123"],
                         "torch.manual_seed(123); MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)(batch)", mha, drawn, 123,
                         multi_head_mistakes(book.batch, drawn, 2), book=True, reveal=True, order_hint=MHA_ORDER,
                         part=PART)


def judge_seeded_mha(student, rng, d_in, d_out, ctx, h, T, b, bias):
    seed = helpers.draw_seed(rng)
    what = "MultiHeadAttention made after another seed, with other sizes" + (" and qkv_bias=True" if bias else "")
    case = f"seed {seed}, MultiHeadAttention({d_in}, {d_out}, {ctx}, 0.0, num_heads={h}, qkv_bias={bias}) on {b}x{T}"
    x = torch.rand(b, T, d_in, generator=rng)
    options = {"qkv_bias": True} if bias else {}  # make(...) and its forward in one exchange
    mha, answer = helpers.built_and_called(student.module(PART).MultiHeadAttention, (d_in, d_out, ctx, 0.0),
                                           {"num_heads": h, **options}, seed, (x,))
    drawn = helpers.drawn_linears(seed, mha_layers(d_in, d_out, bias))
    helpers.judge_seeded(run(mha, x, what, answer=answer), reference.multi_head(x, drawn, h), what, mha, drawn, seed,
                         multi_head_mistakes(x, drawn, h), order_hint=MHA_ORDER, case=case, part=PART)


def judge_known_mha(student, rng, d_in, d_out, ctx, h, T, b, bias, what="MultiHeadAttention with known weights",
                    hint="Split into heads, scale by 1/sqrt(head_dim), mask, softmax over the last dim, merge, out_proj"):
    case = f"MultiHeadAttention({d_in}, {d_out}, {ctx}, 0.0, num_heads={h}, qkv_bias={bias}) on {b}x{T} tokens"
    x = torch.rand(b, T, d_in, generator=rng)
    state = helpers.random_mha_state(d_in, d_out, rng, bias, scale=2.0)
    mha = known(student, d_in, d_out, ctx, 0.0, h, state)
    judge(run(mha, x, what, eval_first=True), reference.multi_head(x, state, h), what, multi_head_mistakes(x, state, h), hint=hint,
          case=case)


def test_mha_unseen_seeds(student, rng):
    for d_in, d_out, ctx, h, T, b in ((4, 6, 8, 3, 5, 1), (6, 4, 5, 2, 5, 3)):
        judge_seeded_mha(student, rng, d_in, d_out, ctx, h, T, b, False)


def test_mha_math_with_known_weights(student, rng):
    for d_in, d_out, ctx, h, T, b in ((4, 6, 8, 3, 5, 2), (5, 8, 10, 4, 7, 3), (2, 2, 3, 1, 3, 2), (4, 6, 8, 2, 1, 2)):
        judge_known_mha(student, rng, d_in, d_out, ctx, h, T, b, False)


def test_mha_qkv_bias(student, rng):
    judge_seeded_mha(student, rng, 4, 6, 8, 3, 5, 1, True)
    for d_in, d_out, ctx, h, T, b in ((3, 4, 4, 2, 4, 1), (5, 8, 10, 4, 7, 3)):
        judge_known_mha(student, rng, d_in, d_out, ctx, h, T, b, True, "MultiHeadAttention with qkv_bias=True")


def test_mha_matches_stacked_single_heads(student, rng):
    d_in, h, hd, ctx, T = 4, 3, 2, 6, 6
    per_head = [helpers.random_qkv_state(d_in, hd, rng, scale=2.0) for _ in range(h)]
    stacked = {k: torch.cat([s[k] for s in per_head], dim=0) for k in per_head[0]}
    stacked["out_proj.weight"], stacked["out_proj.bias"] = torch.eye(h * hd), torch.zeros(h * hd)
    x = torch.rand(2, T, d_in, generator=rng)
    want = torch.cat([reference.single_head(x, s) for s in per_head], dim=-1)
    what = "MultiHeadAttention holding several single heads' weights (out_proj = identity)"
    mha = known(student, d_in, h * hd, ctx, 0.0, h, stacked)
    judge(run(mha, x, what, eval_first=True), want, what, multi_head_mistakes(x, stacked, h),
          hint="it must equal the wrapper of those heads: head i uses output features i*head_dim .. (i+1)*head_dim - 1 "
               "of each projection, and the heads come back side by side in head order")


def test_mha_scales_by_head_dim(student, rng):
    judge_known_mha(student, rng, 4, 8, 5, 4, 5, 2, False, "MultiHeadAttention with several dimensions per head and known weights",
                    "each head's scores are scaled by 1/sqrt(head_dim), head_dim = d_out // num_heads")


def test_mha_rejects_indivisible_d_out(student):
    for d_in, d_out, h in ((3, 5, 2), (4, 6, 4)):
        try:
            student.module(PART).MultiHeadAttention(d_in, d_out, 6, 0.0, num_heads=h)
        except StudentError as e:
            if e.not_implemented:
                raise
            if e.kind not in ("ValueError", "AssertionError"):
                why = error_diagnosis(e, MHA_SIGNATURE)
                if why:
                    raise expect.Mismatch(f"MultiHeadAttention({d_in}, {d_out}, 6, 0.0, num_heads={h}): {e.explain()}: "
                                          f"{why}", student_text=e.student_text(), cause=why, kind="raised", hint=why) from None
                raise expect.Mismatch(f"MultiHeadAttention({d_in}, {d_out}, 6, 0.0, num_heads={h}): {e.explain()}; "
                                      f"when num_heads does not divide d_out raise a ValueError (or assert) with a clear "
                                      f"message, before creating any layer", student_text=e.student_text()) from None
            continue
        lines = source_reading.tuple_asserts(student.source(PART), "MultiHeadAttention")
        if lines:  # the grader's own reading of mha.py: a check that is there but can never fire
            expect.fail(f"MultiHeadAttention({d_in}, {d_out}, 6, 0.0, num_heads={h}) was created although d_out={d_out} "
                        f"is not divisible by num_heads={h}: your assert (mha.py, line {lines[0]}) is written "
                        f"assert (condition, \"message\"), a tuple, and a tuple is always true, so your check never "
                        f"fires; write assert condition, \"message\" (no parentheses around both), or raise a ValueError")
        expect.fail(f"MultiHeadAttention({d_in}, {d_out}, 6, 0.0, num_heads={h}) was created although d_out={d_out} "
                    f"is not divisible by num_heads={h}: check d_out % num_heads == 0 in __init__ and raise a "
                    f"ValueError (or assert) otherwise")
    student.module(PART).MultiHeadAttention(3, 6, 6, 0.0, num_heads=3)  # divisible: must be accepted


def test_mha_causal_and_dropout(student, rng):
    d_in, d_out, h, ctx, T = 4, 6, 2, 8, 6
    state = helpers.random_mha_state(d_in, d_out, rng, scale=2.0)
    name = "MultiHeadAttention with dropout"
    mha = known(student, d_in, d_out, ctx, 0.5, h, state)
    x = torch.rand(2, T, d_in, generator=rng)
    base = expect.shape(run(mha, x, f"{name} in eval mode", _seed=1, eval_first=True), (2, T, d_out), name)
    if not matches(base, expect.as_tensor(run(mha, x, name, _seed=2), name), 0.0):
        expect.fail(f"{name} after .eval() gives different outputs from call to call: dropout is still active "
                    f"in eval mode (use self.dropout, an nn.Dropout)")
    want = reference.multi_head(x, state, h)
    if causality_problem(mha, x, base, rng, name) is not None:
        # a mistake that explains the output explains the broken causality too (heads split or merged
        # without the transpose mix the tokens): it is named instead of the mask
        why = named_mistake(base, want, multi_head_mistakes(x, state, h))
        expect.fail(f"{name}: changing only later tokens changed the outputs of earlier ones: " + (
            why if why else "the mask is missing or wrong; fill every score above the diagonal with -inf, in every "
                            "head, before the softmax"), cause=why)
    if not matches(base, want, 1e-4):
        judge(base, want, f"{name} in eval mode", multi_head_mistakes(x, state, h),
              hint=eval_dropout_hint(known(student, d_in, d_out, ctx, 0.0, h, state), x, want, name))
    # training mode: each head's values are its tokens' one-hot inputs twice ([I; I]) and out_proj is the
    # identity, so each head's output row is that token's attention weights twice, side by side; dropout
    # on the weights drops the same entries in both copies, dropout on the context vectors does not
    T, h, p, b = 5, 2, 0.2, 300
    d_in, head_dim = h * T, 2 * T
    d = h * head_dim
    probe = helpers.random_mha_state(d_in, d, rng, scale=3.0)
    twice = torch.cat([torch.eye(T), torch.eye(T)])  # (2T, T)
    probe.update({"W_value.weight": torch.block_diag(*[twice] * h), "out_proj.weight": torch.eye(d),
                  "out_proj.bias": torch.zeros(d)})
    mha = known(student, d_in, d, T, p, h, probe)
    x = torch.eye(T).repeat(1, h).expand(b, T, d_in).contiguous()  # (b, T, h*T): each head sees one-hot tokens
    q = reference.linear(x[:1], probe["W_query.weight"]).view(1, T, h, head_dim).transpose(1, 2)
    k = reference.linear(x[:1], probe["W_key.weight"]).view(1, T, h, head_dim).transpose(1, 2)
    eval_weights = weights(q @ k.transpose(-2, -1), head_dim, True).expand(b, h, T, T)  # (b, h, T, T)

    def per_head(out):  # (b, T, d) -> the two copies, each (b, h, T, T)
        out = out.view(b, T, h, 2, T).permute(3, 0, 2, 1, 4)
        return out[0], out[1]

    own, own_copy = per_head(expect.shape(run(mha, x, name, eval_first=True), (b, T, d), name))
    if not (matches(own, eval_weights, 1e-5) and matches(own_copy, eval_weights, 1e-5)):
        return  # the attention itself is wrong, judged above and by the math checks; dropout cannot be seen here
    mha.train()
    train, train_copy = per_head(expect.shape(run(mha, x, name, _seed=7), (b, T, d), name))
    again, _ = per_head(expect.shape(run(mha, x, name, _seed=9), (b, T, d), name))
    # NaN is never equal to itself: weights made NaN (dropout on the -inf scores) are dropout_verdict's to name
    if not torch.equal(train, train_copy) and not (train.isnan().any() or train_copy.isnan().any()):
        expect.fail(f"{name} in training mode: dropout acts on the values or the context vectors (or twice): "
                    f"apply it once, to the attention weights, after the softmax and before they multiply the values")
    helpers.dropout_verdict(train, eval_weights, p, name, again=again)
    helpers.trains(mha, x[:2], (2, T, d), name)


def eval_dropout_hint(plain, x, want, what):
    """Dropout is named as the cause of a wrong eval-mode output only when the same module with
    dropout=0.0 computes the right numbers; otherwise the computation itself is wrong."""
    if matches(expect.as_tensor(run(plain, x, what, eval_first=True), what), want, 1e-4):
        return "with dropout=0.0 the same module is right: in eval mode dropout must do nothing"
    return "the same module with dropout=0.0 is wrong too: the attention itself is not the specified computation"


def test_mha_structure(student):
    d_in, d_out, ctx, h = 4, 6, 7, 3
    name = "MultiHeadAttention"
    mha = make(student, d_in, d_out, ctx, 0.0, h)
    table = helpers.parameter_order(mha)
    shapes = sorted(shape for _, shape in table)
    want = sorted([(d_out, d_in)] * 3 + [(d_out, d_out), (d_out,)])
    if shapes == sorted([(d_out, d_in)] * 3):
        expect.fail(f"{name} has no out_proj: add self.out_proj = nn.Linear(d_out, d_out) after W_value and apply it to "
                    f"the merged heads")
    if shapes != want:
        expect.fail(f"{name} should have W_query, W_key, W_value (nn.Linear(d_in, d_out)) and out_proj "
                    f"(nn.Linear(d_out, d_out), with bias)", f"it has {table}")
    mask = helpers.square_buffer(mha, ctx)
    if mask is None:
        expect.fail(f"{name} should register its (context_length, context_length) causal mask with "
                    f"self.register_buffer (under any name), as CausalAttention does")
    helpers.mask_kept_whole(mha, ctx, d_in, name)


def test_mha_batches_the_heads(student, rng):
    """3.6.2's point: one set of projections and batched matmuls for all heads. The same d_out with 2
    and with 4 heads: the forward must not issue more matmuls (or softmaxes, or any other operation that
    computes: efficiency.per_head_work) with more heads. Each
    count is taken on a call whose output is judged right first (the counts come from the student's
    process)."""
    d_in, d_out, ctx, T, b = 6, 8, 8, 6, 2
    name = "MultiHeadAttention"
    counts = {}
    for h in (2, 4):
        state = helpers.random_mha_state(d_in, d_out, rng, scale=2.0)
        mha = known(student, d_in, d_out, ctx, 0.0, h, state)
        x = torch.rand(b, T, d_in, generator=rng)
        what = f"{name} with {h} heads"
        run(mha, x, what, eval_first=True)  # a first call: whatever a module sets up once is not counted
        answer = mha.count_ops(x)
        judge(efficiency.counted_output(answer, what), reference.multi_head(x, state, h), what,
              multi_head_mistakes(x, state, h), case=f"({d_in}, {d_out}, {ctx}, 0.0, num_heads={h}) on {b}x{T}")
        counts[h] = efficiency.read_counts(answer, what)
    # code reaching into what the measurement relies on earns nothing from it (the grader's reading)
    problem = efficiency.untrusted(efficiency.sources_run(student), PART) or efficiency.growth_problem(counts[2], counts[4], 2, 4) \
        or efficiency.per_head_work(counts[2], counts[4])
    # against a bound the student's head count does not move: the grader's own batched computation
    for h in (2, 4):
        problem = problem or efficiency.bound_problem(counts[h], efficiency.reference_counts(d_in, d_out, ctx, h,
                                                                                             (b, T, d_in)))
    # passes only when the grader's own reading of mha.py agrees with the child's counts
    problem = problem or efficiency.source_loop_problem(efficiency.sources_run(student), name, PART,
                                                            efficiency.where_bound(student, PART, name))
    if problem:
        expect.fail(f"{name}: {problem}", f"matmul-like calls {efficiency.matmul_calls(counts[2])} with 2 heads, "
                                           f"{efficiency.matmul_calls(counts[4])} with 4")


def test_mha_runs_on_the_inputs_device(student, rng):
    """Right on the CPU first; then on the emulated GPU (inside/emulated_gpu.py) with inputs on cuda."""
    d_in, d_out, ctx, h, T = 4, 6, 8, 2, 6
    name = "MultiHeadAttention"
    state = helpers.random_mha_state(d_in, d_out, rng, scale=2.0)
    mha = known(student, d_in, d_out, ctx, 0.0, h, state)
    x = torch.rand(2, T, d_in, generator=rng)
    what = f"{name} (before it is moved to another device)"
    judge(run(mha, x, what, eval_first=True), reference.multi_head(x, state, h), what, multi_head_mistakes(x, state, h))
    sources, pointer = efficiency.sources_run(student), efficiency.where_bound(student, PART, name)
    problem = efficiency.untrusted(sources, PART) or \
        efficiency.device_problem(mha, x, (2, T, d_out), name, efficiency.has_plain_mask(mha),
                                  efficiency.machine_query(sources, name, PART, pointer))
    problem = problem or efficiency.source_device_problem(sources, name, PART, pointer)
    if problem:
        expect.fail(problem)


def test_mha_float64_and_gradients(student, rng):
    d_in, d_out, ctx, h = 4, 6, 7, 3
    name = "MultiHeadAttention after .double()"
    state = helpers.random_mha_state(d_in, d_out, rng, scale=2.0, dtype=torch.float64)
    mha = helpers.build_known(student.module(PART).MultiHeadAttention, (d_in, d_out, ctx, 0.0), {"num_heads": h},
                              state, name, then=("double",))
    mha.eval()
    x = torch.rand(2, 5, d_in, generator=rng, dtype=torch.float64)
    got, after = helpers.call_keeping_arguments(student, mha, x.clone())
    if getattr(got, "dtype", None) != torch.float64:
        expect.fail(f"{name} on float64 inputs returns {getattr(got, 'dtype', type(got).__name__)}: compute in the "
                    f"dtype of the inputs and weights")
    judge(got, reference.multi_head(x, state, h), f"{name} on float64 inputs", multi_head_mistakes(x, state, h),
          atol=1e-6)
    helpers.assert_unchanged([x], after, "MultiHeadAttention.forward")
    g = torch.rand(2, 5, d_out, generator=rng, dtype=torch.float64)
    want_grads = helpers.reference_grads(lambda s: reference.multi_head(x, s, h), state, g)
    helpers.compare_grads(*helpers.grads_and_reference(mha, x, g, want_grads), "MultiHeadAttention",
                          atol=1e-6)


helpers.diagnose_errors(globals(), lambda check: WRAPPER_SIGNATURE if check.startswith("test_wrapper") else MHA_SIGNATURE,
                        lambda check, student, error: "" if check.startswith("test_wrapper") or error.kind != "RuntimeError"
                        else source_mistakes.shape_error_cause(student.sources(), True, PART))
