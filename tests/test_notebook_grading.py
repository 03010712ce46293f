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
import subprocess
import sys
import zipfile

import pytest
from notebook_cases import MODULES, ROOT, SOURCE, STUBS, fill_notebooks, module_texts, write_modules
from rubric_points import TOTAL, g

from autograder.submission import SubmissionError, stage

NOTEBOOK_COUNT = len(list(SOURCE.glob("*.ipynb")))  # the speed lab too: read, and no solution cell in it


@pytest.fixture(scope="module")
def engine(engine):
    """The session's engine (tests/conftest.py), called: engine(path, parts=...) -> its Grade."""
    return engine.grade


def by_part(grade):
    return {part: p.score for part, p in grade.parts.items()}


def by_check(grade):
    return {(c.part, c.name): (c.passed, c.score, c.message) for c in grade.checks}


def assert_same_grade(as_modules, as_notebooks):
    assert by_part(as_notebooks) == by_part(as_modules)
    assert by_check(as_notebooks) == by_check(as_modules)
    assert [p.problem for p in as_notebooks.parts.values()] == [p.problem for p in as_modules.parts.values()]


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


def test_the_grade_command_grades_notebooks_and_reports_bad_ones(tmp_path):
    folder = fill_notebooks(module_texts(STUBS), tmp_path / "submitted" / "bob" / "ch03")
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(tmp_path / "submitted" / "bob")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert re.search(rf"total +0 / {g(TOTAL)}", done.stdout)
    assert f"note: graded the solution cells of {NOTEBOOK_COUNT} notebook(s)" in done.stdout
    broken = folder / "01_self_attention.ipynb"
    broken.write_text(broken.read_text()[:-20])
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert f"error: {broken.name}: not valid JSON" in done.stderr


TRANSFORMER = (
    "try:  # blank every later cell of the notebook, the hidden tests included\n"
    "    get_ipython().input_transformers_post.append(lambda lines: [])\n"
    "    get_ipython().input_transformers_cleanup.append(lambda lines: [])\n"
    "except NameError:\n"
    "    pass\n"
)


def test_an_input_transformer_in_a_solution_cell_changes_nothing(engine, tmp_path):
    """Under nbgrader's Execute this trick made every test cell after it pass; here the wrong code
    scores what it deserves, as a module, guarded or not."""
    texts = module_texts(bugs=("numpy_softmax_unstable",), edits={
        "numpy_attention": lambda text: TRANSFORMER + text,
        "simple_attention": lambda text: "get_ipython().input_transformers_post.append(lambda lines: [])\n"
                                         + (STUBS / "simple_attention.py").read_text(),
    })
    parts = ["simple_attention", "numpy_attention"]
    as_modules = engine(write_modules(texts, tmp_path / "modules"), parts=parts)
    as_notebooks = engine(fill_notebooks(texts, tmp_path / "notebooks"), parts=parts)
    assert_same_grade(as_modules, as_notebooks)
    clean = engine(write_modules(module_texts(bugs=("numpy_softmax_unstable",)), tmp_path / "clean"), parts=parts)
    assert by_part(as_notebooks)["numpy_attention"] == by_part(clean)["numpy_attention"] < 10
    assert by_part(as_notebooks)["simple_attention"] == 0
    messages = [f"{c.message} {c.student_text}" for c in as_notebooks.checks if c.part == "simple_attention"]
    assert all("NameError: name 'get_ipython' is not defined" in message for message in messages), messages


def test_magics_in_a_solution_cell_are_comments_when_graded(engine, tmp_path):
    texts = module_texts(edits={"weight_transfer": lambda text: "%load_ext autoreload\n!pip install nothing\n" + text})
    grade = engine(fill_notebooks(texts, tmp_path / "nb"), parts=["weight_transfer"])
    assert by_part(grade) == {"weight_transfer": grade.parts["weight_transfer"].max_score}


def test_source_notebooks_are_what_the_engine_grades_as_the_solutions(tmp_path):
    staged = stage(SOURCE, tmp_path / "staged")
    assert staged.found == sorted(MODULES)
    for module in MODULES:
        assert (tmp_path / "staged" / f"{module}.py").read_text() == (ROOT / "solutions" / "ch03" / f"{module}.py").read_text()
