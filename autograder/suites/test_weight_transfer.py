"""Hidden checks for weight_transfer.py (Exercise 3.1): copy SelfAttention_v2's nn.Linear weights into v1.

The transfer is judged by what it does: afterwards sa_v1 must hold sa_v2's weights (transposed, or as they
are where sa_v1 itself computes as nn.Linear does: its own mistake) and
compute what sa_v2 computes, seen through sa_v1's outputs, or, where SelfAttention_v1 itself is wrong or
raises (graded in its own part), through the weights the transfer wrote. What the modules hold is read
from their registries (RemoteObject.registered), never through a method the student's code could
override: a transfer that copies nothing and rewires sa_v1 to answer as sa_v2 (its forward replaced,
a forward hook, a lying state_dict) earns nothing. sa_v2 must stay untouched and sa_v1 be returned,
still trainable. Layers named otherwise than the book's (W_q for W_query) are matched by registration
order: the names cost points in v1 and v2 only.
"""
import itertools

import torch

from autograder.student import RemoteObject, Step, StudentError, outcome
from autograder.suites import expect, helpers, part_marker, reference
from autograder.suites.helpers import QKV
from autograder.suites.misconceptions import matches, raised_in

pytestmark = part_marker("weight_transfer")
PART = "weight_transfer"
TRANSPOSE_HINT = ("nn.Linear stores its weight as (d_out, d_in) and computes x @ weight.T, while SelfAttention_v1 "
                  "computes x @ W with W of shape (d_in, d_out): copy weight.T")


SHARED_STORAGE = ("Note (no points taken): after the transfer sa_v1's matrices share storage with sa_v2's weights "
                  "(nn.Parameter(weight.T) is a view of the same numbers), so training or changing one module changes "
                  "the other. To keep them independent, copy: nn.Parameter(weight.T.clone()), or W.copy_(weight.T) "
                  "under torch.no_grad()")


def make_pair(student, d_in, d_out, v1_seed, v2_seed, v2_state=None):
    """SelfAttention_v1 and SelfAttention_v2 made after their seeds (v2 then holding v2_state where given,
    helpers.load_known), both made in one exchange (Student.plan) with v2_state's load by name."""
    steps = [student.module("self_attention_v1").SelfAttention_v1.as_step(d_in, d_out, _seed=v1_seed),
             student.module("self_attention_v2").SelfAttention_v2.as_step(d_in, d_out, _seed=v2_seed)]
    if v2_state is not None:
        steps.append(Step("call", Step.on(1, "load_state_dict"), (v2_state,), {"strict": False}))
    answers = student.plan(steps)
    v1, v2 = outcome(answers[0]), outcome(answers[1])
    if v2_state is not None:
        helpers.load_known(v2, v2_state, "SelfAttention_v2", *answers[2:])  # not a module: loaded as it would be
    return v1, v2


def transfer(student, v2, v1, what):
    try:
        return student.module(PART).transfer_v2_to_v1(v2, v1)
    except StudentError as e:
        text = e.message.lower()
        if not e.not_implemented and any(word in text for word in ("size", "shape", "match")):
            raise expect.Mismatch(f"{what}: {e.explain()}. {TRANSPOSE_HINT}", student_text=e.student_text()) from None
        raise


def close(a, b):
    return tuple(a.shape) == tuple(b.shape) and torch.allclose(a.double(), b.double(), atol=1e-6, rtol=0)


def held(module, answer=None):
    """What the module holds ({"parameters": {name: tensor}, "buffers": {...}}, in registration order),
    read from its registries (RemoteObject.registered); answer: that read's answer where a plan already
    made it."""
    held = module.registered() if answer is None else outcome(answer)
    if not isinstance(held, dict) or not all(isinstance(held.get(k), dict) for k in ("parameters", "buffers")):
        raise AssertionError("the module's parameters could not be read back")
    return held


def v1_matrices(v1, holds=None):
    """sa_v1's three matrices as {W_query, W_key, W_value}: its registered parameters by name, or else in
    registration order; a plain tensor attribute of the name where it registers none (holds: held(v1))."""
    parameters = (holds or held(v1))["parameters"]
    if all(name in parameters for name in QKV):
        return {name: parameters[name] for name in QKV}
    if len(parameters) >= len(QKV):
        return dict(zip(QKV, parameters.values(), strict=False))
    found = {}
    for name in QKV:
        try:
            value = v1.get(name)
        except StudentError:
            continue
        if isinstance(value, torch.Tensor):
            found[name] = value
    return found


def v2_weights(v2):
    """sa_v2's three nn.Linear weights as {W_query.weight, ...}, by name or else by registration order."""
    parameters = held(v2)["parameters"]
    keys = [f"{name}.weight" for name in QKV]
    if all(k in parameters for k in keys):
        return {k: parameters[k] for k in keys}
    weights = [value for name, value in parameters.items() if name.endswith("weight")]
    return dict(zip(keys, weights, strict=False))


def holds_the_weights(v1, holds, v2_state):
    """Are sa_v1's matrices (its registered parameters; where it registers none, its tensors under the
    specified names) exactly sa_v2's three weights, one each, whatever its names and order? Transposed,
    or as they are where sa_v1's own forward reads its matrices as nn.Linear does (a SelfAttention_v1
    storing (d_out, d_in): its mistake, graded in its own part; the caller has seen sa_v1's outputs match).
    A copy kept anywhere else (a buffer, a fourth parameter) while sa_v1 computes otherwise is not the
    transfer."""
    mine = list(holds["parameters"].values()) or list(v1_matrices(v1, holds).values())
    weights = [v2_state.get(f"{name}.weight") for name in QKV]
    if len(mine) != len(weights) or any(w is None for w in weights):
        return False
    return any(all(close(m, w.T) or close(m, w) for m, w in zip(order, weights, strict=True))
               for order in itertools.permutations(mine))


UNSENT = object()  # outputs(): no call was made yet
REWIRED = ("sa_v1 answers as sa_v2 does but does not hold sa_v2's weights: the transfer must copy each weight "
           "(transposed) into sa_v1's own matrices, not make sa_v1 call sa_v2")


def transfer_problem(v1_after, v2_state, v1_before):
    """'' when sa_v1 holds sa_v2's weights, transposed; else what went wrong, in a student's terms."""
    for name in QKV:
        got, weight = v1_after.get(name), v2_state.get(f"{name}.weight")
        if got is None or weight is None:
            return f"sa_v1 has no matrix for {name} after the transfer"
        if close(got, weight.T):
            continue
        if close(got, weight):
            return f"sa_v1.{name} holds sa_v2.{name}.weight without the transpose. {TRANSPOSE_HINT}"
        for other in QKV:
            other_weight = v2_state.get(f"{other}.weight")
            if other != name and other_weight is not None and (close(got, other_weight.T) or close(got, other_weight)):
                return f"sa_v1.{name} holds sa_v2.{other}'s weights: copy each layer into its own matrix"
        if name in v1_before and close(got, v1_before[name]):
            return f"sa_v1.{name} was not changed by the transfer"
        return f"sa_v1.{name} does not hold sa_v2.{name}.weight.T after the transfer"
    return ""


def outputs(module, x, answer=UNSENT):
    """module(x), or None when the module's own forward raises (its bug, graded in its own part).
    answer: that call's answer (or StudentError) where a plan already made it."""
    try:
        return expect.as_tensor(module(x) if answer is UNSENT else outcome(answer), "sa_v1(x)")
    except StudentError as e:
        if e.not_implemented or raised_in(e, PART):
            raise
        return None
    except AssertionError:
        return None


def held_and_outputs(student, v1, x):
    """(held(v1), v1(x) as outputs() gives it), in one exchange with the child."""
    answers = student.plan([v1.registered_step(), v1.as_step(x)])
    return held(v1, answers[0]), outputs(v1, x, answers[1] if len(answers) > 1 else UNSENT)


def judge_transfer(student, v1, v1_before, v2_state, x, what, case=""):
    """After the transfer: sa_v1(x) is what the grader computes from sa_v2's weights; or sa_v1 computes
    as a SelfAttention_v1 holding those weights does (v1's own math, graded there); or, when v1's
    forward cannot tell, the weights it holds are sa_v2's, transposed."""
    d_in = x.shape[-1]
    want = reference.attention(*(x @ v2_state[f"{n}.weight"].T for n in QKV), causal=False)  # type: ignore[misc]  # a star of 3
    holds, got = held_and_outputs(student, v1, x)
    if got is not None and matches(got, want, 1e-5):
        if holds_the_weights(v1, holds, v2_state):
            return
        expect.fail(f"{what}: {transfer_problem(v1_matrices(v1, holds), v2_state, v1_before) or REWIRED}", case)
    problem = transfer_problem(v1_matrices(v1, holds), v2_state, v1_before)
    if problem:
        expect.fail(f"{what}: {problem}", case)
    if got is None:
        return  # the weights arrived; SelfAttention_v1's forward raises: graded in its own part
    plain = student.module("self_attention_v1").SelfAttention_v1(d_in, v2_state["W_query.weight"].shape[0])
    helpers.load_known(plain, {n: v2_state[f"{n}.weight"].T.contiguous() for n in QKV}, "SelfAttention_v1")
    same = outputs(plain, x)
    if same is not None and not matches(same, got, 1e-5):
        expect.fail(f"{what}: afterwards sa_v1 computes differently from a SelfAttention_v1 holding the same weights: "
                    f"the transfer must only copy the weights", case)


def test_transfer_book_example(student, book):
    v1, v2 = make_pair(student, 3, 2, 123, 123)
    v2_state, v1_before = v2_weights(v2), v1_matrices(v1)
    what = "Exercise 3.1: after transfer_v2_to_v1(sa_v2, sa_v1) with the book's modules, sa_v1(inputs)"
    transfer(student, v2, v1, what)
    holds, got = held_and_outputs(student, v1, book.inputs)
    if got is not None and matches(got, book["ex31_sa_v1"], 1e-4):
        if holds_the_weights(v1, holds, v2_state):
            return
        expect.fail(f"{what}: {transfer_problem(v1_matrices(v1, holds), v2_state, v1_before) or REWIRED}")
    problem = transfer_problem(v1_matrices(v1, holds), v2_state, v1_before)
    if problem:
        expect.fail(f"{what} is not the book's output: {problem}")
    # the weights arrived transposed and intact: the difference is SelfAttention_v1's or _v2's own, graded there


def test_transfer_on_unseen_sizes(student, rng):
    for d_in, d_out, T in ((4, 4, 5), (5, 3, 1), (2, 6, 7)):
        what = "transfer_v2_to_v1 with other sizes"
        case = f"SelfAttention_v1({d_in}, {d_out}) and SelfAttention_v2({d_in}, {d_out}) on {T} tokens"
        v1_seed, v2_seed = helpers.draw_seed(rng), helpers.draw_seed(rng)
        state = helpers.random_qkv_state(d_in, d_out, rng, scale=2.0)
        v1, v2 = make_pair(student, d_in, d_out, v1_seed, v2_seed, state)
        v1_before = v1_matrices(v1)
        transfer(student, v2, v1, what)
        judge_transfer(student, v1, v1_before, state, torch.rand(T, d_in, generator=rng), what, case)


def test_transfer_returns_v1_and_keeps_v2(student, rng):
    d_in, d_out = 3, 4
    v1, v2 = make_pair(student, d_in, d_out, helpers.draw_seed(rng), helpers.draw_seed(rng))
    v2_before, v1_before = v2_weights(v2), v1_matrices(v1)
    x = torch.rand(5, d_in, generator=rng)
    v2_output_before = outputs(v2, x)
    out = transfer(student, v2, v1, "transfer_v2_to_v1(sa_v2, sa_v1)")
    if not (isinstance(out, RemoteObject) and out.same_object(v1)):
        if isinstance(out, RemoteObject) and out.same_object(v2):
            expect.fail("transfer_v2_to_v1 returns sa_v2: it should return sa_v1, the module it filled in")
        kind = out.type_name if isinstance(out, RemoteObject) else type(out).__name__
        expect.fail(f"transfer_v2_to_v1 should return sa_v1 (the object it was given); it returned {kind}")
    v2_after = v2_weights(v2)
    v2_output_after = outputs(v2, x)
    changed = sorted(v2_after) != sorted(v2_before) or not all(close(v2_after[k], v2_before[k]) for k in v2_before)
    if changed or (v2_output_before is not None and (v2_output_after is None or
                                                      not matches(v2_output_after, v2_output_before, 1e-6))):
        expect.fail("transfer_v2_to_v1 changed sa_v2: it should only read sa_v2's weights")
    # what it returns and keeps earns nothing unless the transfer itself is right on these modules
    # (sa_v2 without three weights is graded in self_attention_v2)
    if all(f"{name}.weight" in v2_before for name in QKV):
        judge_transfer(student, v1, v1_before, v2_before, x, "transfer_v2_to_v1(sa_v2, sa_v1)")
    # the shapes sa_v1 had before: (d_in, d_out) for the specification's SelfAttention_v1; a SelfAttention_v1 that
    # keeps its matrices otherwise (its own part's mistake) gets a transfer written for it judged on it
    shapes = sorted(shape for _, shape in helpers.parameter_order(v1))
    if shapes != sorted(tuple(m.shape) for m in v1_before.values()) or len(shapes) != 3:
        expect.fail("after the transfer sa_v1's matrices must stay three nn.Parameters of shape (d_in, d_out)",
                    f"parameters: {helpers.parameter_order(v1)}")
    try:
        grads = v1.grads(x, grad_output=torch.ones(5, d_out))
    except StudentError as e:
        if e.not_implemented or raised_in(e, PART):
            raise
        return  # SelfAttention_v1's own forward raises: graded in its own part
    dead = [name for name, _ in helpers.parameter_order(v1) if not isinstance(grads.get(name), torch.Tensor)]
    if dead:
        fresh = student.module("self_attention_v1").SelfAttention_v1(d_in, d_out)
        if not isinstance(fresh.grads(x, grad_output=torch.ones(5, d_out)).get(dead[0]), torch.Tensor):
            return  # SelfAttention_v1 itself cuts the gradient: graded in its own part
        expect.fail("after the transfer, no gradient reaches one of sa_v1's matrices: keep the weights trainable "
                    "(copy_ under torch.no_grad(), or assign a new nn.Parameter)", f"no gradient: {dead[0]}")
    if shares_storage(v1, v2, d_in, d_out, rng):
        raise expect.Note(SHARED_STORAGE)


def shares_storage(v1, v2, d_in, d_out, rng):
    """Does writing new weights into sa_v2 (in place) change sa_v1? Never a cost: False when it cannot tell."""
    try:
        before = v1_matrices(v1)
        helpers.load_known(v2, helpers.random_qkv_state(d_in, d_out, rng, scale=2.0), "SelfAttention_v2")
        after = v1_matrices(v1)
    except (AssertionError, StudentError):
        return False
    return any(name in after and not close(before[name], after[name]) for name in before)


helpers.diagnose_errors(globals(), "transfer_v2_to_v1(sa_v2, sa_v1)")
