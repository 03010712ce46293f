"""Hidden checks for exercises.py (Exercises 3.2 and 3.3): the right arguments for the chapter's classes.

The exercises build on mha.py (and so on causal.py). They are judged on what they ask of those
classes: the student's function runs with MultiHeadAttentionWrapper or MultiHeadAttention replaced
by a stand-in that keeps the constructor's arguments, so whatever mha.py does (wrong numbers,
raising, printing, hanging) costs points in mha only. Only a function that builds its module some
other way (no call to the class by its name) is judged by the module it returns, compared with the
student's own class built with the right arguments. The 2.36M-parameter GPT-2 module is then built
once per part and shared by the checks.
"""
import math

import torch

from autograder import source_reading, stand_ins
from autograder.student import StudentError
from autograder.suites import expect, helpers, part_marker, reference
from autograder.suites.misconceptions import matches

pytestmark = part_marker("exercises")
PART = "exercises"
GPT2_PARAMETERS = ("W_query.weight", "W_key.weight", "W_value.weight", "out_proj.weight", "out_proj.bias")
GPT2_CALL = "MultiHeadAttention(768, 768, context_length=1024, dropout=0.0, num_heads=12)"
CONTRACT = ("d_in", "d_out", "context_length", "dropout", "num_heads", "qkv_bias")
ALIASES = {"context_len": "context_length", "ctx_len": "context_length", "n_heads": "num_heads",
           "drop_rate": "dropout", "dropout_rate": "dropout", "bias": "qkv_bias"}


OTHER_CLASSES = {"MultiHeadAttention", "CausalAttention"}


def class_names(student, class_name):
    """class_name and, for the wrapper, every other class exercises.py imports from mha (read from its
    source here, never run): a wrapper the student's mha names otherwise (MultiHeadCausalAttentionWrapper)
    is charged in mha only, never again here."""
    names = [class_name]
    if class_name == "MultiHeadAttentionWrapper":
        names += [n for n in source_reading.imported_from(student.source(PART), "mha")
                  if n[:1].isupper() and n not in OTHER_CLASSES | {class_name}]
    return names


def asked(student, function, class_name, *args, right=None, **kwargs):
    """The arguments function(*args) passes to the chapter's class_name (or the wrapper under the
    name exercises.py imports it by, class_names), as {contract name: value}; None when it does not
    call that class by its name (then the module it returns is judged).

    The class call gives back None. A function that uses what it built before returning it (a learner's
    check of Exercise 3.3's parameter count, a test forward) raises on that None: it runs again with the
    call giving back right(), a module made by the class the child has for mha (the student's own when it is
    right on its own, else the grader's: suites/dependencies.py) with the exercise's own arguments, and is
    judged by the arguments it asked for, never by what it returns then (the grader made that module)."""
    patches = tuple((module, name) for name in class_names(student, class_name) for module in (PART, "mha"))
    try:
        result, calls = student.record(function, *args, patches=patches, **kwargs)
    except StudentError as error:
        if error.not_implemented or right is None:
            raise
        try:
            made = right()
            result, calls = student.record(function, *args, patches=patches, returns=(made,), **kwargs)
        except (StudentError, AssertionError):
            raise error from None
        if not calls:
            raise error from None
        result = None
    if result is not None:  # not what the class call gave back (the recorder returns None): the module it
        return None         # returns is judged, whatever it asked the class for
    if len(calls) != 1:
        return None if not calls else {"calls": len(calls)}
    call = calls[0]
    # the class's own parameter names, when it has a real signature (not a bare *args, **kwargs)
    names = call.names if call.names and not {"args", "kwargs"} & set(call.names) else None

    def contract_name(name, position):
        name = ALIASES.get(name, name)
        if name in CONTRACT:
            return name
        return CONTRACT[position] if position is not None and position < len(CONTRACT) else None

    found: dict = {}
    for position, value in enumerate(call.args):
        found.setdefault(contract_name(names[position] if names and position < len(names) else None, position), value)
    for name, value in call.kwargs.items():
        found.setdefault(contract_name(name, names.index(name) if names and name in names else None), value)
    if names:  # the defaults of the student's own class
        for position, (name, value) in enumerate(zip(names, call.bound, strict=False)):
            found.setdefault(contract_name(name, position), value)
    found.pop(None, None)
    found.setdefault("qkv_bias", False)
    return found


def right_wrapper(student, d_in, ctx, dropout):
    """MultiHeadAttentionWrapper(d_in, 1, ctx, dropout, num_heads=2), Exercise 3.2's module, made by the child's mha."""
    return student.module("mha").MultiHeadAttentionWrapper(d_in, 1, ctx, dropout, num_heads=2)


def gpt2(student):
    """exercises.gpt2_small_attention(), made once per part (the part's checks share one child)."""
    module = getattr(student, "_gpt2_small_attention", None)
    if module is None:
        module = student.module(PART).gpt2_small_attention()
        student._gpt2_small_attention = module
    return module


def gpt2_weights(module):
    """The trained tensors of the student's GPT-2 module, without its 1024 x 1024 mask (4 MiB less to
    copy); the whole state_dict when the module does not have them under the book's names."""
    try:
        weights = {name: module.get(name) for name in GPT2_PARAMETERS}
    except StudentError:
        weights = {}
    if weights and all(isinstance(w, torch.Tensor) for w in weights.values()):
        return weights
    return helpers.state_of(module, "gpt2_small_attention()")


def judge_two_dim(student, got, what, d_in, ctx, dropout, x, seed, call_seed, reveal=False):
    """got: two_dim_wrapper's output; right when it is what the grader's own MultiHeadAttentionWrapper(d_in,
    1, ctx, dropout, num_heads=2) (the reference solution's, run here, in the grader's process) gives under
    the same seeds, and never when it holds no attention (zeros, a constant, the input). Nothing the
    student's modules hold is the reference: exercises.py can delete or replace mha's wrapper on import."""
    got = expect.as_tensor(got, what)
    if helpers.uninformative(got, x):
        expect.fail(f"{what} gives an output that holds no attention (all zero, one value everywhere, NaN or Inf, or "
                    f"its input handed back): two_dim_wrapper should return MultiHeadAttentionWrapper(d_in, 1, "
                    f"context_length, dropout, num_heads=2)")
    if matches(got, graders_wrapper(d_in, ctx, dropout, x, seed, call_seed), 1e-5):
        return
    if got.dim() == 0 or got.shape[-1] != 2:
        width = got.shape[-1] if got.dim() else "none"
        expect.fail(f"{what} has output width {width}: Exercise 3.2 asks for 2 with num_heads=2, so each head "
                    f"needs d_out=1")
    if dropout and matches(got, graders_wrapper(d_in, ctx, 0.0, x, seed, call_seed), 1e-5):
        expect.fail(f"{what} ignores its dropout argument: pass it on to MultiHeadAttentionWrapper")
    expect.fail(f"{what} differs from MultiHeadAttentionWrapper(d_in, 1, context_length, dropout, num_heads=2) "
                         f"made after the same seed" + ("" if not reveal else
                                                         ": two_dim_wrapper should return exactly that module"))


def graders_wrapper(d_in, ctx, dropout, x, seed, call_seed):
    """The output of the reference solution's MultiHeadAttentionWrapper(d_in, 1, ctx, dropout, num_heads=2),
    built after `seed` and run after `call_seed` on the CPU generator, as the child does (child.reset_global_state)."""
    wrapper = stand_ins.solutions()["mha"].MultiHeadAttentionWrapper
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        module = wrapper(d_in, 1, ctx, dropout, num_heads=2)
        torch.manual_seed(call_seed)
        with torch.no_grad():
            return module(x)


def two_dim_problem(found, d_in, ctx, dropout):
    """'' when two_dim_wrapper asked for MultiHeadAttentionWrapper(d_in, 1, ctx, dropout, num_heads=2)."""
    if "calls" in found:
        return "two_dim_wrapper should make one MultiHeadAttentionWrapper"
    heads, width = found.get("num_heads"), found.get("d_out")
    if heads != 2:
        return (f"two_dim_wrapper builds the wrapper with num_heads={heads}: Exercise 3.2 keeps num_heads=2 and "
                f"makes each head 1 dim wide (d_out=1)")
    if width != 1:
        total = width * 2 if isinstance(width, int) else "not 2"
        return (f"two_dim_wrapper's module has output width {total}: Exercise 3.2 asks for 2 with num_heads=2, "
                f"so each head needs d_out=1")
    if found.get("d_in") != d_in or found.get("context_length") != ctx:
        return "two_dim_wrapper must pass its d_in and context_length on to MultiHeadAttentionWrapper"
    if found.get("dropout") != dropout:
        return "two_dim_wrapper ignores its dropout argument: pass it on to MultiHeadAttentionWrapper"
    if found.get("qkv_bias"):
        return "two_dim_wrapper turns on qkv_bias: the exercise keeps the book's default, qkv_bias=False"
    return ""


def test_ex32_book_example(student, book):
    found = asked(student, student.module(PART).two_dim_wrapper, "MultiHeadAttentionWrapper", 3, 6,
                  right=lambda: right_wrapper(student, 3, 6, 0.0))
    if found is not None:
        problem = two_dim_problem(found, 3, 6, 0.0)
        if problem:
            expect.fail(f"Exercise 3.2: {problem}")
        return
    _, answer = helpers.built_and_called(student.module(PART).two_dim_wrapper, (3, 6), {}, 123, (book.batch,))
    got = expect.as_tensor(answer(), "two_dim_wrapper(3, 6)(batch)")
    if matches(got, book["ex32_mha_wrapper_dout1_seed123"], 1e-4):
        return
    judge_two_dim(student, got, "torch.manual_seed(123); two_dim_wrapper(3, 6)(batch)", 3, 6, 0.0, book.batch, 123, 0,
                  reveal=True)


def test_ex32_two_heads_of_width_one(student, rng):
    d_in, ctx, p = 5, 9, 0.1
    what = "two_dim_wrapper with other sizes and dropout"
    found = asked(student, student.module(PART).two_dim_wrapper, "MultiHeadAttentionWrapper", d_in, ctx, p,
                  right=lambda: right_wrapper(student, d_in, ctx, p))
    if found is not None:
        problem = two_dim_problem(found, d_in, ctx, p)
        if problem:
            expect.fail(f"{what}: {problem}", f"two_dim_wrapper({d_in}, {ctx}, {p})")
        return
    seed, call_seed = helpers.draw_seed(rng), helpers.draw_seed(rng)
    x = torch.rand(2, ctx, d_in, generator=rng)  # num_tokens == context_length: shorter inputs are causal's
    _, answer = helpers.built_and_called(student.module(PART).two_dim_wrapper, (d_in, ctx, p), {}, seed, (x,), call_seed)
    judge_two_dim(student, answer(), what, d_in, ctx, p, x, seed, call_seed)


def gpt2_asked(student):
    found = getattr(student, "_gpt2_asked", "unset")
    if found == "unset":
        found = asked(student, student.module(PART).gpt2_small_attention, "MultiHeadAttention",
                      right=lambda: student.module("mha").MultiHeadAttention(768, 768, 1024, 0.0, num_heads=12))
        student._gpt2_asked = found
    return found


def test_ex33_parameter_count(student, book):
    found = gpt2_asked(student)
    want = book["ex33_param_count"]
    if found is not None:
        if "calls" in found:
            expect.fail("gpt2_small_attention() should make one MultiHeadAttention")
        if found.get("qkv_bias"):
            expect.fail(f"gpt2_small_attention() turns on qkv_bias: the exercise uses qkv_bias=False ({want:,} "
                        f"parameters)")
        if found.get("d_in") != 768 or found.get("d_out") != 768:
            expect.fail(f"gpt2_small_attention() does not map 768 dims to 768 dims: {GPT2_CALL} has {want:,} parameters")
        return
    module = gpt2(student)
    info = module.describe()
    count = sum(math.prod(shape) for _, shape, _ in info["parameters"])
    if count == want:
        return
    own = student.module("mha").MultiHeadAttention(768, 768, 1024, 0.0, num_heads=12)
    if own.describe()["parameters"] == info["parameters"]:
        return  # the count of the student's own MultiHeadAttention with GPT-2's sizes: graded in mha
    names = [name for name, _, _ in info["parameters"]]
    if any(n in names for n in ("W_query.bias", "W_key.bias", "W_value.bias")):
        expect.fail(f"gpt2_small_attention() has {count:,} parameters, biases in W_query, W_key and W_value "
                    f"included: the exercise uses qkv_bias=False ({want:,} parameters)")
    expect.fail(f"gpt2_small_attention() has {count:,} parameters; {GPT2_CALL} has {want:,}")


def test_ex33_heads_and_context(student, rng):
    found = gpt2_asked(student)
    if found is not None:
        if "calls" in found:
            expect.fail("gpt2_small_attention() should make one MultiHeadAttention")
        if found.get("num_heads") != 12:
            expect.fail(f"gpt2_small_attention() is built with num_heads={found.get('num_heads')}: GPT-2 small has 12 "
                        f"heads of head_dim 64")
        if found.get("context_length") != 1024:
            expect.fail("gpt2_small_attention()'s mask has the wrong size: GPT-2 small's context length is 1024")
        if found.get("dropout") not in (0, 0.0):
            expect.fail("gpt2_small_attention() uses dropout: the exercise asks for dropout=0.0")
        return
    behaviour_heads_and_context(student, rng)


def behaviour_heads_and_context(student, rng):
    module = gpt2(student)
    info = module.describe()
    squares = [helpers.square_shape(shape) for _, shape, _ in info["buffers"] if helpers.square_shape(shape)]
    if squares and squares[0] != (1024, 1024):
        expect.fail("gpt2_small_attention()'s mask has the wrong size: GPT-2 small's context length is 1024")
    x = (torch.rand(1, 4, 768, generator=rng) - 0.5) * 20
    got = expect.as_tensor(module(x), "gpt2_small_attention()(x)")
    state = gpt2_weights(module)
    if all(n in state for n in GPT2_PARAMETERS) and tuple(state["W_query.weight"].shape) == (768, 768):
        if matches(got, reference.multi_head(x, state, 12), 1e-3) and squares:
            return
        for h in (1, 2, 3, 4, 6, 8, 16, 24):
            if matches(got, reference.multi_head(x, state, h), 1e-3):
                expect.fail(f"gpt2_small_attention() is built with num_heads={h}: GPT-2 small has 12 heads of "
                            f"head_dim 64")
    own = student.module("mha").MultiHeadAttention(768, 768, 1024, 0.0, num_heads=12)
    own_info = own.describe()
    if own_info["buffers"] != info["buffers"] or own_info["parameters"] != info["parameters"]:
        expect.fail(f"gpt2_small_attention() is not {GPT2_CALL}: its parameters or buffers differ")
    trained = {name for name, _, _ in own_info["parameters"]}
    helpers.load_known(own, {k: v for k, v in state.items() if k in trained}, GPT2_CALL)
    if not matches(got, expect.as_tensor(own(x), GPT2_CALL), 1e-4):
        expect.fail(f"gpt2_small_attention() computes differently from {GPT2_CALL} with the same weights: "
                    f"GPT-2 small has 12 heads of head_dim 64 and no dropout here")


helpers.diagnose_errors(globals())
