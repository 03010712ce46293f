"""Tools the hidden suites share: the grader's own draws of seeded weights, loading known weights,
reading a module's state, gradients by the grader's autograd, and a way to see whether student
code changed its arguments in place.

Nothing here runs student code except through the `student` adapter (remote calls).
"""
import functools
import math
from typing import Any

import torch

from autograder.student import RemoteObject, Step, StudentError, outcome
from autograder.suites.expect import Mismatch, fail

QKV = ("W_query", "W_key", "W_value")


# ---------------------------------------------------------------- the grader's own seeded draws

def draw_seed(rng):
    """A seed for a hidden case, drawn from the check's generator (never a constant)."""
    return int(torch.randint(1, 2**31 - 1, (1,), generator=rng))


def drawn_matrices(seed, d_in, d_out, names=QKV):
    """What torch.manual_seed(seed) then torch.rand(d_in, d_out) per name gives (SelfAttention_v1)."""
    g = torch.Generator().manual_seed(seed)
    return {name: torch.rand(d_in, d_out, generator=g) for name in names}


def drawn_linears(seed, layers):
    """What torch.manual_seed(seed) then nn.Linear(d_in, d_out, bias) per layer, in order, gives.

    layers: [(name, d_in, d_out, bias)] -> {"name.weight": ..., "name.bias": ...}. The grader's own
    random state is left as it was.
    """
    state = {}
    with torch.random.fork_rng(devices=[]):
        # nn.Linear draws from the CPU generator alone: torch.manual_seed would also queue the
        # seeding of every other device type, recording a formatted stack each time (~1 ms)
        torch.default_generator.manual_seed(seed)
        for name, d_in, d_out, bias in layers:
            layer = torch.nn.Linear(d_in, d_out, bias=bias)
            state[f"{name}.weight"] = layer.weight.detach().clone()
            if bias:
                state[f"{name}.bias"] = layer.bias.detach().clone()
    return state


def qkv_layers(d_in, d_out, bias):
    return [(name, d_in, d_out, bias) for name in QKV]


def random_qkv_state(d_in, d_out, rng, bias=False, scale=1.0, dtype=torch.float32):
    """Known weights in nn.Linear's layout: W (d_out, d_in), entries uniform in [-scale/2, scale/2)."""
    state = {}
    for name in QKV:
        state[f"{name}.weight"] = (torch.rand(d_out, d_in, generator=rng, dtype=torch.float64) - 0.5) * scale
        if bias:
            state[f"{name}.bias"] = torch.rand(d_out, generator=rng, dtype=torch.float64) - 0.5
    return {k: v.to(dtype) for k, v in state.items()}


def random_mha_state(d_in, d_out, rng, bias=False, scale=1.0, dtype=torch.float32):
    state = random_qkv_state(d_in, d_out, rng, bias, scale, torch.float64)
    state["out_proj.weight"] = torch.rand(d_out, d_out, generator=rng, dtype=torch.float64) - 0.5
    state["out_proj.bias"] = torch.rand(d_out, generator=rng, dtype=torch.float64) - 0.5
    return {k: v.to(dtype) for k, v in state.items()}


# ---------------------------------------------------------------- a student's module, from outside

def state_of(module, what):
    """The module's state_dict as tensors here."""
    state = module.state_dict()
    if not isinstance(state, dict):
        raise AssertionError(f"{what}.state_dict() did not return a dict")
    return state


def square_shape(shape):
    """(n, n) for a buffer's shape (n, n), or (1, ..., 1, n, n); None for any other shape."""
    shape = tuple(shape)
    if len(shape) >= 2 and shape[-1] == shape[-2] and all(d == 1 for d in shape[:-2]):
        return shape[-2:]
    return None


def mask_kept_whole(module, size, d_in, name):
    """Fail (misconceptions.MASK_OVERWRITTEN) where a forward on 4 float64 tokens leaves the module without a (size,
    size) buffer (its describe, in the same exchange): forward replaced it with its slice. The caller has found the
    buffer and converted the module to float64 (square_buffer). A forward that raises says nothing here (the checks
    of its outputs say why)."""
    from autograder.suites.misconceptions import MASK_OVERWRITTEN

    if not isinstance(module, RemoteObject):
        return
    x = torch.rand(1, 4, d_in, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    answers = module._student.plan([Step("call", {"handle": module._id}, (x,)), Step("describe", {"handle": module._id})])
    for answer in answers:
        if isinstance(answer, StudentError):
            if answer.not_implemented:
                raise answer
            return
    if len(answers) == 2 and isinstance(answers[1], dict) and \
            not any(square_shape(shape) == (size, size) for _, shape, _ in answers[1].get("buffers", ())):
        fail(MASK_OVERWRITTEN, f"{name}: no ({size}, {size}) buffer after a forward", cause=MASK_OVERWRITTEN)


def square_buffer(module, size):
    """The module's registered (size, size) buffer, whatever its name (the classes may name their parts
    as they like), read after the module is converted to float64: a registered buffer follows the
    module, a plain attribute does not (and is not listed). A buffer with leading dims of 1 (nanoGPT's
    (1, 1, size, size), made to broadcast over the batch and the heads) is the same mask. -> the
    (size, size) tensor, or None."""
    try:
        module.type("torch.DoubleTensor")
        for name, shape, _ in module.describe()["buffers"]:
            if square_shape(shape) == (size, size):
                mask = module.get(name)
                if isinstance(mask, torch.Tensor) and mask.dtype == torch.float64:
                    return mask.reshape(size, size)
    except StudentError as e:
        if e.not_implemented:
            raise
    return None


def parameter_order(module, described=None):
    """[(name, shape)] of the module's parameters in registration order. described: module.describe()'s
    answer where it was already asked."""
    return [(name, tuple(shape)) for name, shape, _ in (module.describe() if described is None else described)["parameters"]]


def renamed_state(module, state):
    """state under the module's own parameter names, matched by registration order and shape, when
    the module names its layers differently (W_q for W_query); None when they do not line up.
    The names are judged by the structure checks; the math is judged whatever the names."""
    own = parameter_order(module)
    if len(own) != len(state) or any(tuple(v.shape) != shape for (_, shape), v in zip(own, state.values(), strict=True)):
        return None
    return {name: value for (name, _), value in zip(own, state.values(), strict=True)}


def grads_and_reference(module: Any, x: Any, grad_output: Any, want: Any) -> tuple[Any, Any]:
    """(module.grads(x, grad_output=grad_output), renamed_grads(module, want)): the gradients and the
    description that names them asked in one exchange (the grader looks at nothing between them but an
    exception; the description carries no input)."""
    if not isinstance(module, RemoteObject):
        return module.grads(x, grad_output=grad_output), renamed_grads(module, want)
    answers = module._student.plan([Step("grads", {"handle": module._id}, (x,), {"grad_output": grad_output}),
                                    Step("describe", {"handle": module._id})])
    return outcome(answers[0]), renamed_grads(module, want, outcome(answers[1]))


def renamed_grads(module, want, described=None):
    """The reference gradients under the module's own parameter names (see renamed_state). described:
    module.describe()'s answer where it was already asked."""
    names = {name for name, _ in parameter_order(module, described)}
    if all(k in names for k in want):
        return want
    return renamed_state(module, want) or want


def build_known(constructor, args, kwargs, state, what, _seed=0, then=()):
    """constructor(*args, **kwargs) (a class of the student's, called after _seed), then each method
    named in `then` (e.g. "double", called without arguments), with known weights loaded (load_known)
    -> the module. These calls and the load by name go in one exchange (Student.plan): the grader's
    only look between them is whether one raised (or the class returned no module), and then the
    rest is not run; state is sent with the load that uses it."""
    steps = [constructor.as_step(*args, _seed=_seed, **kwargs)]
    steps += [Step("call", Step.on(0, name)) for name in then]
    steps.append(Step("call", Step.on(0, "load_state_dict"), (state,), {"strict": False}))
    answers = constructor._student.plan(steps)
    module = outcome(answers[0])
    for i, name in enumerate(then, start=1):
        if len(answers) <= i:  # not a module: the call goes on here as it would have
            getattr(module, name)()
        else:
            outcome(answers[i])
    if len(answers) < len(steps):
        return load_known(module, state, what)
    return load_known(module, state, what, by_name=answers[-1])


def built_and_called(constructor, args, kwargs, _seed, call_args, call_seed=0):
    """constructor(*args, **kwargs) after _seed, then the module it returns called on call_args (after
    call_seed), in one exchange (the grader looks at nothing between them but an exception) -> (the
    module, a function that returns the call's answer or raises its exception). The construction's
    exception is raised here, as the single call would raise it."""
    answers = constructor._student.plan([constructor.as_step(*args, _seed=_seed, **kwargs),
                                         Step("call", Step.on(0), call_args, seed=call_seed)])
    module = outcome(answers[0])
    if len(answers) < 2:  # not a module: called here as it would have been
        return module, lambda: module(*call_args, _seed=call_seed)
    return module, lambda: outcome(answers[1])


def forward(module, *args, _seed=0, eval_first=False):
    """module(*args) after _seed, preceded by module.eval() where eval_first, in one exchange (the
    grader never looks at what eval() returns; its exception is raised here, as module.eval() would
    raise it) -> a function that returns the forward's answer or raises its exception, for the caller
    to turn into its own message exactly as it would the single call's."""
    if not eval_first:
        return lambda: module(*args, _seed=_seed)
    if not isinstance(module, RemoteObject):
        module.eval()  # raises as it would (not a module)
        return lambda: module(*args, _seed=_seed)
    answers = module._student.plan([module.eval.as_step(), module.as_step(*args, _seed=_seed)])
    outcome(answers[0])
    return lambda: outcome(answers[1])


UNSENT = object()  # load_known: no load by name was sent yet


def load_known(module, state, what, by_name=UNSENT):
    """Load known weights into a student's module, keeping its own buffers (a bool or float mask).

    Layers named differently from the specification are matched by registration order; fails in
    the student's terms when a parameter the specification names is missing or has another shape.
    Where every name is the module's own, one round trip loads them (its outputs are judged after).
    by_name: the answer (or StudentError) of module.load_state_dict(state, strict=False) where it
    was already sent (build_known).
    """
    if _loaded_by_name(module, state, by_name):
        return module
    own = state_of(module, what)
    missing = [k for k in state if k not in own]
    if missing:
        renamed = renamed_state(module, state)
        if renamed is not None:
            state, missing = renamed, []
    if missing and all(k.endswith(".bias") for k in missing):
        fail(f"{what} has no bias in W_query, W_key and W_value: with qkv_bias=True each needs one "
             f"(nn.Linear(d_in, d_out, bias=qkv_bias))", f"missing: {', '.join(missing)}")
    if missing:
        fail(f"{what} does not have the specified parameters (name the layers as the book does, in the "
             f"book's order)", f"missing {', '.join(missing)}; it has {', '.join(own) or 'nothing'}")
    wrong = [f"{k} {tuple(own[k].shape)} (expected {tuple(state[k].shape)})" for k in state
             if tuple(own[k].shape) != tuple(state[k].shape)]
    if wrong and _out_proj_from_d_in(own, state):
        from autograder.suites.source_mistakes import OUT_PROJ_FROM_D_IN

        fail(f"{what} has parameters of the wrong shape: {OUT_PROJ_FROM_D_IN}", ", ".join(wrong), cause=OUT_PROJ_FROM_D_IN)
    if wrong:
        fail(f"{what} has parameters of the wrong shape", ", ".join(wrong))
    module.load_state_dict({**own, **{k: v.to(own[k].dtype) for k, v in state.items()}})
    return module


def _out_proj_from_d_in(own, state):
    """Is out_proj the only layer of the wrong shape, its weight (d_out, d_in) as W_query's is, where the
    specification's is (d_out, d_out)?"""
    shape = {k: tuple(v.shape) for k, v in own.items()}
    want = {k: tuple(v.shape) for k, v in state.items()}
    if not {"out_proj.weight", "W_query.weight"} <= set(want) & set(shape):
        return False
    wrong = {k for k in want if shape[k] != want[k]}
    return wrong >= {"out_proj.weight"} and all(k.startswith("out_proj.") for k in wrong) \
        and shape["out_proj.weight"] == want["W_query.weight"]


def _loaded_by_name(module, state, answer=UNSENT):
    """True when load_state_dict(state, strict=False) took every entry: the module has each of these
    names, with these shapes (copy_ converts the dtype; its buffers and any extra parameter keep
    their values). False when a name is not its own or a shape differs, for load_known to say so.
    answer: that call's answer where it was already sent."""
    if isinstance(answer, StudentError):
        return False
    try:
        answer = module.load_state_dict(state, strict=False) if answer is UNSENT else answer
    except StudentError:
        return False
    # the answer is torch's _IncompatibleKeys (a named tuple), which arrives as a list: the protocol
    # rebuilds only a plain tuple as a tuple (inside/protocol.decode)
    return isinstance(answer, (tuple, list)) and len(answer) == 2 and answer[1] == []


def parameter_table(module):
    """[(name, shape)] of the module's parameters, in registration order."""
    return [(name, tuple(shape)) for name, shape, _ in module.describe()["parameters"]]


def seeding_problem(got, want, seed, book=False, order_hint="W_query, W_key, W_value"):
    """'' when the student's parameters are what the grader draws after torch.manual_seed(seed);
    otherwise a sentence saying how they differ (another order, or drawn differently)."""
    consequence = (f"seed {seed} does not give the book's weights" if book
                   else "the same seed does not give the weights the specification draws")
    wrong_shape = [n for n in want if n not in got or tuple(got[n].shape) != tuple(want[n].shape)]
    if wrong_shape:
        return (f"the parameters are not the specification's ({', '.join(wrong_shape)} missing or of another "
                f"shape): {consequence}")

    def same(a, b):
        return tuple(a.shape) == tuple(b.shape) and torch.allclose(a.double(), b.double(), atol=1e-6, rtol=0)

    differ = [n for n in want if not same(got[n], want[n])]
    if not differ:
        return ""
    holds: dict[str, Any] = {n: next((m for m in want if same(got[n], want[m])), None) for n in want}
    if all(holds.values()) and sorted(holds.values()) == sorted(want):
        swapped = ", ".join(f"{n} holds what {m} should get" for n, m in holds.items() if n != m)
        return (f"parameters created in another order ({swapped}): {consequence}. Create {order_hint} "
                f"in this order")
    return (f"parameters created in another order or drawn differently ({differ[0]} is the first that "
            f"differs; {', '.join(n for n in want if n not in differ) or 'none'} match): {consequence}. "
            f"Create {order_hint} in this order, with the specified initialization and no other random "
            f"draws in between")


# ---------------------------------------------------------------- the grader's autograd

def reference_grads(function, state, grad_output):
    """Gradients of every tensor in `state` for function(state).backward(grad_output)."""
    leaves = {k: v.detach().clone().requires_grad_(True) for k, v in state.items()}
    # the same gradients as .backward(grad_output), without its shape check's import of sympy (~0.6 s)
    (function(leaves) * grad_output).sum().backward()
    return {k: v.grad for k, v in leaves.items()}


def compare_grads(got, want, what, atol):
    if not isinstance(got, dict):
        raise AssertionError(f"{what}: could not read the gradients")
    for name, expected in want.items():
        grad = got.get(name)
        if grad is None:
            raise AssertionError(
                f"{what}: no gradient reached {name}. The forward pass is cut off from autograd there "
                f"(.detach(), .data, torch.no_grad() or a NumPy round trip in forward): training could "
                f"never change it")
        if tuple(grad.shape) != tuple(expected.shape):
            raise AssertionError(f"{what}: the gradient of {name} has shape {tuple(grad.shape)}, expected "
                                 f"{tuple(expected.shape)}")
        if not torch.isfinite(grad).all():
            raise AssertionError(f"{what}: the gradient of {name} contains NaN or Inf")
        diff = (grad.double() - expected.double()).abs().max().item()
        if diff > atol:
            fail(f"{what}: the gradient of {name} is wrong: the forward pass is not the specified computation",
                 f"off by up to {diff:.3g} (tolerance {atol:g})")


# ---------------------------------------------------------------- arguments changed in place?

def degenerate(value):
    """True for an output that says nothing: all (near) zero, one value everywhere, or holding NaN or
    Inf. A property (the wrapper concatenates its heads, ...) judged against such an output proves
    nothing."""
    if not isinstance(value, torch.Tensor) or not torch.isfinite(value).all() or bool((value.abs() <= 1e-6).all()):
        return True
    flat = value.detach().double()
    return flat.numel() > 1 and float(flat.max() - flat.min()) <= 1e-6


def uninformative(value, *inputs):
    """True for an output that shows no attention was computed: degenerate (above: zeros, one value
    everywhere, NaN or Inf), or (the leading columns of) one of the inputs handed back."""
    if degenerate(value):
        return True
    flat = value.double()
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.dim() == value.dim() and x.shape[:-1] == value.shape[:-1] \
                and x.shape[-1] >= value.shape[-1] and torch.allclose(x[..., :value.shape[-1]].double(), flat, atol=1e-6):
            return True
    return False


def call_keeping_arguments(student, function, *args):
    """Call function(*args) in the child and read the same argument objects back afterwards.

    Remote calls copy their inputs, so an in-place change is invisible in a plain call; the child's
    record operation sends back the arguments it called with, as they are after the call.
    function: a RemoteObject (a module) or RemoteCallable. Returns (result, [arguments after]).
    """
    result, _ = student.record(function, *args)
    return result, student.last_arguments


def assert_unchanged(before, after, what):
    for i, (a, b) in enumerate(zip(before, after, strict=False)):
        if isinstance(a, torch.Tensor) or hasattr(a, "shape"):
            a_t, b_t = torch.as_tensor(a), torch.as_tensor(b)
            if a_t.shape != b_t.shape or not torch.equal(a_t, b_t):
                fail(f"{what} changed its input (argument {i + 1}) in place: use out-of-place operations "
                     f"(masked_fill, not masked_fill_; z - m, not z -= m) on tensors or arrays you were given")


# ---------------------------------------------------------------- dropout, judged by statistics

def dropped_out(got, reference, p):
    """Is got one dropout draw of reference: some weights zeroed, every other one reference / (1 - p)?"""
    if got.shape != reference.shape or not torch.isfinite(got).all():
        return False
    got, reference = got.double(), reference.double()
    zero = got.abs() <= 1e-6
    kept = ~zero
    return bool((zero & (reference.abs() > 1e-6)).any()) and \
        bool(((got[kept] - reference[kept] / (1 - p)).abs() <= 1e-4 / (1 - p)).all())


INPLACE_DROPOUT = ("its nn.Dropout is made with inplace=True: it overwrites the attention weights, which the "
                   "softmax's backward needs, so a forward works and training fails; use nn.Dropout(p), which "
                   "returns new weights")
TRAINING_BACKWARD = ("its backward pass fails in training mode only: dropout seems to change the attention weights in "
                     "place (x *= mask, masked_fill_, .mul_), and the softmax's backward needs them as they were; let "
                     "dropout return new weights (attn_weights = self.dropout(attn_weights))")


def trains(module, x, out_shape, what):
    """A forward and a backward in training mode, dropout on: they must run where they run in eval mode
    (nn.Dropout(inplace=True) on the softmax's output passes every forward and every eval-mode backward, and
    breaks training; a backward that fails in eval mode too is the gradient checks' to charge). The cause is
    named from the module (its Dropout children's `inplace` flags), never from what the child's error says."""
    if not isinstance(module, RemoteObject):  # not a module of the child's: its forward was judged already
        return
    grads = Step("grads", {"handle": module._id}, (x,), {"grad_output": torch.ones(out_shape)}, 11)
    # one exchange; it stops at the first step that raises
    answers = module._student.plan([module.eval.as_step(), grads, module.train.as_step(), grads])
    if len(answers) < 4 or not isinstance(answers[3], StudentError):
        return  # ran, or raised in eval mode (the gradient checks') or before
    try:
        outcome(answers[3])
    except StudentError as error:
        described = module.describe()
        children = described.get("children", []) if isinstance(described, dict) else []
        layers = [c[0] for c in children if isinstance(c, (list, tuple)) and len(c) == 2 and c[1] == "Dropout"]
        if any(module.get(f"{name}.inplace") is True for name in layers if isinstance(name, str)):
            fail(f"{what}: {INPLACE_DROPOUT}", f"a backward pass in training mode: {error.explain()}",
                 cause=INPLACE_DROPOUT)
        fail(f"{what}: {TRAINING_BACKWARD}", f"a backward pass in training mode: {error.explain()}",
             cause=TRAINING_BACKWARD)


def dropout_verdict(train, reference, p, what, lower_triangle=None, again=None):
    """Judge training-mode weights against the eval weights: every weight 0 or eval / (1 - p), a
    fresh mask per sequence and per call (again: the same call repeated), and about a fraction p of
    them zeroed. train and reference: (batch, ..., T, T) weights (seen through identity value
    projections). Never compares with any particular dropout mask.
    """
    train, reference = train.double(), reference.double()
    T = reference.shape[-1]
    keep = ~torch.ones(T, T, dtype=torch.bool).triu(1) if lower_triangle is None else lower_triangle
    keep = keep.expand_as(reference)
    if torch.isnan(train).any():
        raise AssertionError(f"{what} in training mode contains NaN: dropout seems to act on the masked "
                             f"scores (-inf times 0 is NaN); apply dropout to the attention weights, after "
                             f"the softmax")
    if (train[~keep] != 0).any():
        raise AssertionError(f"{what} in training mode puts weight on future tokens: dropout must come after "
                             f"the causal mask and the softmax")
    t, r = train[keep], reference[keep]
    zero = t.abs() <= 1e-6
    scale = 1.0 / (1.0 - p)
    if not zero.any():
        if torch.allclose(t, r, atol=1e-5):
            raise AssertionError(f"{what} in training mode equals the eval-mode output: dropout is not applied "
                                 f"(call self.dropout on the attention weights)")
        raise AssertionError(f"{what} in training mode changes the weights but zeroes none of them: dropout "
                             f"must act on the attention weights after the softmax, not on the scores")
    kept_ok = (t[~zero] - r[~zero] * scale).abs() <= 1e-4 * scale
    if not kept_ok.all():
        if torch.allclose(t[~zero], r[~zero], atol=1e-5):
            raise AssertionError(f"{what} in training mode: the weights dropout keeps are not rescaled; they "
                                 f"must be divided by (1 - p), as nn.Dropout does")
        if torch.allclose(t[~zero], r[~zero] / p, atol=1e-4 / p):
            raise AssertionError(f"{what} in training mode: the kept weights are divided by p; divide by (1 - p)")
        raise AssertionError(f"{what} in training mode: each attention weight should be either 0 or its "
                             f"eval-mode value / (1 - p); some are neither (is dropout applied to the scores, "
                             f"the values or twice?)")
    if again is not None:
        fresh_masks(train, again.double(), what)
    n = t.numel()
    fraction = zero.double().mean().item()
    tolerance = 7 * math.sqrt(p * (1 - p) / n)  # 7 binomial standard deviations: never flakes
    if abs(fraction - p) > tolerance:
        fail(f"{what} in training mode zeroes {'too many' if fraction > p else 'too few'} attention weights: "
             f"nn.Dropout(p) zeroes each weight with probability p (is dropout applied twice, or with another p?)",
             f"zeroed {fraction:.1%} of {n}; p={p:g}, allowed +/- {tolerance:.1%}")
    # the mean over all draws: each kept weight is w / (1 - p), so the mean stays near the eval weights
    ratio = t.sum().item() / r.sum().item()
    bound = 7 * math.sqrt(p / (1 - p) * (r ** 2).sum().item()) / r.sum().item()
    if abs(ratio - 1) > bound:
        fail(f"{what} in training mode: the mean attention weight over many draws differs from the eval-mode "
             f"weights: the kept weights must be divided by (1 - p), so that dropout leaves the mean unchanged",
             f"{ratio:.3f} times the eval-mode mean (allowed: 1 +/- {bound:.3f})")


def fresh_masks(train, again, what):
    """Dropout draws a new random mask for every sequence and every call: the positions zeroed in
    train (batch, ..., T, T) must differ across the batch and from those of a second call (again).
    By chance, all 300 masks of a batch agree with probability below 1e-300, two calls' masks
    (6300 weights) below 1e-900."""
    dropped, dropped_again = train.abs() <= 1e-6, again.abs() <= 1e-6
    if train.shape[0] > 1 and bool((dropped == dropped[:1]).all()):
        raise AssertionError(f"{what} in training mode drops the same positions in every sequence of the batch: "
                             f"dropout must draw a fresh random mask for each one (as nn.Dropout does), not one "
                             f"mask made in __init__ or drawn once for all sequences")
    if bool((dropped == dropped_again).all()):
        raise AssertionError(f"{what} in training mode drops the same positions on every call: dropout must draw "
                             f"a new random mask each time (do not reseed the random generator in forward or "
                             f"keep a mask from __init__)")


def student_error_hint(error, hint):
    """Re-raise a StudentError with a hint, unless it is 'not implemented' (which must stay as is)."""
    if isinstance(error, StudentError) and error.not_implemented:
        raise error
    raise Mismatch(f"{error.explain()}. {hint}", student_text=error.student_text(), kind="raised", hint=hint) from None


def source_of(kwargs, part):
    """The part's submitted text as the grader reads it ('' without a student or a part)."""
    student = kwargs.get("student")
    return student.source(part) if part and student is not None else ""


def reads_module_variable(kwargs, part):
    """Does the part's module (as the grader reads it) read a top-level variable inside a function?"""
    from autograder.suites import source_mistakes

    return bool(part and kwargs.get("student") is not None and source_mistakes.reads_module_variable(source_of(kwargs, part)))


def refine(error, kwargs, part):
    """(message, cause) of a failed check made precise by the grader's reading of the part's module
    (suites/source_mistakes.py), or (.., '') when it adds nothing: the same check, the same place, the
    cause the text shows instead of the numbers' guess."""
    from autograder.suites import source_mistakes

    student, message = kwargs.get("student"), str(error)
    if not part or student is None:
        return message, ""
    if error.cause:
        why = source_mistakes.refined(error.cause, False, student.source(part))
        return (message.replace(error.cause, why), why) if why and error.cause in message else (message, "")
    if not (error.unexplained or error.student_text) or not reads_module_variable(kwargs, part):
        return message, ""
    if " is wrong" in message:  # the check's own words up to the verdict, then the cause
        head = message[:message.index(" is wrong") + len(" is wrong")]
    elif ". Hint: " in message:  # what the code raised, without the hint the cause replaces
        head = message[:message.index(". Hint: ")]
    else:
        return message, ""
    return f"{head}: {source_mistakes.GLOBAL_READ}", source_mistakes.GLOBAL_READ


def diagnose_errors(namespace, signature="", shape_cause=None):
    """Wrap every check test_* of a suite module so that what the student's code raised is named as
    a misconception where one is recognized (misconceptions.error_diagnosis); the exception's own
    text goes to student_text, never to the message. The checks keep their names and parameters.
    signature: the specified call the diagnoses quote, or a function of the check's name giving it
    (a module with two classes: each check quotes the signature of the class it builds). shape_cause:
    a function of (the check's name, the Student, the StudentError) giving the cause the grader's reading
    shows for a shape error the student's code raised ('' for none: source_mistakes.shape_error_cause),
    for the checks that do not turn a forward's shape error into their own message."""
    from autograder.suites import source_mistakes
    from autograder.suites.misconceptions import error_diagnosis, setting_changed

    part = namespace.get("PART", "")

    def wrap(check):
        spec = signature(check.__name__) if callable(signature) else signature

        @functools.wraps(check)
        def observed(*args, **kwargs):
            """A torch switch the check's operations changed and left changed, where it explains the failure:
            named as seen, in place of the misconception the numbers or the error would suggest."""
            changed = getattr(kwargs.get("student"), "changed_settings", None)
            if isinstance(changed, set):
                changed.clear()
            try:
                return diagnosed(*args, **kwargs)
            except AssertionError as e:  # a Mismatch, or a suite's own assertion
                why = setting_changed(changed, e) if changed else ""
                if not why:
                    raise
                raise Mismatch(why, "; ".join(filter(None, (str(e), str(getattr(e, "detail", ""))))),
                               str(getattr(e, "student_text", "")), cause=why) from None

        def diagnosed(*args, **kwargs):
            try:
                return check(*args, **kwargs)
            except StudentError as e:
                why = error_diagnosis(e, spec)
                if not why and not e.not_implemented:  # else the cause the module's text shows, if any
                    why = source_mistakes.raised_cause(e.kind, e.message, source_of(kwargs, part)) or \
                        (source_mistakes.GLOBAL_READ if reads_module_variable(kwargs, part) else "")
                student = kwargs.get("student")
                if not why and not e.not_implemented and shape_cause is not None and student is not None and \
                        any(w in e.message.lower() for w in source_mistakes.SHAPE_WORDS):
                    why = shape_cause(check.__name__, student, e)
                if not why:
                    raise
                raise Mismatch(f"{e.explain()}: {why}", student_text=e.student_text(), cause=why, kind="raised",
                               hint=why) from None
            except Mismatch as e:
                said, why = refine(e, kwargs, part)
                if not why:
                    raise
                raise Mismatch(said, e.detail, e.student_text, cause=why) from None
        return observed

    for name, value in list(namespace.items()):
        if name.startswith("test_") and callable(value):
            namespace[name] = wrap(value)


def judge_seeded(got, want, what, module, drawn, seed, mistakes, book=False, reveal=False,
                 order_hint="W_query, W_key, W_value", case="", part=""):
    """A seeded output: right, or wrong because of the draws (order, initialization), or of the math.

    mistakes: the misconceptions on the drawn weights (a @deferred *_mistakes list: computed only
    when the weights are the drawn ones but the output is still wrong). part: the module of the class,
    whose text (the grader's reading) may show why the weights are not the seed's.
    """
    from autograder.suites import expect
    from autograder.suites.misconceptions import judge, matches

    got = expect.as_tensor(got, what)
    if matches(got, want, 1e-4):
        return got
    own = state_of(module, what)
    if any(k not in own for k in drawn):  # layers named otherwise: matched by registration order
        order = [name for name, _ in parameter_order(module)]
        if len(order) == len(drawn) and all(name in own for name in order):
            own = {k: own[name] for k, name in zip(drawn, order, strict=True)}
    problem = seeding_problem(own, drawn, seed, book, order_hint)
    if problem and part and isinstance(module, RemoteObject):
        from autograder.suites import source_mistakes

        if source_mistakes.seeds_in_init(module._student.source(part)):
            why = source_mistakes.SEEDED_IN_INIT
            fail(f"{what} differs from the expected output: {why}", "; ".join(filter(None, (case, problem))), cause=why)
    if problem:
        fail(f"{what} differs from the expected output: {problem}", case)
    return judge(got, want, what, mistakes, reveal=reveal, case=case)
