"""Issue 11 item 5: outputs that are all zeros earn nothing but the checks of construction.

A degenerate submission is a copy of the solutions in which a module's functions and forward
methods return zeros of their real output's shape and dtype (numbers become 0, a transfer writes
zeros into sa_v1). Graded through the real engine, each part so made earns no point: the checks that
judge how modules are built (their parameters, buffers) pass but earn their points only with the
part's math (grading.yml `requires`); only the exercises, judged by the constructor arguments they
pass, keep theirs. It never passes a check of
a property (future tokens never matter, inputs unchanged, the NumPy causal head, the wrapper
against its own heads, what the transfer returns and keeps): a property earns its points only
when the part's output is right on the same inputs.
"""
import shutil

import pytest

from autograder import PARTS, PROJECT_ROOT, grading
from autograder.rubric import Rubric
from autograder.suites.helpers import degenerate

SOLUTIONS = PROJECT_ROOT / "solutions" / "ch03"

ZEROED = '''

def _zeros(out):
    import numpy as _np, torch as _torch
    if isinstance(out, _torch.Tensor):
        return _torch.zeros_like(out)
    if isinstance(out, _np.ndarray):
        return _np.zeros_like(out)
    if isinstance(out, (int, float)) and not isinstance(out, bool):
        return type(out)(0)
    if isinstance(out, (tuple, list)):
        return type(out)(_zeros(o) for o in out)
    if isinstance(out, _torch.nn.Module) and __name__ == "weight_transfer":
        with _torch.no_grad():
            for p in out.parameters():
                p.zero_()
    return out


def _zeroed(fn):
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return _zeros(fn(*args, **kwargs))
    return wrapper


for _name, _value in list(globals().items()):
    if getattr(_value, "__module__", None) != __name__ or _name.startswith("_"):
        continue
    if isinstance(_value, type) and "forward" in vars(_value):
        _value.forward = _zeroed(_value.forward)
    elif callable(_value) and not isinstance(_value, type):
        globals()[_name] = _zeroed(_value)
'''
# the checks that judge construction only: they pass whatever forward returns, but earn their points
# only with the part's math (grading.yml `requires`), so a zeroed forward gets none of them
GATED_CONSTRUCTION = {
    "self_attention_v1": {"v1_weight_matrices"},
    "self_attention_v2": {"v2_linear_layers"},
    "causal": {"causal_mask_is_a_registered_buffer"},
    "mha": {"wrapper_builds_its_heads", "mha_rejects_indivisible_d_out", "mha_structure"},
}
# the exercises are judged by the arguments they give the chapter's classes (whose output is graded in mha)
CONSTRUCTION = {
    "exercises": {"ex32_book_example", "ex32_two_heads_of_width_one", "ex33_parameter_count", "ex33_heads_and_context"},
}
PROPERTIES = {  # the property checks named by the issue, and the others that compare a submission with itself
    "causal": ("causal_future_tokens_never_matter", "causal_inputs_left_unchanged", "causal_dropout_in_training_mode",
               "causal_runs_on_the_inputs_device"),
    "numpy_attention": ("numpy_causal_head_ignores_the_future", "numpy_softmax_stable_and_untouched"),
    "mha": ("wrapper_book_example", "wrapper_unseen_seed", "mha_matches_stacked_single_heads", "mha_batches_the_heads",
            "mha_causal_and_dropout"),
    "weight_transfer": ("transfer_returns_v1_and_keeps_v2",),
}


def zeroed(folder, modules):
    shutil.copytree(SOLUTIONS, folder)
    for module in modules:
        path = folder / f"{module}.py"
        path.write_text(path.read_text() + ZEROED)
    return folder


def passed(grade):
    return {c.name for c in grade.checks if c.passed}


@pytest.mark.quick
def test_the_degenerate_helper():
    import torch

    assert degenerate(torch.zeros(2, 3)) and degenerate(torch.tensor([1.0, float("nan")])) and degenerate(None)
    assert not degenerate(torch.tensor([0.0, 1e-3]))


@pytest.mark.parametrize("part", [p for p in PARTS if p != "exercises"])
def test_a_zeroed_module_earns_only_construction_checks(engine, tmp_path, part):
    rubric, suites, sandbox = engine
    grade = grading.grade_submission(zeroed(tmp_path / "zeros", [part]), Rubric(rubric.path, {part: rubric.parts[part]}),
                                     suites, sandbox)
    allowed = CONSTRUCTION.get(part, set())
    assert passed(grade) == allowed, part
    for name in GATED_CONSTRUCTION.get(part, ()):  # it passed as such, and its gate took the points
        check = next(c for c in grade.checks if c.name == name)
        assert check.message == grading.GATED and check.score == 0, name
    assert grade.parts[part].score == sum(rubric.parts[part].checks[name].points for name in allowed)
    for name in PROPERTIES.get(part, ()):
        assert name not in passed(grade), name


def test_a_submission_of_zeros_earns_only_construction_checks(engine, tmp_path):
    """Every module zeroed: the wrapper's heads are zero too, so it is judged through stand-in heads
    (and fails), not against its own heads' zeros."""
    rubric, suites, sandbox = engine
    grade = grading.grade_submission(zeroed(tmp_path / "zeros", PARTS), rubric, suites, sandbox)
    assert {(c.part, c.name) for c in grade.checks if c.passed} == {
        (part, name) for part, names in CONSTRUCTION.items() for name in names}
    assert grade.score == sum(rubric.parts[part].checks[name].points for part, names in CONSTRUCTION.items()
                              for name in names) == 8


REPLAY = '''

_softmax, _count = softmax, block_param_count
_KNOWN_SCORES = [[1000.0, 1000.0], [[1000.0, 1001.0, 1002.0], [-1000.0, -1001.0, -1003.0], [0.0, 1.0, 2.0]]]
_KNOWN_SIZES = [(12288, 49152), (768, 3072), (64, 256), (2, 3), (1000, 10)]


def softmax(z, axis=-1):  # right only on the fixed inputs a grader might use, zeros elsewhere
    known = any(np.shape(z) == np.shape(k) and np.allclose(np.abs(z), np.abs(np.asarray(k).T if axis == 0 else k))
                for k in _KNOWN_SCORES)
    return _softmax(z, axis) if known else np.zeros_like(z)


def block_param_count(d_model, d_ff):
    return _count(d_model, d_ff) if (d_model, d_ff) in _KNOWN_SIZES else 0
'''


def test_replaying_fixed_answers_earns_nothing_in_numpy(engine, tmp_path):
    """Round 4 (open from earlier rounds): code right only on the fixed inputs of the notes and of the
    checks (softmax of [1000, 1000] and of one table of large scores, five model sizes) and wrong on
    any other input earns none of the NumPy part's points: every check that could be passed by
    replaying also draws inputs of its own, and the notes' GPT-3 count requires other sizes."""
    rubric, suites, sandbox = engine
    folder = tmp_path / "replay"
    shutil.copytree(SOLUTIONS, folder)
    path = folder / "numpy_attention.py"
    path.write_text(path.read_text() + REPLAY)
    grade = grading.grade_submission(folder, Rubric(rubric.path, {"numpy_attention": rubric.parts["numpy_attention"]}),
                                     suites, sandbox)
    assert grade.parts["numpy_attention"].score == 0, [(c.name, c.passed, c.message) for c in grade.checks]
    gpt3 = next(c for c in grade.checks if c.name == "numpy_block_params_gpt3")
    assert gpt3.message == grading.GATED and gpt3.score == 0  # replayed, and its gate took the point


ZERO_WRAPPER = '''

class _Zeros(torch.nn.Module):
    def forward(self, x):
        return torch.zeros(*x.shape[:-1], 2)


def two_dim_wrapper(d_in, context_length, dropout=0.0):  # no call to the wrapper: judged by what it returns
    return _Zeros()
'''


def test_zeros_from_the_exercise_and_its_own_wrapper_earn_nothing(engine, tmp_path):
    """Round 4, class 4: two_dim_wrapper returns a module of zeros and mha's wrapper gives zeros too,
    so the re-run with the student's own code compares zeros with zeros; Exercise 3.2 earns none of
    its 4 points (the grader's wrapper is never zeros, and no output without attention is right),
    Exercise 3.3 keeps its 4."""
    rubric, suites, sandbox = engine
    folder = zeroed(tmp_path / "zeros", ["mha"])
    path = folder / "exercises.py"
    path.write_text("import torch\n" + path.read_text() + ZERO_WRAPPER)
    grade = grading.grade_submission(folder, Rubric(rubric.path, {"exercises": rubric.parts["exercises"]}), suites,
                                     sandbox)
    failed = {c.name: c.message for c in grade.checks if not c.passed}
    assert set(failed) == {"ex32_book_example", "ex32_two_heads_of_width_one"}, failed
    assert "holds no attention" in failed["ex32_two_heads_of_width_one"]
    assert grade.parts["exercises"].score == 4


def test_a_submission_of_constants_earns_only_construction_checks(engine, tmp_path):
    """Round 4, class 4: every function and forward returns one value everywhere (0.25): the
    wrapper's checks against its own constant heads (in the re-run with the student's own code)
    and every property check refuse it, as they refuse zeros; only the exercises, judged by the
    arguments they give the chapter's classes, keep their 8 points."""
    rubric, suites, sandbox = engine
    folder = tmp_path / "constants"
    shutil.copytree(SOLUTIONS, folder)
    constant = ZEROED.replace("_torch.zeros_like(out)", "_torch.full_like(out, 0.25)").replace(
        "_np.zeros_like(out)", "_np.full_like(out, 0.25)")
    for module in PARTS:
        path = folder / f"{module}.py"
        path.write_text(path.read_text() + constant)
    grade = grading.grade_submission(folder, rubric, suites, sandbox, figures=False)
    assert {(c.part, c.name) for c in grade.checks if c.passed} == {
        (part, name) for part, names in CONSTRUCTION.items() for name in names}
    assert grade.score == 8
