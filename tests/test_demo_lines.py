"""Demo code at a module's top level that raises at import (inside/demo_lines.py, import_failure.demo_note).

The book's demo lines pasted below a class (`print(sa_v1(inputs))` with `inputs` from another listing, a
layer called on a batch of the wrong width, statements joined with ';') made the module fail to import: its
part lost every point although its class was right. Now such a statement is skipped, the part keeps what its
classes and functions earn, and a note (the grader's reading of its own copy of the file) says which line
raised, what it raised, and where demo code belongs. Modules and notebook cells get the same rule. An import of
a package the grading environment lacks (scipy) binds names that raise where they are used: the functions using
it fail their own checks, the rest of the module is graded. Definitions and imports of what is there that raise
still fail the import, as before.
"""
import importlib
import sys

import pytest
from notebook_cases import fill_notebooks, module_texts, write_modules
from rubric_points import PART

from autograder import import_failure
from autograder.inside import demo_lines
from autograder.student import Student


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """write(name, text): a module in a folder that demo_lines' finder serves; its SKIPPED emptied first."""
    monkeypatch.setattr(demo_lines, "SKIPPED", [])
    names: list[str] = []
    finder = demo_lines.Finder(str(tmp_path), names)

    def write(name, text):
        (tmp_path / f"{name}.py").write_text(text)
        names.append(name)
        finder.names = frozenset(names)
        return tmp_path / f"{name}.py"

    sys.meta_path.insert(0, finder)
    yield write
    sys.meta_path.remove(finder)
    for name in names:
        sys.modules.pop(name, None)


@pytest.mark.quick
def test_a_demo_statement_that_raises_is_skipped_and_the_rest_runs(workspace):
    workspace("demo_a", '"""Doc."""\nfrom __future__ import annotations\nimport math\n\n\n'
                        "def f(x: NotDefinedAnywhere) -> int:\n    return x + 1\n\n\n"
                        "print(f(inputs))\nx = f(1); y = f(z); w = x * 2\nassert w == 5\n"
                        "if __name__ == '__main__':\n    raise SystemExit(f(inputs))\n")
    module = importlib.import_module("demo_a")
    assert (module.f(1), module.x, module.w, module.__doc__) == (2, 2, 4, "Doc.")
    assert not hasattr(module, "y")
    assert module.f.__annotations__ == {"x": "NotDefinedAnywhere", "return": "int"}  # the __future__ import kept
    assert demo_lines.SKIPPED == [["demo_a", 10, "NameError"], ["demo_a", 11, "NameError"], ["demo_a", 12, "AssertionError"]]


@pytest.mark.quick
def test_a_definition_or_an_import_of_what_is_there_that_raises_still_fails_the_import(workspace):
    workspace("demo_x", "print(undefined)\nimport sys\nsys.exit(0)\n")  # an exit is no demo: it ends the import
    with pytest.raises(SystemExit):
        importlib.import_module("demo_x")
    workspace("demo_b", "print(undefined)\nclass A:\n    size = undefined_too\n")
    with pytest.raises(NameError, match="undefined_too"):
        importlib.import_module("demo_b")
    workspace("demo_c", "print(undefined)\nfrom math import no_such_name\n")
    with pytest.raises(ImportError, match="no_such_name"):
        importlib.import_module("demo_c")
    workspace("demo_d", "class A:\n    size = undefined\n")  # the first raise a definition's: no second run
    with pytest.raises(NameError, match="undefined"):
        importlib.import_module("demo_d")
    assert demo_lines.SKIPPED == [["demo_x", 1, "NameError"], ["demo_b", 1, "NameError"], ["demo_c", 1, "NameError"]]


@pytest.mark.quick
def test_an_exception_the_module_means_still_ends_the_import(workspace):
    """A `raise` of the module's own top level (tests/adversarial's cases raise what they found) and what ran out
    (a memory flood) are no demo's accident; an exception raised in a function the demo calls is."""
    workspace("demo_f", "print(undefined)\nfor i in range(2):\n    if i:\n        raise RuntimeError('LOOT: x')\n")
    with pytest.raises(RuntimeError, match="LOOT"):
        importlib.import_module("demo_f")
    workspace("demo_g", "def flood():\n    raise MemoryError\n\n\nflood()\n")
    with pytest.raises(MemoryError):
        importlib.import_module("demo_g")
    workspace("demo_h", "def check(x):\n    raise ValueError(x)\n\n\ncheck(3)\nkept = 1\n")
    assert importlib.import_module("demo_h").kept == 1
    assert demo_lines.SKIPPED == [["demo_f", 1, "NameError"], ["demo_h", 5, "ValueError"]]


@pytest.mark.quick
def test_a_package_that_is_not_installed_raises_where_it_is_used(workspace):
    workspace("demo_e", "import math\nfrom no_such_package.special import softmax as sp\nimport no_such_package.io as nio\n"
                        "import no_such_package\n\n\ndef uses(x):\n    return sp(x)\n\n\ndef plain(x):\n    return math.sqrt(x)\n")
    module = importlib.import_module("demo_e")
    assert module.plain(4.0) == 2.0
    with pytest.raises(ModuleNotFoundError, match="no_such_package"):
        module.uses(1)
    with pytest.raises(ModuleNotFoundError):
        module.nio.load("x")
    assert isinstance(module.no_such_package, demo_lines.NotInstalled)
    assert demo_lines.SKIPPED == [["demo_e", 2, "ModuleNotFoundError"], ["demo_e", 3, "ModuleNotFoundError"],
                                  ["demo_e", 4, "ModuleNotFoundError"]]


@pytest.mark.quick
def test_the_note_is_the_grader_s_reading_of_its_own_copy(tmp_path):
    """The child says (module, line, class) only; lines that start no demo statement in the staged file (a def, the
    inside of a statement, another module) are not said, whatever the child claims."""
    (tmp_path / "causal.py").write_text("import torch\nfrom scipy import special\n\n\ndef f(x):\n    return x\n\n\n"
                                        "ca = f(\n    inputs)\nprint(ca)\n")
    claims = {("causal", 5, "NameError"), ("causal", 10, "NameError"), ("mha", 9, "NameError"), ("causal", 1, "ValueError")}
    assert import_failure.demo_note(claims, "causal", tmp_path) == ""
    note = import_failure.demo_note(claims | {("causal", 9, "NameError"), ("causal", 11, "NameError")}, "causal", tmp_path)
    assert note == ("causal.py, line 9: `ca = f(` raised NameError when the module was imported (it reads inputs, which "
                    "causal.py never defines). It is demo code at the top level: the grader skipped it (and 1 more "
                    "top-level line that raised too: line 11) and graded your classes and functions without it (no "
                    "points lost for it). Run on its own, the code still stops there: put demo code under "
                    "`if __name__ == \"__main__\":`.")
    note = import_failure.demo_note({("causal", 2, "ModuleNotFoundError")}, "causal", tmp_path,
                                    cells={"causal": ("ch03.ipynb", 7)})
    assert note == ("the solution cell 'causal' of ch03.ipynb, line 2: `from scipy import special` imports scipy, which "
                    "is not installed where your code is graded (only Python's standard library, torch, NumPy and the "
                    "files you hand in are). The grader graded the rest of the solution cell 'causal' of ch03.ipynb: "
                    "code that uses it fails its own checks (write it with torch or NumPy).")


@pytest.mark.quick
def test_a_standard_library_module_that_cannot_be_loaded_is_the_environment_s_not_the_student_s(tmp_path):
    """In container mode the submission's uid imports what it can read: where the grader's Python lies in a folder
    other users cannot read (a pyenv under /root), a module of the standard library the fork server did not import
    (sqlite3) raised ModuleNotFoundError, and the note said it "is not installed" (only Python's standard library,
    ...), which was false. Now the note and a check's diagnosis say it is the machine's limit; a package such as
    scipy is still "not installed"."""
    from autograder.student import StudentError
    from autograder.suites import misconceptions

    (tmp_path / "causal.py").write_text("import torch\nimport sqlite3\nfrom scipy import special\n")
    note = import_failure.demo_note({("causal", 2, "ModuleNotFoundError")}, "causal", tmp_path)
    assert note.startswith("causal.py, line 2: `import sqlite3` imports sqlite3, a module of Python's standard library "
                           "that the grading environment could not load for your code (a limit of the machine")
    assert "not installed" not in note
    note = import_failure.demo_note({("causal", 3, "ModuleNotFoundError")}, "causal", tmp_path)
    assert "imports scipy, which is not installed where your code is graded" in note

    def said(message):
        return misconceptions.error_diagnosis(StudentError("ModuleNotFoundError", message))

    assert said("No module named 'sqlite3'") == misconceptions.STDLIB_UNLOADABLE
    assert said("No module named 'scipy'") == said("No module named 'sqlite3x'") == misconceptions.NOT_INSTALLED


class _Session:
    saw_hidden = False


@pytest.mark.quick
def test_what_the_child_says_it_skipped_is_read_only_before_a_hidden_input():
    student = Student(_Session(), files=frozenset({"causal.py"}))
    student._read_skipped([["causal", 9, "NameError"], ["causal", 10, "MyError"], ["other", 3, "NameError"],
                           ["causal", "9", "NameError"], ["causal", 0, "NameError"], "junk"])
    assert student.demo_lines == {("causal", 9, "NameError"), ("causal", 10, "")}
    student.session.saw_hidden = True
    student._read_skipped([["causal", 11, "NameError"]])
    assert student.demo_lines == {("causal", 9, "NameError"), ("causal", 10, "")}


DEMOS = {  # module -> what a learner added below its code
    "self_attention_v1": "\n\ntorch.manual_seed(123)\nsa_v1 = SelfAttention_v1(3, 2); print(sa_v1(inputs))\n",
    "causal": "\n\nca = CausalAttention(3, 2, 6, 0.0)\nprint(ca(torch.rand(2, 6, 5)).shape)\n",
}


def _appending(demo):
    return lambda text: text + demo


@pytest.fixture(scope="module")
def engine(engine):
    return engine.grade


def test_demo_lines_that_raise_cost_nothing_in_modules_and_notebooks_alike(engine, tmp_path):
    """Before: self_attention_v1 0/10 ('does not import: NameError'), causal 0/22 (every check 'your code raised
    RuntimeError' from the demo's forward), as modules and as notebooks. Now full marks in both, with a note."""
    texts = module_texts(edits={module: _appending(demo) for module, demo in DEMOS.items()})
    parts = ["self_attention_v1", "causal"]
    as_modules = engine(write_modules(texts, tmp_path / "modules"), parts=parts)
    as_notebooks = engine(fill_notebooks(texts, tmp_path / "notebooks"), parts=parts)
    for grade, said in ((as_modules, 'under `if __name__ == "__main__":`'), (as_notebooks, "in a cell of its own")):
        assert {p: grade.parts[p].score for p in parts} == {p: PART[p] for p in parts}
        notes = {n.split(":", 1)[0]: n for n in grade.notes if n.split(":", 1)[0] in parts}
        assert set(notes) == set(parts), grade.notes
        assert "`sa_v1 = SelfAttention_v1(3, 2); print(sa_v1(inputs))` raised NameError" in notes["self_attention_v1"]
        assert "(it reads inputs, which " in notes["self_attention_v1"]
        assert "`print(ca(torch.rand(2, 6, 5)).shape)` raised RuntimeError" in notes["causal"]
        assert all(said in note for note in notes.values())
    assert "causal: causal.py, line" in "".join(as_modules.notes)
    assert "causal: the solution cell 'causal' of " in "".join(as_notebooks.notes)
