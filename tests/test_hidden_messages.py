"""Issue 37.6: after a hidden input a student reads the grader's fixed vocabulary (suites/vocabulary.py),
chosen by the grader: a cause its comparison matched, a kind of failure its helpers saw, the longest
string written in the suite line that raised, or a fixed phrase for how the child ended. Nothing the
child chose (a stub's name, a dtype, a type name, a number of its output) reaches it, so nothing is
masked and the grader's own advice keeps its numbers. The instructor keeps the formatted message in
the detail. Before any hidden input the message is the check's own."""
import json
import shutil

import pytest
import torch

from autograder import chapter, grading, reports, runner
from autograder.student import StudentError
from autograder.suites import expect, helpers, misconceptions, test_causal, vocabulary

pytestmark = pytest.mark.quick  # the whole file is in the quick subset


class FakeStudent:
    def __init__(self, saw_hidden):
        self.saw_hidden = saw_hidden
        self.session = type("Child", (), {"idle_out": False, "cpu_out": False})()

    def plan(self, steps):
        """Student.plan's answers, each step a call of the fake module's function."""
        return [getattr(self.module(step.target["module"]), step.target["attr"])(*step.args) for step in steps]


class Masks:
    """student.module("causal"): a causal_mask that returns the dtype the test picked."""

    def __init__(self, dtype):
        self.causal_mask = lambda n: torch.zeros(n, n, dtype=dtype)


def mask_check(dtype, hidden):
    student = FakeStudent(hidden)
    student.module = lambda name: Masks(dtype)
    return runner.run_check("causal", "causal_mask_marks_the_future", test_causal.test_causal_mask_marks_the_future,
                            student, {})


def test_a_formatted_message_becomes_the_suite_s_own_words_after_a_hidden_input():
    """causal_mask's check formats the dtype the child returned; after a hidden input the student reads
    the raising line as written instead ("..." for each value it formats in), the formatted message is
    the instructor's."""
    hidden = mask_check(torch.int16, True)
    assert hidden.message == "causal_mask(...) should be a bool tensor, got ..."
    assert "torch.int16" in hidden.detail and "#" not in hidden.message
    assert "got torch.int16" in mask_check(torch.int16, False).message  # before a hidden input: as formatted


def test_which_dtype_the_child_returns_changes_nothing_a_student_reads():
    assert len({mask_check(dtype, True).message for dtype in (torch.int16, torch.int32, torch.uint8, torch.float64)}) == 1
    assert len({mask_check(dtype, False).message for dtype in (torch.int16, torch.int32)}) == 2


def test_a_check_outside_the_suites_says_the_generic_words():
    """Only strings written in the grader's suites are the vocabulary: a check raised elsewhere (here,
    this test file) says GENERIC."""
    def elsewhere(student):
        expect.fail(f"a message written outside the suites, with {student.saw_hidden}")
    assert runner.run_check("causal", "x", elsewhere, FakeStudent(True), {}).message == vocabulary.GENERIC


def stub_raises(student):
    raise StudentError("NotImplementedError", f"{student.picked}: a hint", "causal.py, line 3", True,
                       after_hidden=student.saw_hidden)


def returns_dtype(student):
    expect.as_tensor(student.picked, "causal_mask(5)")


def nan_with_hint(student):
    misconceptions.judge(torch.full((2, 2), float("nan")), torch.zeros(2, 2), "weights",
                         hint="the scores are not scaled: divide them by sqrt(d_k) (d_k = the keys' dimension) "
                              "before the softmax")


def transposed_heads(student):
    state = helpers.drawn_linears(1, helpers.qkv_layers(4, 4, False) + [("out_proj", 4, 4, True)])
    x = torch.rand(1, 3, 4, generator=torch.Generator().manual_seed(1))
    mistakes = misconceptions.multi_head_mistakes(x, state, 2)
    wrong = next(out for out, why in mistakes if ".transpose(1, 2) to" in why)
    misconceptions.judge(wrong, misconceptions.multi_head(x, state, 2), "mha", mistakes)


def dropout_nan(student):
    helpers.dropout_verdict(torch.full((1, 3, 3), float("nan")), torch.zeros(1, 3, 3), 0.5, "CausalAttention")


@pytest.mark.parametrize("check, pairs, want", [
    (stub_raises, ("causal.causal_mask", "mha.MultiHeadAttention.forward"), vocabulary.NOT_IMPLEMENTED),
    (returns_dtype, (torch.zeros(2, dtype=torch.int16).numpy().tolist(), "a string"), vocabulary.KINDS["type"]),
])
def test_names_the_child_chose_never_reach_the_message(check, pairs, want):
    """Which stub name it raises, which type it returns: the same words for the student."""
    said = set()
    for picked in pairs:
        student = FakeStudent(True)
        student.picked = picked
        said.add(runner.run_check("causal", "x", check, student, {}).message)
    assert said == {want}


def test_the_grader_s_advice_keeps_its_numbers():
    """"-inf times 0 is NaN", ".transpose(1, 2)", "dropout=0.5"-like advice is read as written: a kind's
    words with a hint written in the suites, a cause the comparison matched, a raising line's words."""
    nan = runner.run_check("causal", "x", nan_with_hint, FakeStudent(True), {}).message
    assert "-inf times 0" in nan and "sqrt(d_k)" in nan and "#" not in nan
    heads = runner.run_check("mha", "x", transposed_heads, FakeStudent(True), {})
    assert ".transpose(1, 2) to (b, num_heads, num_tokens, head_dim)" in heads.message and heads.cause == heads.message
    dropout = runner.run_check("causal", "x", dropout_nan, FakeStudent(True), {}).message
    assert dropout.startswith("... in training mode contains NaN") and "(-inf times 0 is NaN)" in dropout
    assert "-inf times 0" in vocabulary.KINDS["nan"]
    idle = FakeStudent(True)
    idle.session.idle_out = True
    assert "more than 2 s after an input only the grader knows" in vocabulary.death(idle.session)


# ---------------------------------------------------------------- the real engine, two seeds

CHOOSER = '''"""Round 5, class 6: after a hidden input the child picks a stub name and a dtype from what it sees."""
import torch

NAMES = ["causal.causal_mask", "mha.MultiHeadAttention.forward", "simple_attention.softmax_naive",
         "self_attention_v1.SelfAttention_v1.forward", "exercises.gpt2_small_attention"]
DTYPES = [torch.int16, torch.int32, torch.int8, torch.uint8, torch.int64]


def _pick(x, options):
    return options[int(torch.as_tensor(x).double().abs().sum().item() * 1e4) % len(options)]


def softmax_naive(x):
    return torch.zeros(x.shape, dtype=_pick(x, DTYPES))


def attention_scores(inputs):
    raise NotImplementedError(_pick(inputs, NAMES) + ": a hint")


attention_weights = softmax_naive


def context_vector(inputs, query_index):
    raise NotImplementedError(_pick(inputs, NAMES) + ": a hint")


def context_vectors(inputs):
    raise NotImplementedError(_pick(inputs, NAMES) + ": a hint")
'''


def test_two_seeds_give_byte_identical_student_reports(engine, tmp_path):
    """The same child (it picks a stub name and a dtype from each input) graded with two secrets: the
    instructor's detail shows different picks, every student channel is byte for byte the same."""
    rubric, suites, sandbox = engine
    folder = tmp_path / "sub"
    shutil.copytree(chapter.current().solutions, folder, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "simple_attention.py").write_text(CHOOSER)
    said, details = [], []
    for secret in (11, 12):
        grade = grading.grade_submission(folder, rubric, suites, sandbox, parts=["simple_attention"],
                                         fixtures=runner.default_fixtures(secret), figures=False)
        grade.seed = None
        said.append([reports.markdown(grade), reports.dumps(reports.student_results(grade)),
                     json.dumps(reports.gradescope_results(grade), sort_keys=True), reports.feedback("s", reports.results_json(grade))])
        details.append(" ".join(c.detail for c in grade.checks if c.visibility != "visible"))
        hidden = [c for c in grade.checks if c.visibility != "visible" and not c.passed]
        assert hidden and all("#" not in c.message for c in hidden)
        assert not any(name in c.message for c in hidden for name in ("int16", "int32", "int8", "uint8", "int64",
                                                                        "causal.causal_mask", "mha."))
    assert details[0] != details[1]  # the child did pick differently
    for first, second in zip(*said, strict=False):
        assert first == second


def test_a_message_a_helper_built_is_said_as_the_suites_wrote_it():
    """A message a helper returned and a check raised (its own line has no words) is recognised as the
    suites' template it fits, with "..." for the values; text that fits no template says nothing."""
    said = vocabulary.recognised("MultiHeadAttention: its forward issues more matrix multiplications with 4 heads "
                                 "than with 2 (one matmul per head): " + test_causal.efficiency.LOOP_HINT)
    assert said.startswith("its forward issues more matrix multiplications with ... heads than with ...")
    assert said.endswith("one for their context vectors, as in 3.6.2")
    assert vocabulary.recognised("int16 chosen by the child, 73519") == ""


def test_an_error_in_a_notebook_s_cell_names_the_notebook_and_the_cell():
    """A module staged from a notebook's solution cell (Staged.cells, the grader's record) is named by
    its notebook and cell, with the cell's own line; a module handed in as a .py file, a place that is
    not one of the chapter's files and the rule after a hidden input stay as they were. The notebook's
    name comes from the record only: a place the child wrote cannot choose it."""
    files = frozenset({"causal.py", "mha.py"})
    cells = {"causal": ("ch03.ipynb", 12)}
    error = StudentError("RuntimeError", "boom", "causal.py, line 67, in forward", files=files, cells=cells)
    assert error.explain() == "your code raised RuntimeError (in the solution cell 'causal' of ch03.ipynb)"
    assert error.student_text() == \
        "RuntimeError: boom (ch03.ipynb, the solution cell 'causal' (cell 12 from the top), line 67, in forward)"
    as_file = StudentError("RuntimeError", "boom", "causal.py, line 67, in forward", files=files)
    assert as_file.explain() == "your code raised RuntimeError (in causal.py)"
    assert as_file.student_text() == "RuntimeError: boom (causal.py, line 67, in forward)"
    other = StudentError("ValueError", "no", "mha.py, line 2, in f", files=files, cells=cells)  # mha.py was a file
    assert (other.explain(), other.student_text()) == ("your code raised ValueError (in mha.py)",
                                                       "ValueError: no (mha.py, line 2, in f)")
    hostile = StudentError("RuntimeError", "boom", "causal.py, line 1 </b>\nx", files=files, cells=cells)
    assert hostile.student_text() == \
        "RuntimeError: boom (ch03.ipynb, the solution cell 'causal' (cell 12 from the top), line 1 </b> | x)"
    for where in ("evil.ipynb, the solution cell 'causal' (cell 1 from the top), line 1",  # a cell it made up
                  "causal.pyx, line 1", " causal.py, line 1", "causal, line 1"):
        made_up = StudentError("ValueError", "no", where, files=files, cells=cells)
        assert made_up.explain() == "your code raised ValueError", where
        assert made_up.student_text() == f"ValueError: no ({where})", where
    syntax = StudentError("SyntaxError", "invalid syntax (causal.py, line 3)", files=files, cells=cells)
    assert syntax.student_text() == \
        "SyntaxError: invalid syntax (ch03.ipynb, the solution cell 'causal' (cell 12 from the top), line 3)"
    for said in ("invalid syntax (mha.py, line 3)", "invalid syntax (evil.py, line 3)", "no (causal.py, line 3) x"):
        assert StudentError("SyntaxError", said, files=files, cells=cells).student_text() == f"SyntaxError: {said}"
    assert StudentError("ValueError", "(causal.py, line 3)", files=files, cells=cells).student_text() == \
        "ValueError: (causal.py, line 3)"  # only a syntax error's message ends in its place
    hidden = StudentError("RuntimeError", "boom", "causal.py, line 67, in forward", files=files, cells=cells,
                          after_hidden=True)
    assert hidden.explain() == "your code raised an exception"
    stub = StudentError("NotImplementedError", "causal.CausalAttention.forward: a hint", "causal.py, line 9", True,
                        files=files, cells=cells)
    assert stub.explain() == "not implemented yet: causal.CausalAttention.forward"
