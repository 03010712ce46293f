"""Plans (issue 38.7): several requests to the child in one exchange (Student.plan, inside/child.run_plan).

A plan answers as its steps' single requests would: the same values, the same StudentError (explained
and quoted alike) at the first step that raises, nothing run after it; a step that refers to an earlier
answer that is not a module stops the plan there. It costs one round trip.
"""
import shutil
from pathlib import Path

import pytest
import torch

from autograder.student import RemoteObject, Step, Student, StudentError

ROOT = Path(__file__).resolve().parents[1]

EXTRA = '''

def returns_a_tensor():
    return torch.ones(2)


def raises_inside(x):
    raise ValueError("sizes do not match: " + str(x.shape[0]))
'''


@pytest.fixture
def student(engine, tmp_path):
    """A Student on one part child of the reference solutions, with two helpers added to causal.py."""
    folder = tmp_path / "student"
    shutil.copytree(ROOT / "solutions" / "ch03", folder, ignore=shutil.ignore_patterns("__pycache__"))
    with open(folder / "causal.py", "a") as f:
        f.write(EXTRA)
    part = engine.sandbox.open(str(folder), 60, 512)
    try:
        yield Student(part)
    finally:
        part.close()


def state(d_in=4, d_out=3):
    g = torch.Generator().manual_seed(5)
    return {f"{n}.weight": torch.rand(d_out, d_in, generator=g) for n in ("W_query", "W_key", "W_value")}


def steps(student, x, load=None):
    causal = student.module("causal")
    return [causal.CausalAttention.as_step(4, 3, 6, 0.5, _seed=7),
            Step("call", Step.on(0, "load_state_dict"), (load or state(),), {"strict": False}),
            Step("call", Step.on(0, "eval")),
            Step("call", Step.on(0), (x,), seed=3),
            Step("getattr", Step.on(0, "mask"))]


def single(student, x):
    """What steps() gives, one request per step (the path the suites took before plans)."""
    attn = student.module("causal").CausalAttention(4, 3, 6, 0.5, _seed=7)
    loaded = attn.load_state_dict(state(), strict=False)
    attn.eval()
    return [attn, loaded, attn, attn(x, _seed=3), attn.get("mask")]


def same(a, b):
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, RemoteObject):
        return isinstance(b, RemoteObject) and a.type_name == b.type_name
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(u, v) for u, v in zip(a, b, strict=True))
    return a == b


@pytest.mark.quick
def test_a_plan_answers_as_its_single_requests_in_one_round_trip(engine, student):
    x = torch.rand(2, 5, 4, generator=torch.Generator().manual_seed(1))
    engine.sandbox.round_trips.clear()
    planned = student.plan(steps(student, x))
    assert dict(engine.sandbox.round_trips) == {"plan": 1}
    assert len(planned) == 5 and all(not isinstance(a, StudentError) for a in planned), planned
    assert all(same(a, b) for a, b in zip(planned, single(student, x), strict=True))
    assert planned[2].same_object(planned[0])  # eval() returned the module itself: the same handle
    # the same steps one by one (the path a call with a time limit of its own takes) answer alike
    student.call_limit = 30.0
    assert all(same(a, b) for a, b in zip(student.plan(steps(student, x)), planned, strict=True))


def test_a_plan_stops_at_the_first_exception_with_the_single_request_s_error(student):
    x = torch.rand(2, 5, 4)
    wrong = {"W_query.weight": torch.zeros(7, 7)}  # another shape: load_state_dict raises
    planned = student.plan(steps(student, x, load=wrong))
    assert len(planned) == 2 and isinstance(planned[0], RemoteObject) and isinstance(planned[1], StudentError)
    with pytest.raises(StudentError) as single:
        planned[0].load_state_dict(wrong, strict=False)
    assert (planned[1].explain(), planned[1].student_text()) == (single.value.explain(), single.value.student_text())
    assert planned[1].kind == "RuntimeError" and "size mismatch" in planned[1].message
    # a student's exception with its own text, after a step that succeeded: the same words either way
    causal = student.module("causal")
    planned = student.plan([causal.returns_a_tensor.as_step(), causal.raises_inside.as_step(torch.zeros(3)),
                            causal.returns_a_tensor.as_step()])
    assert torch.equal(planned[0], torch.ones(2)) and len(planned) == 2
    with pytest.raises(StudentError) as single:
        causal.raises_inside(torch.zeros(3))
    assert planned[1].student_text() == single.value.student_text()
    assert planned[1].student_text().startswith("ValueError: sizes do not match: 3 (causal.py, line ")
    assert planned[1].explain() == single.value.explain() == "your code raised ValueError (in causal.py)"


def test_nothing_after_the_failing_step_runs(student):
    attn = student.module("causal").CausalAttention(4, 3, 6, 0.0)
    before = attn.get("W_query.weight")
    planned = student.plan([Step("call", {"handle": attn._id, "attr": "load_state_dict"}, ({"nothing": 1},)),
                            Step("assign", {"handle": attn._id, "attr": "W_query.weight"},
                                 (torch.nn.Parameter(torch.zeros(3, 4)),))])
    assert len(planned) == 1 and isinstance(planned[0], StudentError)
    assert torch.equal(attn.get("W_query.weight"), before)


def test_a_step_on_an_answer_that_is_not_a_module_stops_the_plan_before_it(student):
    causal = student.module("causal")
    planned = student.plan([causal.returns_a_tensor.as_step(), Step("call", Step.on(0, "eval"))])
    assert len(planned) == 1 and torch.equal(planned[0], torch.ones(2))
    student.call_limit = 30.0  # one by one: the same stop
    planned = student.plan([causal.returns_a_tensor.as_step(), Step("call", Step.on(0, "eval"))])
    assert len(planned) == 1 and torch.equal(planned[0], torch.ones(2))
