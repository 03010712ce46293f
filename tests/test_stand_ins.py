"""Issue 28 item 2 and issue 27 item 5: the grader's classes stand in for another part with nothing of
their code in the student's process.

The child's stand-ins (inside/stand_in.py) hold the layout and tensors of the reference solutions'
classes and ask the grader for every computation; the grader answers with solutions/ch03 itself
(stand_ins.py). Here: the stand-ins make the solutions' draws, outputs and gradients (the
question and answer path run in this process over pipes, as the child runs it); the grader refuses
questions too large to answer; and, graded in the real sandbox, a submission that looks for the
grader's code in its own process (frames, the garbage collector's objects, a replaced compile and
exec, __code__, inspect.getsource) finds none of it while the part that uses the stand-in keeps
full marks.
"""
import inspect
import os
import shutil
import threading
import types

import pytest
import torch
from part_edits import failed, grade, scores, submission

from autograder import PACKAGE_DIR, runner, selftest, stand_ins
from autograder.inside import protocol, stand_in
from autograder.student import stand_in_answer

ARGUMENTS = {"SelfAttention_v1": (3, 4), "SelfAttention_v2": (3, 4, True), "CausalAttention": (3, 4, 6, 0.5, True),
             "MultiHeadAttentionWrapper": (3, 2, 6, 0.0, 2), "MultiHeadAttention": (3, 4, 6, 0.0, 2)}


@pytest.fixture
def channel():
    """The child's channel to a grader that answers stand-ins' questions (a thread of this process)."""
    requests_r, requests_w = os.pipe()
    replies_r, replies_w = os.pipe()
    saved = dict(stand_in.CHANNEL)
    stand_in.CHANNEL.update(requests=requests_r, replies=replies_w)

    def grader():
        while True:
            try:
                reply, payload = protocol.receive(replies_r)
            except protocol.ProtocolError:
                return
            protocol.send(requests_w, *stand_in_answer(reply, payload, GIVEN, LEDGER))

    thread = threading.Thread(target=grader, daemon=True)
    thread.start()
    yield
    os.close(replies_w)
    thread.join(5)
    for fd in (requests_r, requests_w, replies_r):
        os.close(fd)
    stand_in.CHANNEL.clear()
    stand_in.CHANNEL.update(saved)


GIVEN = stand_ins.allowed(stand_ins.MODULES)  # what a child given every stand-in may ask about
LEDGER = stand_ins.Ledger()


def stand_in_classes():
    for module in stand_ins.MODULES:
        made = stand_in.make_module(module, stand_ins.classes(module))
        for name in stand_ins.classes(module):
            yield module, name, getattr(made, name), getattr(stand_ins.solutions()[module], name)


@pytest.mark.quick
def test_the_stand_ins_draw_compute_and_differentiate_as_the_solutions_do(channel):
    seen = set()
    for _module, name, ours, theirs in stand_in_classes():
        seen.add(name)
        assert str(inspect.signature(ours)) == str(inspect.signature(theirs)), name
        torch.manual_seed(7)
        want, want_next = theirs(*ARGUMENTS[name]), torch.rand(3)
        torch.manual_seed(7)
        got, got_next = ours(*ARGUMENTS[name]), torch.rand(3)
        assert torch.equal(want_next, got_next), f"{name}: the generator is not where the solution leaves it"
        assert list(want.state_dict()) == list(got.state_dict()), name
        assert all(torch.equal(a, b) for a, b in zip(want.state_dict().values(), got.state_dict().values(), strict=True)), name
        assert [type(m).__name__ for m in want.modules()] == [type(m).__name__ for m in got.modules()], name
        want.eval(), got.eval()
        x = torch.rand(5, 3) if name.startswith("SelfAttention") else torch.rand(2, 5, 3)
        x_want, x_got = x.clone().requires_grad_(), x.clone().requires_grad_()
        out_want, out_got = want(x_want), got(x_got)
        assert torch.allclose(out_want, out_got, atol=1e-6), name
        upstream = torch.rand_like(out_want)
        (out_want * upstream).sum().backward()
        (out_got * upstream).sum().backward()
        assert torch.allclose(x_want.grad, x_got.grad, atol=1e-6), name
        for (key, a), (_, b) in zip(want.named_parameters(), got.named_parameters(), strict=True):
            assert torch.allclose(a.grad, b.grad, atol=1e-6), (name, key)
    assert seen == set(ARGUMENTS)


def test_the_stand_in_functions_answer_and_differentiate_as_the_solutions_do(channel):
    """causal.py's functions, which a student's mha.py may import, stand in too when causal is not right
    on its own: the same signature, masks and weights (on a batch of heads, as mha gives them, and with
    d_k given as a tensor), the same gradients, and the answer put on the device asked for."""
    made = stand_in.make_module("causal", stand_ins.classes("causal"), stand_ins.functions("causal"))
    solution = stand_ins.solutions()["causal"]
    assert sorted(stand_ins.functions("causal")) == ["causal_mask", "masked_attention_weights"]
    for name in stand_ins.functions("causal"):
        assert str(inspect.signature(getattr(made, name))) == str(inspect.signature(getattr(solution, name))), name
        assert ("causal", name) in GIVEN
    for n in (1, 4, 9):
        assert torch.equal(made.causal_mask(n), solution.causal_mask(n)) and made.causal_mask(n).dtype == torch.bool
    assert made.causal_mask(3, device="meta").device.type == "meta"
    assert made.causal_mask(3, torch.device("cpu")).device.type == "cpu"
    scores = torch.rand(2, 3, 5, 5, dtype=torch.float64)
    ours, theirs = scores.clone().requires_grad_(), scores.clone().requires_grad_()
    got, want = made.masked_attention_weights(ours, torch.tensor(4)), solution.masked_attention_weights(theirs, 4)
    assert got.dtype == torch.float64 and torch.allclose(got, want, atol=1e-12)
    upstream = torch.rand_like(want)
    (got * upstream).sum().backward()
    (want * upstream).sum().backward()
    assert torch.allclose(ours.grad, theirs.grad, atol=1e-12)
    with pytest.raises(TypeError):
        made.masked_attention_weights(scores)  # a missing argument: the real function's TypeError


def test_the_stand_in_functions_on_the_emulated_gpu_answer_shapes_where_the_solutions_would(channel):
    """On the emulated GPU (fake tensors: no data to send) a stand-in function asks for its answer's shape
    and dtype only, and gives it on the device the solution would: the scores' device, or the device asked
    for; causal_mask without one on the CPU, as the solution's does (a GPU bug of the caller's, seen there)."""
    from autograder.inside import emulated_gpu

    made = stand_in.make_module("causal", {}, stand_ins.functions("causal"))
    with emulated_gpu.EmulatedGPU() as gpu:
        scores = gpu.tensor(torch.empty(2, 3, 5, 5, dtype=torch.float64))
        weights = made.masked_attention_weights(scores, 4)
        mask_here, mask_there = made.causal_mask(5), made.causal_mask(5, scores.device)
        assert (weights.device, tuple(weights.shape), weights.dtype) == (emulated_gpu.CUDA, (2, 3, 5, 5), torch.float64)
        assert (mask_here.device.type, mask_there.device, mask_there.dtype) == ("cpu", emulated_gpu.CUDA, torch.bool)
        with pytest.raises(ValueError):
            made.masked_attention_weights(gpu.tensor(torch.empty(2, 3, 5, 4)), 4)  # the solution's own shape error
        with pytest.raises(RuntimeError, match="device"):
            scores.masked_fill(mask_here, 0.0)


def test_function_questions_too_large_or_not_given_are_refused(channel):
    """A call is bounded as a forward is (its numbers and the memory its tensors make); a function of a
    module the child was not given is never answered."""
    made = stand_in.make_module("causal", {}, stand_ins.functions("causal"))
    with pytest.raises(ValueError, match="whole numbers from 0 to 4096"):
        made.causal_mask(5000)
    with pytest.raises(ValueError, match="larger than the grader's stand-in takes"):
        made.masked_attention_weights(torch.empty(1 << 26, 1, 1), 2)
    ledger = stand_ins.Ledger()
    with pytest.raises(stand_ins.NotGiven):
        stand_ins.answer({"do": "call", "where": ["causal", "causal_mask"], "arguments": [3, None], "tensor_at": []},
                         [], stand_ins.allowed(["mha"]), ledger)
    assert ledger.refused == ["asked the grader to compute causal.causal_mask, a class or function it was not given"]
    given = stand_ins.allowed(["causal"])
    for shapes in ([[[1 << 40], "float32"]], [[[2, 4, 4], "complex64"]], [[[-1, 4], "float32"]], [[[4, 4]]], "x", []):
        with pytest.raises(stand_ins.Refused, match="malformed question"):  # an emulated GPU's call, malformed
            stand_ins.answer({"do": "call", "where": ["causal", "masked_attention_weights"], "arguments": [None, 2],
                              "tensor_at": [0], "shapes": shapes}, [], given)
    with pytest.raises(stand_ins.Refused, match="not one of the grader's functions"):
        stand_ins.answer({"do": "call", "where": ["causal", "CausalAttention"], "arguments": [], "tensor_at": []},
                         [], frozenset({("causal", "CausalAttention")}))


def test_a_changed_stand_in_computes_with_the_child_s_tensors(channel):
    """Weights set from outside (as a transfer does) are the ones the grader computes with; a bias
    set to None is left out, as the class itself would leave it out."""
    made = stand_in.make_module("self_attention_v2", stand_ins.classes("self_attention_v2"))
    theirs = stand_ins.solutions()["self_attention_v2"].SelfAttention_v2(3, 4, True)
    ours = made.SelfAttention_v2(3, 4, True)
    with torch.no_grad():
        for layer in ("W_query", "W_key", "W_value"):
            getattr(ours, layer).weight = torch.nn.Parameter(getattr(theirs, layer).weight.clone())
            getattr(ours, layer).bias = getattr(theirs, layer).bias = None
    x = torch.rand(5, 3)
    assert torch.allclose(ours(x), theirs(x), atol=1e-6)


@pytest.mark.parametrize("arguments, refusal", [
    ((3, 4096 * 2, 6, 0.0, 2), "whole numbers from 0 to 4096"),
    ((4096, 4096, 4096, 0.0, 4096), "holds at most"),
    ((3, 4, 6, "0.0", 2), "numbers, booleans or None"),
])
def test_questions_too_large_or_not_numbers_are_refused(channel, arguments, refusal):
    made = stand_in.make_module("mha", stand_ins.classes("mha"))
    with pytest.raises((ValueError, TypeError), match=refusal):
        made.MultiHeadAttentionWrapper(*arguments)


def test_a_stand_in_too_large_is_refused_while_it_is_built(monkeypatch):
    """The bound is kept as the parameters and buffers are registered: a wrapper of 4096 heads of
    4096 tokens is refused within its first heads, the grader building no more of it (before: all
    4096 heads on the meta device, seconds of the grader's time, then the refusal)."""
    solution = stand_ins.solutions()["mha"]
    head = solution.CausalAttention
    built = []

    class Counted(head):
        def __init__(self, *args, **kwargs):
            built.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(solution, "CausalAttention", Counted)
    with pytest.raises(stand_ins.Refused, match="holds at most"):
        stand_ins._built(solution.MultiHeadAttentionWrapper, [4096, 4096, 4096, 0.0, 4096])
    assert 1 <= len(built) <= 3, len(built)


def test_the_child_s_side_holds_no_line_of_the_reference():
    """No line of the solutions' classes is in any file that runs in the room."""
    lines = set()
    for module in stand_ins.MODULES:
        source = (selftest.SOLUTIONS / f"{module}.py").read_text(encoding="utf-8")
        lines |= {line.strip() for line in source.splitlines() if len(line.strip()) > 25}
    for path in (PACKAGE_DIR / "sandbox").glob("*.py"):
        shared = {line for line in lines if line in path.read_text(encoding="utf-8")}
        assert not shared, (path.name, sorted(shared)[:3])


# mha.py looks for the grader's code from inside the wrapper's forward, where the heads are the
# grader's stand-ins (causal.py is wrong); whatever it finds makes its output wrong and is printed
ATTACK = '''
import builtins as _builtins
import gc as _gc
import inspect as _inspect
import sys as _sys

_COMPILED = []
_real_compile, _real_exec = _builtins.compile, _builtins.exec


def _compile(source, *args, **kwargs):
    _COMPILED.append(str(source)[:200])
    return _real_compile(source, *args, **kwargs)


def _exec(source, *args, **kwargs):
    _COMPILED.append(str(getattr(source, "co_filename", source))[:200])
    return _real_exec(source, *args, **kwargs)


_builtins.compile, _builtins.exec = _compile, _exec
# written backwards, so that the scan does not find its own words
MARKERS = ("NOITULOS NIGEB", "noitnetta-fles lasuac daeh-elgniS", "_llif_deksam.serocs_ntta", "ecnerefer_30hc_",
           "30hc/snoitulos", "yp.ecnerefer", "/setius/")


def _hits(value):
    return [m[::-1] for m in MARKERS if isinstance(value, str) and m[::-1] in value]


def _look(head):
    found, texts = [], list(_COMPILED)
    cls = type(head)
    for target in (cls, cls.forward, cls.__init__):
        try:
            texts.append(_inspect.getsource(target))
        except (OSError, TypeError) as e:
            texts.append(type(e).__name__)
    for function in (cls.forward, cls.__init__):
        code = getattr(function, "__code__", None)
        if code is not None:
            texts += [code.co_filename] + [str(c) for c in code.co_consts]
    frame = _sys._getframe()
    while frame is not None:
        texts += [frame.f_code.co_filename] + [str(v)[:300] for v in frame.f_locals.values()]
        frame = frame.f_back
    for obj in _gc.get_objects():
        code = getattr(obj, "__code__", None) if callable(obj) else None
        if code is not None:
            texts.append(code.co_filename)
        if isinstance(obj, dict):
            texts += [v for v in obj.values() if isinstance(v, str)]
        elif isinstance(obj, (list, tuple)):
            texts += [v for v in obj if isinstance(v, str)]
    for text in texts:
        found += _hits(text)
    print("STAND-IN-ATTACK ran stand-in=%s compiled=%d found=%s" % (
        cls.__module__ == "causal" and "stand_in" in str(_inspect.getfile(cls.forward)), len(_COMPILED),
        sorted(set(found)) or "nothing"))
    return bool(found)


_LOOKED = []
'''


@pytest.mark.quick
def test_student_code_finds_nothing_of_the_grader_s_code_behind_a_stand_in(engine, tmp_path):
    folder = submission(
        tmp_path,
        ("causal", "keys.shape[-1] ** 0.5", "keys.shape[-1]"),  # wrong: mha's checks get the grader's heads
        ("causal", "Single-head causal self-attention", "One head"),  # words of the grader's text only
        ("mha", "from causal import CausalAttention\n", "from causal import CausalAttention\n" + ATTACK),
        ("mha", "        return torch.cat([head(x) for head in self.heads], dim=-1)",
                "        if not _LOOKED:\n            _LOOKED.append(_look(self.heads[0]))\n"
                "        return torch.cat([head(x) for head in self.heads], dim=-1) + float(_LOOKED[0])"))
    result = grade(engine, folder, ["causal", "mha"])
    printed = [line for line in result.output.get("mha", "").splitlines() if "STAND-IN-ATTACK" in line]
    behind = [line for line in printed if "stand-in=True" in line]
    assert behind and all(line.endswith("found=nothing") for line in behind), printed
    # what it reads (frames, the garbage collector's objects) is listed as tampering: the two checks
    # measured in the child earn nothing (issue 34); every other point of mha stands
    lost = failed(result, "mha")
    assert sorted(lost) == ["mha_batches_the_heads", "mha_runs_on_the_inputs_device"], lost
    assert all("reaches into the machinery" in message for message in lost.values()), lost
    checks = engine[0].parts["mha"].checks
    assert scores(result)["mha"] == sum(c.points for c in checks.values()) - sum(checks[n].points for n in lost)
    assert scores(result)["causal"] < sum(c.points for c in engine[0].parts["causal"].checks.values())


# ---------------------------------------------------------------- issue 37.2: who may ask, and what it costs

def test_a_child_is_answered_only_about_the_classes_it_was_given():
    """A child given causal's stand-ins is answered about CausalAttention and causal's two functions (and
    nothing else): a question about mha's classes, or one no child was given, is refused as NotGiven and
    kept in the ledger. A child given mha's is answered about the wrapper's heads, not causal's functions."""
    given, ledger = stand_ins.allowed(["causal"]), stand_ins.Ledger()
    assert given == {("causal", "CausalAttention"), ("causal", "causal_mask"), ("causal", "masked_attention_weights")}
    assert ("causal", "CausalAttention") in stand_ins.allowed(["mha"])  # the wrapper's heads are the grader's
    assert ("causal", "causal_mask") not in stand_ins.allowed(["mha"])
    state = torch.get_rng_state()
    question = {"do": "construct", "where": ["causal", "CausalAttention"], "arguments": [3, 4, 6, 0.0, False]}
    answer, tensors = stand_ins.answer(question, [state], given, ledger)
    assert "tree" in answer and len(tensors) > 1 and ledger.refused == []
    for where in (["mha", "MultiHeadAttention"], ["self_attention_v1", "SelfAttention_v1"]):
        with pytest.raises(stand_ins.NotGiven):
            stand_ins.answer({**question, "where": where}, [state], given, ledger)
        with pytest.raises(stand_ins.NotGiven):  # a child given nothing: nothing is answered
            stand_ins.answer({**question, "where": where}, [state])
    assert len(ledger.refused) == 2 and "mha.MultiHeadAttention" in ledger.refused[0]


def _forward(module, name, arguments, x):
    """A forward question about the grader's class with its own layout's tensors, as a child asks it."""
    built = getattr(stand_ins.solutions()[module], name)(*arguments)
    names = [n for n, _ in built.named_parameters()] + [n for n, _ in built.named_buffers()]
    state = [t.detach() for _, t in built.named_parameters()] + list(built.buffers())
    return {"do": "forward", "where": [module, name], "arguments": list(arguments), "names": names,
            "training": [], "seed": 0, "inputs": 1}, state + [x]


def test_the_work_of_a_question_and_of_a_part_is_bounded_before_it_runs():
    """Shapes within the old bounds, but a forward of ~30 GFLOP: refused before any arithmetic (the meta
    device counts it), its CPU time a small part of what the forward would take. Small questions are
    answered and counted (FLOPs and the grader's seconds) in the part's ledger, until the part's total is
    spent; memory past the part's limit is refused too."""
    given, ledger = stand_ins.allowed(["mha"]), stand_ins.Ledger()
    question, tensors = _forward("mha", "MultiHeadAttention", (64, 64, 4096, 0.0, 1), torch.zeros(8, 4096, 64))
    clock = os.times()
    with pytest.raises(stand_ins.Refused, match="small forward"):
        stand_ins.answer(question, tensors, given, ledger)
    assert os.times().user - clock.user < 5  # the real forward would take minutes of CPU here
    assert ledger.flops == 0
    small, small_tensors = _forward("mha", "MultiHeadAttention", (3, 4, 6, 0.0, 2), torch.rand(2, 5, 3))
    _, out = stand_ins.answer(small, small_tensors, given, ledger)
    assert out[0].shape == (2, 5, 4) and ledger.flops > 0 and ledger.seconds > 0
    ledger.flops = stand_ins.MAX_PART_FLOPS  # the part has asked for all it may
    with pytest.raises(stand_ins.Refused, match="all the work"):
        stand_ins.answer(small, small_tensors, given, ledger)
    middle, middle_tensors = _forward("mha", "MultiHeadAttention", (64, 64, 512, 0.0, 1), torch.zeros(2, 512, 64))
    with pytest.raises(stand_ins.Refused, match="memory"):  # a part whose memory limit is 1 MiB
        stand_ins.answer(middle, middle_tensors, given, stand_ins.Ledger(), memory_mb=1)
    state = torch.get_rng_state()
    big = {"do": "construct", "where": ["mha", "MultiHeadAttention"], "arguments": [1024, 1024, 8, 0.0, 1]}
    with pytest.raises(stand_ins.Refused, match="memory"):
        stand_ins.answer(big, [state], given, stand_ins.Ledger(), memory_mb=1)


def test_the_grader_s_answering_time_counts_against_the_part():
    """student.Student._left: the seconds the grader spent answering this child's questions are taken
    from the call's limit and from the part's (the child's own clock counts only the child)."""
    from autograder.student import Student

    child = types.SimpleNamespace(spent=lambda: 1.0, timeout=3.0, memory_mb=512)
    student = Student(child)
    ledger = stand_ins.Ledger(seconds=5.0)
    student.charge_to(ledger)
    assert student._left((0.5, 5.0)) is None  # nothing answered yet: the child's own limit applies
    ledger.seconds = 6.5  # 1.5 s answering this child's questions
    assert student._left((0.5, 5.0)) == pytest.approx(3.0 - 1.0 - 1.5)
    student.call_limit = 1.0
    assert student._left((0.5, 5.0)) == 0.0  # the call's own second is spent: 0.5 s by the child, 1.5 s answering


def _stand_in_line(module, name):
    """One line that makes `name` the grader's stand-in class, taken from the child's own modules."""
    return (f'\n{name} = __import__("sys").modules["autograder.inside.stand_in"].stand_in_class('
            f'"{module}", "{name}", {stand_ins.classes(module)[name]!r})\n')


def test_the_stubs_naming_the_grader_s_classes_score_what_the_stubs_score(engine, tmp_path):
    """Issue 37.2's attack: the released stubs, each class replaced by one line naming the grader's
    stand-in class (which the child's modules hold), asking the grader to compute everything. Nothing
    is answered: they score what the stubs score (0), each class part says why, and the instructor
    reads it as tampering."""
    folder = tmp_path / "stubs"
    shutil.copytree(PACKAGE_DIR.parent / "assignments" / "ch03", folder, ignore=shutil.ignore_patterns("tests", "*.md"))
    for module in stand_ins.MODULES:
        path = folder / f"{module}.py"
        path.write_text(path.read_text() + "".join(_stand_in_line(module, n) for n in stand_ins.classes(module)))
    result = grade(engine, folder, None)
    assert result.score == 0, {p: s for p, s in scores(result).items() if s}
    for part in ("self_attention_v1", "self_attention_v2", "causal", "mha"):
        assert result.parts[part].problem == runner.TRESPASS, (part, result.parts[part].problem)
        assert any(t.startswith(f"{part}: asked the grader to compute ") for t in result.tampering), result.tampering
