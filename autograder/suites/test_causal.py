"""Hidden checks for causal.py (book section 3.5): mask, masked softmax, CausalAttention with dropout.

Beyond the book's printed outputs: other seeds and sizes, known weights, causality by perturbing
later tokens, the attention weights themselves (seen through identity value projections: with
d_in = d_out = num_tokens, x = identity rows and W_value = I, the output IS the weight matrix),
dropout judged by its statistics (never by a particular mask), the mask buffer, float64 and
gradients, and inputs left unchanged.
"""
import torch

from autograder.student import RemoteObject, Step, StudentError, outcome
from autograder.suites import efficiency, expect, helpers, part_marker, reference, source_mistakes
from autograder.suites.helpers import QKV
from autograder.suites.misconceptions import (
    HIDES_DIAGONAL,
    SEES_NEXT,
    attention_mistakes,
    deferred,
    judge,
    matches,
    weight_mistakes,
    weights,
)

pytestmark = part_marker("causal")
PART = "causal"
SLICE_HINT = ("the mask is (context_length, context_length): use its first num_tokens rows and columns, "
              "self.mask[:num_tokens, :num_tokens], for inputs shorter than the context")


def projections(x, state):
    return tuple(reference.linear(x, state[f"{n}.weight"], state.get(f"{n}.bias")) for n in QKV)


def causal_output(x, state):
    return reference.single_head(x, state, causal=True)


@deferred
def causal_mistakes(x, state):
    return attention_mistakes(*projections(x, state), causal=True, d_in=x.shape[-1])


def identity_probe(T, rng, value=None, d_out=None):
    """State and input under which CausalAttention(T, d_out, ...) (d_out: T unless given, at least T)
    returns its attention weights, in the output's first T columns (the value projection is the
    identity with zero rows below it)."""
    d_out = d_out or T
    state = helpers.random_qkv_state(T, d_out, rng, scale=3.0)
    state["W_value.weight"] = torch.eye(d_out, T) if value is None else value
    return state, torch.eye(T)


def probe_weights(state, T):
    x = torch.eye(T)
    q, k, _ = projections(x, state)
    return q @ k.T


def run(attn, x, what, _seed=0, eval_first=False, answer=None):
    """attn(x) (after attn.eval() where eval_first, in the same exchange: helpers.forward; answer: that
    call's answer, already asked for), turning the classic error of an unsliced mask into a hint."""
    answer = answer or helpers.forward(attn, x, _seed=_seed, eval_first=eval_first)
    try:
        return answer()
    except StudentError as e:
        if not e.not_implemented and any(w in e.message.lower() for w in ("size", "match", "shape")):
            why = source_mistakes.shape_error_cause(attn._student.sources(), False, PART) \
                if isinstance(attn, RemoteObject) else ""
            if why:  # the grader's reading of causal.py shows the cause
                raise expect.Mismatch(f"{what}: {e.explain()}: {why}", student_text=e.student_text(), cause=why,
                                      kind="raised", hint=why) from None
            raise expect.Mismatch(f"{what}: {e.explain()}. Hint: {SLICE_HINT}", student_text=e.student_text()) from None
        raise


def make(student, d_in, d_out, ctx, dropout, bias=False, _seed=0):
    """CausalAttention(d_in, d_out, ctx, dropout), with qkv_bias=True passed only where it matters."""
    options = {"qkv_bias": True} if bias else {}
    return student.module(PART).CausalAttention(d_in, d_out, ctx, dropout, _seed=_seed, **options)


def known(student, d_in, d_out, ctx, dropout, state):
    """make(...) with state loaded (helpers.build_known: one exchange where the names are the module's)."""
    options = {"qkv_bias": True} if any(k.endswith(".bias") for k in state) else {}
    return helpers.build_known(student.module(PART).CausalAttention, (d_in, d_out, ctx, dropout), options, state,
                               "CausalAttention")


def right_on(attn, x, state, what, case=""):
    """attn(x) in eval mode, judged first (a property means nothing on a wrong output) -> the output."""
    got = expect.shape(run(attn, x, what, eval_first=True), (*x.shape[:-1], state["W_query.weight"].shape[0]), what, case=case)
    judge(got, causal_output(x, state), what, causal_mistakes(x, state), case=case)
    return got


def test_causal_mask_marks_the_future(student):
    judge_masks(student, (4, 7, 1))  # a 1x1 mask cannot tell an inverted mask from an off-by-one one: last


def test_causal_mask_unseen_sizes(student, rng):
    """Sizes the student never sees (causal_mask_marks_the_future's are printed in its messages, and
    requires this check: a mask written out for 4, 7 and 1 earns nothing)."""
    judge_masks(student, [int(n) for n in torch.randint(8, 40, (2,), generator=rng)] + [2])


def judge_masks(student, sizes):
    # every size asked in one exchange (a plan stops at the first that raises: its error is raised here)
    answers = student.plan([Step("call", {"module": PART, "attr": "causal_mask"}, (n,)) for n in sizes])
    for answer in answers:
        outcome(answer)
    expect.true(len(answers) == len(sizes), "causal_mask did not answer for every size")  # a child's short reply
    for n, answer in zip(sizes, answers, strict=True):
        mask = expect.as_tensor(outcome(answer), f"causal_mask({n})")
        expect.shape(mask, (n, n), f"causal_mask({n})")
        want = torch.ones(n, n, dtype=torch.bool).triu(1)
        expect.true(mask.dtype == torch.bool, f"causal_mask({n}) should be a bool tensor, got {mask.dtype}")
        if n > 1 and torch.equal(mask, torch.ones(n, n, dtype=torch.bool).triu(0)):
            expect.fail("causal_mask also hides the diagonal (off by one): a token must be allowed to attend "
                        "to itself (use triu with diagonal=1)", cause=HIDES_DIAGONAL)
        if n > 1 and torch.equal(mask, torch.ones(n, n, dtype=torch.bool).triu(2)):
            expect.fail("causal_mask's diagonal is off by one: it lets each token see the next one (use triu "
                        "with diagonal=1)", cause=SEES_NEXT)
        if torch.equal(mask, ~want):
            expect.fail("causal_mask is inverted: True must mark the positions ABOVE the diagonal (the future)")
        expect.true(torch.equal(mask, want), f"causal_mask({n}) should be True exactly above the diagonal")


def test_masked_weights_book_example(student, book):
    scores = book["attn_scores_sa_v2"]
    got = student.module(PART).masked_attention_weights(scores, 2)
    judge(got, book["causal_attn_weights"], "masked_attention_weights(book scores, d_k=2)",
          weight_mistakes(scores, 2, True), reveal=True,
          hint="Set the future scores to -inf, divide by sqrt(d_k), then softmax over the last dim")


def test_masked_weights_unseen_scores(student, rng):
    for shape, d_k, dtype in (((2, 5, 5), 3, torch.float32), ((7, 7), 16, torch.float32), ((1, 1), 4, torch.float32),
                              ((4, 4), 2, torch.float64)):
        scores = ((torch.rand(shape, generator=rng, dtype=torch.float64) - 0.5) * 6).to(dtype)
        got = student.module(PART).masked_attention_weights(scores, d_k)
        judge(got, weights(scores.double(), d_k, True), "masked_attention_weights on other scores",
              weight_mistakes(scores.double(), d_k, True), atol=1e-5, case=f"scores {shape}, d_k={d_k}, {dtype}")


def test_causal_inputs_left_unchanged(student, rng):
    scores = torch.rand(2, 4, 4, generator=rng)
    got, after = helpers.call_keeping_arguments(student, student.module(PART).masked_attention_weights, scores.clone(), 2)
    judge(got, weights(scores.double(), 2, True), "masked_attention_weights", weight_mistakes(scores.double(), 2, True),
          atol=1e-5)
    helpers.assert_unchanged([scores], after[:1], "masked_attention_weights")
    state = helpers.random_qkv_state(4, 3, rng, scale=2.0)
    attn = known(student, 4, 3, 6, 0.0, state)
    attn.eval()
    x = torch.rand(2, 5, 4, generator=rng)
    got, after = helpers.call_keeping_arguments(student, attn, x.clone())
    judge(got, causal_output(x, state), "CausalAttention.forward", causal_mistakes(x, state))
    helpers.assert_unchanged([x], after, "CausalAttention.forward")


def test_causal_attention_book_example(student, book):
    attn, answer = helpers.built_and_called(student.module(PART).CausalAttention, (3, 2, 6, 0.0), {}, 123, (book.batch,))
    drawn = helpers.drawn_linears(123, helpers.qkv_layers(3, 2, False))
    helpers.judge_seeded(answer(), book["causal_attention_seed123"],
                         "torch.manual_seed(123); CausalAttention(3, 2, 6, 0.0)(batch)", attn, drawn, 123,
                         causal_mistakes(book.batch, drawn), book=True, reveal=True, part=PART)


def judge_seeded_causal(student, rng, d_in, d_out, ctx, T, b, bias):
    seed = helpers.draw_seed(rng)
    x = torch.rand(b, T, d_in, generator=rng)
    what = "CausalAttention made after another seed, with other sizes" + (" and qkv_bias=True" if bias else "")
    case = f"seed {seed}, CausalAttention({d_in}, {d_out}, {ctx}, 0.0, qkv_bias={bias}) on {b}x{T} tokens"
    options = {"qkv_bias": True} if bias else {}  # make(...) and its forward in one exchange
    attn, answer = helpers.built_and_called(student.module(PART).CausalAttention, (d_in, d_out, ctx, 0.0), options, seed,
                                            (x,))
    drawn = helpers.drawn_linears(seed, helpers.qkv_layers(d_in, d_out, bias))
    helpers.judge_seeded(run(attn, x, what, answer=answer), causal_output(x, drawn), what, attn, drawn, seed,
                         causal_mistakes(x, drawn), case=case, part=PART)


def judge_known_causal(student, rng, d_in, d_out, T, ctx, bias, b):
    x = torch.rand(b, T, d_in, generator=rng)
    state = helpers.random_qkv_state(d_in, d_out, rng, bias, scale=2.0)
    what = "CausalAttention with known weights" + (" and qkv_bias=True" if bias else "")
    attn = known(student, d_in, d_out, ctx, 0.0, state)
    judge(run(attn, x, what, eval_first=True), causal_output(x, state), what, causal_mistakes(x, state),
          hint="Check the 1/sqrt(d_k) scaling, the mask and the softmax dim",
          case=f"CausalAttention({d_in}, {d_out}, {ctx}, 0.0, qkv_bias={bias}) on {b}x{T} tokens")


def test_causal_attention_unseen_seeds(student, rng):
    for d_in, d_out, ctx, T, b in ((4, 3, 8, 5, 1), (3, 5, 6, 6, 3)):
        judge_seeded_causal(student, rng, d_in, d_out, ctx, T, b, False)


def test_causal_attention_math_with_known_weights(student, rng):
    for d_in, d_out, T, ctx, b in ((3, 2, 6, 6, 3), (5, 4, 3, 8, 1), (4, 4, 1, 4, 2), (6, 3, 7, 10, 3)):
        judge_known_causal(student, rng, d_in, d_out, T, ctx, False, b)


def test_causal_qkv_bias(student, rng):
    judge_seeded_causal(student, rng, 3, 5, 6, 6, 3, True)
    for d_in, d_out, T, ctx, b in ((5, 4, 3, 8, 1), (6, 3, 7, 10, 3)):
        judge_known_causal(student, rng, d_in, d_out, T, ctx, True, b)


def test_causal_future_tokens_never_matter(student, rng):
    d_in, d_out, ctx, T = 4, 3, 9, 6
    state = helpers.random_qkv_state(d_in, d_out, rng, scale=2.0)
    attn = known(student, d_in, d_out, ctx, 0.0, state)
    x = torch.rand(2, T, d_in, generator=rng)
    what = "CausalAttention on inputs shorter than its context"
    base = right_on(attn, x, state, what)
    for t in range(T - 1):
        changed = x.clone()
        changed[:, t + 1:] = torch.rand(2, T - t - 1, d_in, generator=rng) * 4 - 2
        out = expect.shape(attn(changed), (2, T, d_out), what)
        if not torch.allclose(out[:, :t + 1], base[:, :t + 1], atol=1e-6, rtol=0):
            expect.fail(f"{what}: changing only later tokens changed the outputs of earlier ones. A token must never "
                        f"see later tokens: mask every score above the diagonal with -inf before the softmax",
                        f"tokens after position {t} changed")


def test_causal_weights_through_identity_values(student, rng):
    # d_out = T + 2: the value projection is the identity padded with zero rows (the weights are the output's
    # first T columns), so d_k differs from num_tokens: a scale by sqrt(num_tokens) would pass with d_k == T
    T, ctx, d_out = 5, 7, 7
    state, eye = identity_probe(T, rng, d_out=d_out)
    attn = known(student, T, d_out, ctx, 0.0, state)
    what = "the attention weight matrix of CausalAttention (seen with identity value projections)"
    out = expect.shape(run(attn, eye.expand(2, T, T).contiguous(), what, eval_first=True), (2, T, d_out), what)
    got = out[..., :T]
    scores = probe_weights(state, T)
    value = state["W_value.weight"].T  # weights @ value: the weights, then zeros (NaN where a row is NaN)
    right = weights(scores, d_out, True)
    judge(out, (right @ value.to(right.dtype)).expand(2, T, d_out), what,
          [((w @ value.to(w.dtype)).expand(2, T, d_out), why) for w, why in weight_mistakes(scores, d_out, True)])
    future = torch.ones(T, T, dtype=torch.bool).triu(1).expand(2, T, T)
    if (got[future] != 0).any():
        expect.fail(f"{what}: the weights on future tokens must be exactly 0 (mask with -inf)")
    if not torch.allclose(got.sum(-1), torch.ones(2, T), atol=1e-5):
        expect.fail(f"{what}: every row of attention weights must sum to 1")


def test_causal_dropout_off_in_eval_mode(student, rng):
    d_in, d_out, ctx, T = 4, 3, 6, 6
    state = helpers.random_qkv_state(d_in, d_out, rng, scale=2.0)
    attn = known(student, d_in, d_out, ctx, 0.5, state)
    x = torch.rand(3, T, d_in, generator=rng)
    what = "CausalAttention with dropout, after .eval()"
    first, second = run(attn, x, what, _seed=1, eval_first=True), run(attn, x, what, _seed=2)
    if not (isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor) and matches(first, second, 0.0)):
        expect.fail(f"{what} gives different outputs from call to call: dropout is still active in eval mode. "
                    f"Use self.dropout (an nn.Dropout), which is off after .eval(); F.dropout needs "
                    f"training=self.training")
    want = causal_output(x, state)
    if matches(first, want, 1e-4):
        return
    plain = known(student, d_in, d_out, ctx, 0.0, state)  # dropout is the cause only if dropout=0.0 is right
    right_without = matches(expect.as_tensor(run(plain, x, what, eval_first=True), what), want, 1e-4)
    judge(first, want, what, causal_mistakes(x, state),
          hint="in eval mode dropout must do nothing: the output must equal that of dropout=0.0" if right_without
          else "the same module with dropout=0.0 is wrong too: the attention itself is not the specified computation")


def test_causal_dropout_in_training_mode(student, rng):
    T, p, b = 6, 0.2, 300
    state, eye = identity_probe(T, rng)
    attn = known(student, T, T, T, p, state)
    what = "CausalAttention with dropout"
    x = eye.expand(b, T, T).contiguous()
    # the eval-mode weights the module itself computes (after attn.eval()): dropout is judged on them, whatever
    # they are (a wrong mask, scale or softmax dim is the math checks' business)
    own = expect.shape(run(attn, x, f"{what} in eval mode", eval_first=True), (b, T, T), what)
    right = weights(probe_weights(state, T), T, True).expand(b, T, T)
    # right weights with dropout still on in eval mode: that is causal_dropout_off_in_eval_mode's to charge; the
    # training mode is judged against the right weights (own, one dropout draw, would fail it for nothing)
    reference_weights = right if matches(own, right, 1e-5) or helpers.dropped_out(own, right, p) else own
    if not torch.isfinite(own).all() or bool((own.abs() <= 1e-6).all()):
        error = expect.Mismatch(f"{what}: the eval-mode output is degenerate (all zero, NaN or Inf), so dropout "
                                f"cannot be judged; fix the attention weights first")
        error.unexplained = True  # the weights' own checks name why (runner.part_diagnosis)
        raise error
    future = None if reference_weights is right else own[0].abs() > 1e-6
    attn.train()
    train = expect.shape(run(attn, x, what, _seed=5), (b, T, T), what)
    again = expect.shape(run(attn, x, what, _seed=8), (b, T, T), what)
    helpers.dropout_verdict(train, reference_weights, p, what, lower_triangle=future, again=again)
    # with every value vector all ones, dropout on the weights leaves each output row constant
    helpers.load_known(attn, {**state, "W_value.weight": torch.ones(T, T)}, "CausalAttention")
    out = expect.shape(run(attn, x, what, _seed=6), (b, T, T), what)
    if not torch.allclose(out, out[..., :1].expand_as(out), atol=1e-5):
        expect.fail(f"{what} in training mode: dropout seems to act on the values or the output, not on the "
                    f"attention weights (apply self.dropout to attn_weights, before multiplying by the values)")
    helpers.trains(attn, x[:2], (2, T, T), what)


def test_causal_mask_is_a_registered_buffer(student):
    attn = student.module(PART).CausalAttention(3, 2, 7, 0.0)
    info = attn.describe()
    if any(name == "mask" for name, _, _ in info["parameters"]):
        expect.fail("CausalAttention's mask is an nn.Parameter: register it with self.register_buffer('mask', ...), a "
                    "buffer is saved and moved with the module but never trained")
    mask = helpers.square_buffer(attn, 7)  # a registered buffer, under any name
    if mask is None:
        try:
            plain = attn.get("mask")
        except StudentError as e:
            if e.not_implemented:
                raise
            plain = None
        if isinstance(plain, torch.Tensor):
            expect.fail("CausalAttention's mask does not follow the module when it is converted (.to, .double()): it "
                        "is a plain attribute; register it with self.register_buffer('mask', ...)")
        expect.fail("CausalAttention has no (context_length, context_length) mask buffer: create it with "
                    "self.register_buffer('mask', ...) so that it is part of the module's state and moves with "
                    ".to(device)")
    if tuple(mask.shape) != (7, 7):
        expect.fail("CausalAttention's mask should be (context_length, context_length)", f"shape {tuple(mask.shape)}")
    above = torch.ones(7, 7, dtype=torch.bool).triu(1)
    for diagonal, cause in ((0, HIDES_DIAGONAL), (2, SEES_NEXT)):
        if torch.equal(mask != 0, torch.ones(7, 7, dtype=torch.bool).triu(diagonal)):
            expect.fail(f"the mask buffer should mark the positions above the diagonal (ones above it, zeros on and "
                        f"below it): {cause}", cause=cause)
    if not (torch.equal(mask != 0, above) or torch.equal(mask != 0, ~above)):
        expect.fail("the mask buffer should mark the positions above the diagonal (ones above it, zeros on and below "
                    "it)")
    helpers.mask_kept_whole(attn, 7, 3, "CausalAttention")


def test_causal_runs_on_the_inputs_device(student, rng):
    """Right on the CPU first; then run on the emulated GPU (inside/emulated_gpu.py: parameters,
    buffers and inputs on cuda as fake tensors): a tensor made in forward on the default device, or
    a mask that does not follow .to(), fails there as it would on a GPU. (The module's functions,
    such as masked_attention_weights with a mask made on the CPU, are not judged here: honest CPU
    code keeps this point; tests/test_fake_cuda.py holds the reference to it.)"""
    d_in, d_out, ctx, T = 4, 3, 8, 6
    state = helpers.random_qkv_state(d_in, d_out, rng, scale=2.0)
    attn = known(student, d_in, d_out, ctx, 0.0, state)
    x = torch.rand(2, T, d_in, generator=rng)
    right_on(attn, x, state, "CausalAttention (before it is moved to another device)")
    pointer = efficiency.where_bound(student, PART, "CausalAttention")
    problem = efficiency.untrusted(student.sources(), PART) or \
        efficiency.device_problem(attn, x, (2, T, d_out), "CausalAttention", efficiency.has_plain_mask(attn),
                                  efficiency.machine_query(student.sources(), "CausalAttention", PART, pointer))
    # passes only when the grader's own reading of causal.py agrees with the child's emulated run
    problem = problem or efficiency.source_device_problem(student.sources(), "CausalAttention", PART, pointer)
    if problem:
        expect.fail(problem)


def test_causal_float64_and_gradients(student, rng):
    d_in, d_out, ctx, T = 4, 3, 8, 5
    state = helpers.random_qkv_state(d_in, d_out, rng, scale=2.0, dtype=torch.float64)
    attn = helpers.build_known(student.module(PART).CausalAttention, (d_in, d_out, ctx, 0.0), {}, state,
                               "CausalAttention after .double()", then=("double",))
    x = torch.rand(2, T, d_in, generator=rng, dtype=torch.float64)
    what = "CausalAttention after .double(), on float64 inputs"
    got = run(attn, x, what, eval_first=True)
    if getattr(got, "dtype", None) != torch.float64:
        expect.fail(f"{what} returns {getattr(got, 'dtype', type(got).__name__)}: compute in the dtype of the "
                    f"inputs and weights (no .float() or float32 tensors made inside forward)")
    judge(got, causal_output(x, state), what, causal_mistakes(x, state), atol=1e-6)
    g = torch.rand(2, T, d_out, generator=rng, dtype=torch.float64)
    want = helpers.reference_grads(lambda s: causal_output(x, s), state, g)
    helpers.compare_grads(*helpers.grads_and_reference(attn, x, g, want), "CausalAttention",
                          atol=1e-6)
    single = run(attn, x[:, :1], "CausalAttention on a single token")
    if not torch.isfinite(expect.as_tensor(single, "CausalAttention on a single token")).all():
        expect.fail("CausalAttention on a single token gives NaN or Inf: the first token must always see itself")


helpers.diagnose_errors(globals(), "CausalAttention(d_in, d_out, context_length, dropout, qkv_bias=False)",
                        lambda check, student, error: source_mistakes.shape_error_cause(student.sources(), False, PART)
                        if error.kind == "RuntimeError" else "")
