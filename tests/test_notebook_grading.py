"""Grading notebooks with the engine (`python -m autograder grade NOTEBOOKS`), without nbgrader.

The same code handed in as modules and as notebooks gets the same score, part by part and check
by check: the solutions, the stubs, and code with bugs injected into both forms. Notebooks are
found in nested folders and in zips; a module in two notebooks and malformed cells are errors
naming the file (as handed in) and the cell. An IPython input transformer in a solution cell
changes nothing: the code runs in the sandbox as a plain module, where there is no IPython.
"""
import json
import re
import shutil
import zipfile

import pytest
from in_process import run_command, run_plain
from notebook_cases import MODULES, ROOT, SOURCE, STUBS, cells_of, fill_notebooks, module_texts, write_modules
from rubric_points import TOTAL, g

from autograder import reports, submitted_notebooks
from autograder.reports.markdown import md_code
from autograder.submission import SubmissionError, stage

NOTEBOOK_COUNT = len(list(SOURCE.glob("*.ipynb")))  # the speed lab too: read, and no solution cell in it


@pytest.fixture(scope="module")
def engine(engine):
    """The session's engine (tests/conftest.py), called: engine(path, parts=...) -> its Grade."""
    return engine.grade


def by_part(grade):
    return {part: p.score for part, p in grade.parts.items()}


def by_check(grade, said=str):
    return {(c.part, c.name): (c.passed, c.score, said(c.message)) for c in grade.checks}


def as_files(said):
    """A notebook's grade as the same modules' would say it: each place in a notebook's cell named by its file."""
    said = re.sub(r"[^ (]+\.ipynb, the solution cell '(\w+)' \(cell \d+ from the top\)", r"\1.py", said)
    return re.sub(r"the solution cell '(\w+)' of [^ )]+\.ipynb", r"\1.py", said)


def assert_same_grade(as_modules, as_notebooks):
    """The same scores and messages, but that a notebook's say where in its cells (as_files)."""
    assert by_part(as_notebooks) == by_part(as_modules)
    assert by_check(as_notebooks, as_files) == by_check(as_modules)
    assert [as_files(p.problem) for p in as_notebooks.parts.values()] == [p.problem for p in as_modules.parts.values()]


@pytest.mark.parametrize("case, base, bugs", [
    ("solutions", None, ()),
    ("stubs", STUBS, ()),
    ("two bugs", None, ("causal_diagonal", "numpy_softmax_unstable")),
])
def test_modules_and_notebooks_get_the_same_score_part_by_part(engine, tmp_path, case, base, bugs):
    texts = module_texts(base, bugs) if base else module_texts(bugs=bugs)
    as_modules = engine(write_modules(texts, tmp_path / "modules"))
    as_notebooks = engine(fill_notebooks(texts, tmp_path / "notebooks"))
    assert_same_grade(as_modules, as_notebooks)
    total, top = as_modules.score, as_modules.max_score
    if case == "solutions":
        assert total == top == TOTAL
    elif case == "stubs":
        assert total == 0
    else:
        scores = by_part(as_modules)
        assert 0 < scores["causal"] < as_modules.parts["causal"].max_score
        assert scores["numpy_attention"] < as_modules.parts["numpy_attention"].max_score
        assert scores["simple_attention"] == as_modules.parts["simple_attention"].max_score
    assert any(f"graded the solution cells of {NOTEBOOK_COUNT} notebook(s)" in note for note in as_notebooks.notes)


def test_an_error_in_a_notebook_names_the_notebook_and_its_cell_with_the_cell_s_line(engine, tmp_path):
    """The module graded is the solution cell line for line, so the line of the error is the cell's
    (as Jupyter numbers it); a student who handed in notebooks reads the notebook and the cell, never
    causal.py, a file they never wrote. The same code handed in as causal.py reads as it always did."""
    bug = ("queries @ keys.transpose(1, 2)", "queries @ keys")  # the keys not transposed: raises on the book's example
    texts = module_texts(edits={"causal": lambda text: text.replace(*bug)})
    line = next(n for n, code in enumerate(texts["causal"].splitlines(), 1) if "= queries @ keys " in code)
    notebook = "02_causal_and_multi_head.ipynb"
    cell = next(n for n, c in enumerate(cells_of(SOURCE / notebook), 1)
                if c["metadata"].get("nbgrader", {}).get("grade_id") == "causal")
    as_modules = engine(write_modules(texts, tmp_path / "modules"), parts=["causal"])
    as_notebooks = engine(fill_notebooks(texts, tmp_path / "notebooks"), parts=["causal"])
    assert_same_grade(as_modules, as_notebooks)
    in_file = f"(causal.py, line {line}, in forward)"
    in_cell = f"({notebook}, the solution cell 'causal' (cell {cell} from the top), line {line}, in forward)"
    module_said = [c.student_text for c in as_modules.checks if c.student_text]
    notebook_said = [c.student_text for c in as_notebooks.checks if c.student_text]
    assert any(said.startswith("RuntimeError: ") and said.endswith(in_file) for said in module_said), module_said
    assert [said.replace(in_cell, in_file) for said in notebook_said] == module_said
    assert not any("causal.py" in said for said in notebook_said), notebook_said
    book = {grade.submission: next(c.message for c in grade.checks if c.name == "causal_attention_book_example")
            for grade in (as_modules, as_notebooks)}
    assert book == {"modules": "your code raised RuntimeError (in causal.py)",
                    "notebooks": f"your code raised RuntimeError (in the solution cell 'causal' of {notebook})"}
    # every report shows the student's error from student_text: the markdown feedback says the cell too
    for grade, said in ((as_notebooks, notebook_said), (as_modules, module_said)):
        feedback = reports.markdown(grade)
        assert any(f"your error: {md_code(one)}" in feedback for one in said), feedback
    # nbgrader's preprocessor writes the cells as .py files and says where they came from (Engine.grade's cells)
    as_nbgrader = engine(write_modules(texts, tmp_path / "nbgrader"), parts=["causal"],
                         cells={"causal": (notebook, cell), "not_a_module": ("x.ipynb", 1)})
    assert [c.student_text for c in as_nbgrader.checks if c.student_text] == notebook_said


def test_a_syntax_error_in_a_notebook_names_the_cell_and_the_cell_s_line(engine, tmp_path):
    bug = ("queries @ keys.transpose(1, 2)", "queries @ keys.transpose(1, 2))")  # unmatched ')'
    texts = module_texts(edits={"causal": lambda text: text.replace(*bug)})
    line = next(n for n, code in enumerate(texts["causal"].splitlines(), 1) if "transpose(1, 2))" in code)
    as_modules = engine(write_modules(texts, tmp_path / "modules"), parts=["causal"])
    as_notebooks = engine(fill_notebooks(texts, tmp_path / "notebooks"), parts=["causal"])
    assert_same_grade(as_modules, as_notebooks)
    said = f"does not import: SyntaxError: unmatched ')' (line {line}: "
    assert as_modules.parts["causal"].problem.startswith(f"causal.py {said}")
    notebook = "02_causal_and_multi_head.ipynb"
    assert as_notebooks.parts["causal"].problem.startswith(f"the solution cell 'causal' of {notebook} {said}")
    assert not any("causal.py" in c.student_text for c in as_notebooks.checks)
    assert any(c.student_text.startswith("SyntaxError: unmatched ')' (causal.py") for c in as_modules.checks)


def test_notebooks_nested_in_a_submitted_folder_or_a_zip(engine, tmp_path):
    texts = module_texts(bugs=("causal_diagonal",))
    nested = fill_notebooks(texts, tmp_path / "submitted" / "alice" / "ch03")
    # Jupyter's checkpoints hold older copies of the same notebooks: never read
    shutil.copytree(nested, nested / ".ipynb_checkpoints")
    (nested / "notes.txt").write_text("not a notebook")
    archive = tmp_path / "alice.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        for path in sorted(nested.rglob("*.ipynb")):
            bundle.write(path, str(path.relative_to(tmp_path / "submitted")))
    expected = by_check(engine(write_modules(texts, tmp_path / "modules"), parts=["causal"]))
    assert not all(passed for passed, _, _ in expected.values())
    for handed_in in (tmp_path / "submitted" / "alice", archive):
        assert by_check(engine(handed_in, parts=["causal"])) == expected, handed_in


def test_one_notebook_grades_its_parts_and_names_what_is_missing(engine, tmp_path):
    folder = fill_notebooks(module_texts(), tmp_path / "nb")
    grade = engine(folder / "03_attention_in_numpy.ipynb", parts=["numpy_attention", "causal"])
    assert grade.parts["numpy_attention"].score == grade.parts["numpy_attention"].max_score
    assert grade.parts["causal"].score == 0
    assert grade.parts["causal"].problem == (
        "no solution cell for causal (a code cell with nbgrader grade_id 'causal') in 03_attention_in_numpy.ipynb")


@pytest.mark.quick
def test_modules_win_over_notebooks(tmp_path):
    write_modules(module_texts(STUBS), tmp_path / "repo" / "assignments" / "ch03")
    fill_notebooks(module_texts(), tmp_path / "repo" / "notebooks" / "ch03")
    staged = stage(tmp_path / "repo", tmp_path / "staged")
    assert staged.found == sorted(MODULES) and staged.notebooks == []
    assert (tmp_path / "staged" / "causal.py").read_text() == (STUBS / "causal.py").read_text()


def write_notebook(path, cells):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))


def solution_cell(module, source):
    return {"cell_type": "code", "execution_count": None, "outputs": [], "source": source,
            "metadata": {"nbgrader": {"grade": False, "grade_id": module, "locked": False, "solution": True}}}


@pytest.mark.quick
def test_a_module_in_two_notebooks_is_an_error_naming_both(tmp_path):
    write_notebook(tmp_path / "hw" / "a" / "one.ipynb", [solution_cell("mha", "x = 1")])
    write_notebook(tmp_path / "hw" / "b" / "two.ipynb", [solution_cell("mha", "x = 2")])
    with pytest.raises(SubmissionError) as caught:
        stage(tmp_path / "hw", tmp_path / "staged")
    # named relative to the submission: the grader's paths never reach a student
    assert str(caught.value) == "b/two.ipynb: a second solution cell for mha (the first is in a/one.ipynb)"


def test_a_malformed_cell_in_a_zip_names_the_file_in_the_zip_and_the_cell(tmp_path):
    write_notebook(tmp_path / "src" / "ch03" / "01.ipynb",
                   [{"cell_type": "markdown", "metadata": {}, "source": "hi"}, solution_cell("../causal", "x = 1")])
    archive = tmp_path / "hw.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.write(tmp_path / "src" / "ch03" / "01.ipynb", "ch03/01.ipynb")
    with pytest.raises(SubmissionError) as caught:
        stage(archive, tmp_path / "staged")
    message = str(caught.value)
    assert message.startswith("ch03/01.ipynb, cell 1: solution cell with grade_id '../causal'"), message
    assert "/tmp" not in message


def test_the_grade_command_grades_notebooks_and_reports_bad_ones(engine, tmp_path):  # engine: the session engine's .grade
    """`grade` as cli.main in this process, in the session's fork server (tests/in_process.py)."""
    folder = fill_notebooks(module_texts(STUBS), tmp_path / "submitted" / "bob" / "ch03")
    status, stdout, stderr = run_command(engine.__self__, ["grade", tmp_path / "submitted" / "bob"])
    assert status == 0, stderr
    assert re.search(rf"total +0 / {g(TOTAL)}", stdout)
    assert f"note: graded the solution cells of {NOTEBOOK_COUNT} notebook(s)" in stdout
    broken = folder / "01_self_attention.ipynb"
    broken.write_text(broken.read_text()[:-20])
    status, _, stderr = run_plain(["grade", folder])  # refused before any engine is opened
    assert status == 2
    assert f"error: {broken.name}: not valid JSON" in stderr


TRANSFORMER = (
    "try:  # blank every later cell of the notebook, the hidden tests included\n"
    "    get_ipython().input_transformers_post.append(lambda lines: [])\n"
    "    get_ipython().input_transformers_cleanup.append(lambda lines: [])\n"
    "except NameError:\n"
    "    pass\n"
)


def test_an_input_transformer_in_a_solution_cell_changes_nothing(engine, tmp_path):
    """Under nbgrader's Execute this trick made every test cell after it pass; here the wrong code
    scores what it deserves, as a module, guarded or not. In a notebook the unguarded line reads a name no
    solution cell gives (IPython's get_ipython) at the top level: it is commented out, as magics are
    (submitted_notebooks.with_earlier_cells_names), and the stubs under it score what stubs score."""
    texts = module_texts(bugs=("numpy_softmax_unstable",), edits={
        "numpy_attention": lambda text: TRANSFORMER + text,
        "simple_attention": lambda text: "get_ipython().input_transformers_post.append(lambda lines: [])\n"
                                         + (STUBS / "simple_attention.py").read_text(),
    })
    parts = ["simple_attention", "numpy_attention"]
    as_modules = engine(write_modules(texts, tmp_path / "modules"), parts=parts)
    as_notebooks = engine(fill_notebooks(texts, tmp_path / "notebooks"), parts=parts)
    assert by_part(as_notebooks) == by_part(as_modules)
    clean = engine(write_modules(module_texts(bugs=("numpy_softmax_unstable",)), tmp_path / "clean"), parts=parts)
    assert by_part(as_notebooks)["numpy_attention"] == by_part(clean)["numpy_attention"] < 10
    assert by_part(as_notebooks)["simple_attention"] == 0
    messages = [f"{c.message} {c.student_text}" for c in as_notebooks.checks if c.part == "simple_attention"]
    assert all("not implemented yet" in message for message in messages), messages
    # as a module, the unguarded line is demo code that raises at import: skipped (inside/demo_lines.py), said in a
    # note, and the stubs under it score what stubs score (it was "does not import: NameError" before)
    assert not as_modules.parts["simple_attention"].problem
    assert [n for n in as_modules.notes if n.startswith("simple_attention: ")] == [
        "simple_attention: simple_attention.py, line 1: `get_ipython().input_transformers_post.append(lambda lines: [])` "
        "raised NameError when the module was imported (it reads get_ipython, which simple_attention.py never "
        "defines). It is demo code at the top level: the grader skipped it and graded your classes and functions "
        "without it (no points lost for it). Run on its own, the code still stops there: put demo code under "
        "`if __name__ == \"__main__\":`."]


def test_magics_in_a_solution_cell_are_comments_when_graded(engine, tmp_path):
    texts = module_texts(edits={"weight_transfer": lambda text: "%load_ext autoreload\n!pip install nothing\n" + text})
    grade = engine(fill_notebooks(texts, tmp_path / "nb"), parts=["weight_transfer"])
    assert by_part(grade) == {"weight_transfer": grade.parts["weight_transfer"].max_score}


def test_a_cell_may_use_what_an_earlier_solution_cell_defines_as_in_the_kernel(engine, tmp_path):
    """A learner's mha cell without `from causal import CausalAttention` and exercises cell without `from mha
    import ...` (the notebook's kernel shares one namespace: the cells above defined them): mha lost 3 points to
    a NameError at c3f6e03 (wrapper_book_example, wrapper_unseen_seed); a v2 cell ending with the book's
    `print(sa_v2(inputs))`, `inputs` made in the first cell, lost all of v2's 10 (it did not import), and one
    ending with `print(softmax_naive(book["attn_scores_2"]))` (the setup cell's `book`) all of its part's. Full marks
    now, as in the kernel; the same modules handed in as files still need their imports (a module is not a cell)."""
    drop = {"mha": lambda text: text.replace("from causal import CausalAttention\n", ""),
            "exercises": lambda text: text.replace("from mha import MultiHeadAttention, MultiHeadAttentionWrapper\n", ""),
            # the book's listings: `inputs` made in the first cell, printed through sa_v2 at the end of another
            # and demo lines that read the setup cell's names (`book`, `heatmaps`: ch03_tools)
            "simple_attention": lambda text: text + '\ninputs = torch.rand(6, 3)\nprint(softmax_naive(book["attn_scores_2"]))\n'
                                                    'w = attention_weights(book["attn_scores"])\nheatmaps(w)\n',
            "self_attention_v2": lambda text: text + "\ntorch.manual_seed(789)\nsa_v2 = SelfAttention_v2(3, 2)\n"
                                                     "print(sa_v2(inputs))\n"}
    texts = module_texts(edits=drop)
    assert "import" not in texts["exercises"] and "from causal" not in texts["mha"]
    parts = ["simple_attention", "self_attention_v2", "mha", "exercises"]
    grade = engine(fill_notebooks(texts, tmp_path / "nb"), parts=parts)
    assert (by_part(grade), [c.name for c in grade.checks if not c.passed]) == (
        {part: grade.parts[part].max_score for part in parts}, [])
    as_modules = engine(write_modules(texts, tmp_path / "modules"), parts=["mha"])
    assert by_part(as_modules)["mha"] < as_modules.parts["mha"].max_score


def test_a_cell_may_use_what_a_cell_above_it_imports_as_in_the_kernel(engine, tmp_path):
    """A learner's SelfAttention_v1 scaling by math.sqrt, `import math` in a cell of their own above the solution
    cell, and a numpy_attention cell without `import numpy as np` (the setup cell imports NumPy): each passed every
    check cell in the kernel and lost its part's 10 points to a NameError when graded (only the solution cells are
    read). Full marks now: a name a code cell above imports is imported on the cell's first line. The setup cell's
    `from ch03_tools import *` gives no module: a cell reading `math` with no import anywhere fails in the kernel
    as it does when graded."""
    texts = module_texts(edits={
        "self_attention_v1": lambda text: text.replace("attn_scores / keys.shape[-1] ** 0.5",
                                                       "attn_scores / math.sqrt(keys.shape[-1])"),
        "numpy_attention": lambda text: text.replace("import numpy as np\n", "", 1)})
    assert "math.sqrt" in texts["self_attention_v1"] and "import numpy" not in texts["numpy_attention"]
    folder = fill_notebooks(texts, tmp_path / "nb")
    path = folder / "01_self_attention.ipynb"
    notebook = json.loads(path.read_text())
    at = next(i for i, c in enumerate(notebook["cells"]) if c["metadata"].get("nbgrader", {}).get("grade_id") == "self_attention_v1")
    notebook["cells"].insert(at, {"cell_type": "code", "execution_count": None, "id": "learner-imports", "metadata": {},
                                  "outputs": [], "source": ["import math"]})
    path.write_text(json.dumps(notebook))
    parts = ["self_attention_v1", "numpy_attention"]
    grade = engine(folder, parts=parts)
    assert (by_part(grade), [c.name for c in grade.checks if not c.passed]) == ({"self_attention_v1": 10, "numpy_attention": 10}, [])
    # what the kernel has after the setup cell: torch and NumPy from its own imports, no module from ch03_tools
    tools = {}
    exec(compile((SOURCE / "ch03_tools.py").read_text(), "ch03_tools.py", "exec"), tools)
    assert "book" in tools["__all__"] and "check" in tools["__all__"]
    assert not {"math", "np", "torch", "Path", "json", "sys"} & set(tools["__all__"])
    # the cell above's import goes on the solution cell's first line (its line numbers stay the cell's)
    imports: dict = {}
    sources = submitted_notebooks.notebook_solution_sources(notebook, "nb", imports=imports)
    out = submitted_notebooks.with_earlier_cells_names(sources, list(sources), imports)
    assert out["self_attention_v1"].splitlines()[0] == "import math; " + sources["self_attention_v1"].splitlines()[0]
    # (also the read-only cells' own imports above it: `import simple_attention` in a drawing cell)
    assert imports["self_attention_v1"].items() >= {"np": "import numpy as np", "torch": "import torch",
                                                    "math": "import math"}.items()


@pytest.mark.quick
def test_names_of_earlier_cells_are_imported_on_the_first_statement_s_line():
    """submitted_notebooks.with_earlier_cells_names: the import goes on the line of the cell's first statement
    (a docstring or import: the cell's line numbers stay the module's), after the last line where the cell starts
    with a class, a def or a __future__ import; a name the cell binds itself, or a builtin, is left alone."""
    order = ["causal", "mha", "exercises"]
    sources = {"causal": "import torch\n\nclass CausalAttention:\n    pass\n\ndef causal_mask(n):\n    return n\n",
               "mha": "class MultiHeadAttentionWrapper:\n    def __init__(self):\n        self.h = CausalAttention()\n",
               "exercises": '"""Exercises."""\nfrom mha import MultiHeadAttentionWrapper as W\n\n\ndef f(causal_mask=None):\n'
                            '    return W(), MultiHeadAttentionWrapper, causal_mask, len\n'}
    out = submitted_notebooks.with_earlier_cells_names(sources, order)
    assert out["causal"] == sources["causal"]
    assert out["mha"] == sources["mha"] + "from causal import CausalAttention\n"
    assert out["exercises"] == "from mha import MultiHeadAttentionWrapper; " + sources["exercises"]
    assert [len(out[m].splitlines()) for m in ("causal", "exercises")] == [len(sources[m].splitlines())
                                                                          for m in ("causal", "exercises")]
    for text in out.values():
        compile(text, "cell", "exec")
    # a variable of an earlier cell: only where the cell's top level reads it (a method reading it is left alone)
    cells = {"simple_attention": "inputs = 1\nd_out = 2\n",
             "self_attention_v2": "def f(self):\n    return d_out\n\n\nprint(inputs)\n"}
    out = submitted_notebooks.with_earlier_cells_names(cells, ["simple_attention", "self_attention_v2"])
    assert out["self_attention_v2"] == cells["self_attention_v2"] + \
        "import simple_attention; inputs = simple_attention.inputs\n"
    # demo lines reading a name no solution cell gives (the setup cell's book), and what they assigned, commented out
    cells = {"simple_attention": 'import torch\n\n\ndef f(x):\n    return x\n\n\nw = f(\n    book["a"])\nprint(w)\nz = 1; print(book)\n'}
    out = submitted_notebooks.with_earlier_cells_names(cells, ["simple_attention"])
    assert out["simple_attention"] == cells["simple_attention"].replace("w = f(\n    book", "# w = f(\n#     book").replace(
        "print(w)", "# print(w)")


def test_source_notebooks_are_what_the_engine_grades_as_the_solutions(tmp_path):
    staged = stage(SOURCE, tmp_path / "staged")
    assert staged.found == sorted(MODULES)
    for module in MODULES:
        assert (tmp_path / "staged" / f"{module}.py").read_text() == (ROOT / "solutions" / "ch03" / f"{module}.py").read_text()
