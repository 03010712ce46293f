"""What the grader decides by which of the submission's files a piece of code comes from (where an
error was raised, whether a stub raised NotImplementedError, whether mha.py changed CausalAttention's
forward) it decides by the code objects the child compiled itself from those files (inside/demo_lines.py:
Loader, COMPILED), never by the file name a code object carries: a submission can write any
name with compile(src, "causal.py", "exec") or function.__code__.replace(co_filename=...).

Each test states the outcome it expects; each failed before the child kept its own record (the
redteam lane's leftover 2)."""
import types

import pytest
from part_edits import failed, grade, scores, submission
from rubric_points import CHECK, PART

from autograder import runner
from autograder.student import StudentError

FORGED_RAISE = '''import os

HERE = os.path.dirname(os.path.abspath(__file__))


def work():
    forged = compile("def boom():\\n    raise {error}('forged')\\n", os.path.join(HERE, "{name}"), "exec")
    space = {{}}
    exec(forged, space)
    space["boom"]()
'''


def errors_of(engine, tmp_path, source):
    """The StudentError task.work() raises in a fresh child, as the grader's check receives it."""
    folder = tmp_path / "task"
    folder.mkdir(parents=True)
    (folder / "task.py").write_text(source, encoding="utf-8")
    (folder / "causal.py").write_text("X = 1\n", encoding="utf-8")
    seen = []

    def test_work(student):
        try:
            student.module("task").work()
        except StudentError as e:
            seen.append(e)

    limits = types.SimpleNamespace(timeout=5, memory_mb=512)
    runner.run_part(engine.sandbox, str(folder), "task", [("work", test_work)], limits, runner.default_fixtures())
    assert len(seen) == 1
    return seen[0]


@pytest.mark.quick
def test_code_named_after_another_file_is_not_that_file_s(engine, tmp_path):
    """task.py raises from code it compiled under the name causal.py: the error is task.py's (the line of
    the call into the forged code), never causal.py's, which misconceptions.raised_in would have charged."""
    error = errors_of(engine, tmp_path, FORGED_RAISE.format(error="ValueError", name="causal.py"))
    assert error.where == "task.py, line 10, in work", error.where
    assert error.not_implemented is False


def test_a_stub_s_not_implemented_is_told_by_the_code_not_its_name(engine, tmp_path):
    """A NotImplementedError raised by code the submission made at run time and named task.py is not a
    stub's raise (not_implemented False: a stub is a function of a handed-in file); a real stub's is."""
    forged = errors_of(engine, tmp_path, FORGED_RAISE.format(error="NotImplementedError", name="task.py"))
    assert forged.not_implemented is False
    assert forged.where == "task.py, line 10, in work", forged.where
    stub = errors_of(engine, tmp_path / "stub", "def work():\n    raise NotImplementedError('work')\n")
    assert stub.not_implemented is True
    assert stub.where == "task.py, line 2, in work", stub.where


# mha.py replaces CausalAttention.forward with one that forgets the mask, compiled under causal.py's name
# (FORGED) or its own (PLAIN): causal.py is right on its own, so the heads' difference is mha.py's either way
TAMPER = '''

import causal as _causal
_source = """
def forward(self, x):
    q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
    w = torch.softmax(q @ k.transpose(1, 2) / k.shape[-1] ** 0.5, dim=-1)
    return self.dropout(w) @ v
"""
_space = {"torch": torch}
exec(compile(_source, @@NAME@@, "exec"), _space)
_causal.CausalAttention.forward = _space["forward"]
'''
CHANGED_HEADS = "the wrapper's heads compute differently from CausalAttention as causal.py defines it"


def test_mha_cannot_pass_its_change_of_causal_off_as_causal_s(engine, tmp_path):
    """Before: the forged file name kept wrapper_book_example and wrapper_unseen_seed (mha 19 against 16)."""
    results = {}
    for name, filename in (("forged", "_causal.__file__"), ("plain", "__file__")):
        folder = submission(tmp_path / name)
        with open(folder / "mha.py", "a", encoding="utf-8") as f:
            f.write(TAMPER.replace("@@NAME@@", filename))
        results[name] = grade(engine, folder, ["mha"])
    for name, result in results.items():
        wrong = failed(result, "mha")
        for check in ("wrapper_book_example", "wrapper_unseen_seed"):
            assert CHANGED_HEADS in wrong.get(check, ""), (name, check, wrong)
        assert scores(result)["mha"] <= PART["mha"] - CHECK["mha", "wrapper_book_example"] - \
            CHECK["mha", "wrapper_unseen_seed"], name
    assert scores(results["forged"]) == scores(results["plain"])
