"""Hidden checks for self_attention_v2.py (book section 3.4.2): SelfAttention_v2 with nn.Linear projections.

As for v1: the book's seed 789, other seeds and sizes drawn here with nn.Linear in the specified
order, and the math with known weights loaded, each judged on its own.
"""
import torch

from autograder.suites import expect, helpers, part_marker, reference, source_mistakes
from autograder.suites.helpers import QKV
from autograder.suites.misconceptions import attention_mistakes, deferred, judge

pytestmark = part_marker("self_attention_v2")
PART = "self_attention_v2"


def projections(x, state):
    return tuple(reference.linear(x, state[f"{n}.weight"], state.get(f"{n}.bias")) for n in QKV)


def v2_output(x, state):
    return reference.single_head(x, state, causal=False)


@deferred
def v2_mistakes(x, state):
    found = list(attention_mistakes(*projections(x, state), causal=False, d_in=x.shape[-1]))
    if x.shape[-1] == state["W_query.weight"].shape[0]:  # square weights: x @ layer.weight runs, and is wrong
        q, k, v = (reference.linear(x, state[f"{n}.weight"].T, state.get(f"{n}.bias")) for n in QKV)
        found.append((reference.attention(q, k, v, causal=False), source_mistakes.WEIGHT_NOT_TRANSPOSED))
    return found


def expected_parameters(d_in, d_out, bias):
    table: list[tuple[str, tuple[int, ...]]] = []
    for name in QKV:
        table.append((f"{name}.weight", (d_out, d_in)))
        if bias:
            table.append((f"{name}.bias", (d_out,)))
    return table


def parameter_problem(sa, d_in, d_out, bias):
    """'' when sa has the specified nn.Linear layers and parameters; else what differs (message, detail)."""
    info = sa.describe()
    layers = [(name, kind) for name, kind in info["children"] if name in QKV]
    if sorted(layers) != [(name, "Linear") for name in sorted(QKV)]:
        return ("SelfAttention_v2 should have three nn.Linear layers named W_query, W_key, W_value",
                f"children: {info['children']}")
    table = [(name, tuple(shape)) for name, shape, _ in info["parameters"]]
    if sorted(table) == sorted(expected_parameters(d_in, d_out, bias)):  # the order: seeded checks
        return None
    with_bias = sorted({name.split(".")[0] for name, _ in table if name.endswith(".bias")} & set(QKV))
    if with_bias != (list(QKV) if bias else []):
        return (f"with qkv_bias={bias} the layers with a bias are {', '.join(with_bias) or 'none'}: pass "
                f"bias=qkv_bias to each nn.Linear", f"parameters: {table}")
    return ("SelfAttention_v2's parameters are not those of nn.Linear(d_in, d_out) layers",
            f"expected {expected_parameters(d_in, d_out, bias)}; it has {table}")


def test_v2_linear_layers(student):
    for d_in, d_out in ((3, 2), (5, 4)):
        problem = parameter_problem(student.module(PART).SelfAttention_v2(d_in, d_out), d_in, d_out, False)
        if problem:
            expect.fail(*problem)


def test_v2_book_example(student, book):
    sa, answer = helpers.built_and_called(student.module(PART).SelfAttention_v2, (3, 2), {}, 789, (book.inputs,))
    drawn = helpers.drawn_linears(789, helpers.qkv_layers(3, 2, False))
    helpers.judge_seeded(answer(), book["sa_v2_seed789"], "torch.manual_seed(789); SelfAttention_v2(3, 2)(inputs)",
                         sa, drawn, 789, v2_mistakes(book.inputs, drawn), book=True, reveal=True, part=PART)


def judge_seeded_v2(student, rng, d_in, d_out, T, bias):
    seed = helpers.draw_seed(rng)
    x = torch.rand(T, d_in, generator=rng)
    options = {"qkv_bias": True} if bias else {}  # qkv_bias is only passed where it matters
    sa, answer = helpers.built_and_called(student.module(PART).SelfAttention_v2, (d_in, d_out), options, seed, (x,))
    drawn = helpers.drawn_linears(seed, helpers.qkv_layers(d_in, d_out, bias))
    helpers.judge_seeded(answer(), v2_output(x, drawn), "SelfAttention_v2 made after another seed, with other sizes"
                         + (" and qkv_bias=True" if bias else ""), sa, drawn, seed, v2_mistakes(x, drawn),
                         case=f"seed {seed}, SelfAttention_v2({d_in}, {d_out}, qkv_bias={bias}) on {T} tokens", part=PART)


def judge_known_v2(student, rng, d_in, d_out, T, bias):
    x = torch.rand(T, d_in, generator=rng)
    state = helpers.random_qkv_state(d_in, d_out, rng, bias, scale=2.0)
    options = {"qkv_bias": True} if bias else {}
    what = "SelfAttention_v2" + (" with qkv_bias=True" if bias else "")
    sa = helpers.build_known(student.module(PART).SelfAttention_v2, (d_in, d_out), options, state, what)
    judge(sa(x), v2_output(x, state), f"{what} with known weights", v2_mistakes(x, state),
          hint="Compute softmax(queries @ keys.T / sqrt(d_k), dim=-1) @ values",
          case=f"SelfAttention_v2({d_in}, {d_out}, qkv_bias={bias}) on {T} tokens")


def test_v2_unseen_seeds_and_sizes(student, rng):
    for d_in, d_out, T in ((3, 2, 6), (4, 6, 3), (6, 4, 1)):
        judge_seeded_v2(student, rng, d_in, d_out, T, False)


def test_v2_math_with_loaded_weights(student, rng):
    for d_in, d_out, T in ((4, 3, 5), (3, 5, 8), (2, 2, 1), (6, 4, 6)):
        judge_known_v2(student, rng, d_in, d_out, T, False)


def test_v2_qkv_bias(student, rng):
    problem = parameter_problem(student.module(PART).SelfAttention_v2(4, 5, qkv_bias=True), 4, 5, True)
    if problem:
        expect.fail(*problem)
    judge_seeded_v2(student, rng, 4, 6, 3, True)
    for d_in, d_out, T in ((3, 5, 8), (2, 2, 1)):
        judge_known_v2(student, rng, d_in, d_out, T, True)


def test_v2_float64_and_gradients(student, rng):
    d_in, d_out, T = 4, 3, 5
    state = helpers.random_qkv_state(d_in, d_out, rng, scale=2.0, dtype=torch.float64)
    x = torch.rand(T, d_in, generator=rng, dtype=torch.float64)
    sa = helpers.build_known(student.module(PART).SelfAttention_v2, (d_in, d_out), {}, state,
                             "SelfAttention_v2 after .double()", then=("double",))
    got = sa(x)
    what = "SelfAttention_v2 after .double(), on float64 inputs"
    if getattr(got, "dtype", None) != torch.float64:
        expect.fail(f"{what} returns {getattr(got, 'dtype', type(got).__name__)}: compute in the dtype of "
                    f"the inputs and weights (no .float() or float32 tensors made inside forward)")
    judge(got, v2_output(x, state), what, v2_mistakes(x, state), atol=1e-6)
    g = torch.rand(T, d_out, generator=rng, dtype=torch.float64)
    want = helpers.reference_grads(lambda s: v2_output(x, s), state, g)
    helpers.compare_grads(*helpers.grads_and_reference(sa, x, g, want), "SelfAttention_v2", atol=1e-6)


helpers.diagnose_errors(globals(), "SelfAttention_v2(d_in, d_out, qkv_bias=False)")
