"""The notebook versions: generated source notebooks, module extraction, student notebooks.

Nothing here runs a notebook or needs nbgrader (tests/test_nbgrader_roundtrip.py does both).
"""
import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from in_process import run_plain

from autograder import submitted_notebooks
from autograder.authoring import notebooks
from autograder.authoring.stubs import MODULES, solution_regions
from autograder.chapter import current

pytestmark = pytest.mark.quick  # the whole file is in the quick subset

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions" / "ch03"
STUBS = ROOT / "assignments" / "ch03"
PUBLIC_TESTS = STUBS / "tests"
DIAGNOSE = PUBLIC_TESTS / "_diagnose.py"
BOOK_CHECK = ROOT.parent / "shared" / "tools" / "book_check.py"


def source_notebooks():
    return sorted(current().source.glob("*.ipynb"))


def cells_of(path):
    return json.loads(Path(path).read_text())["cells"]


def text(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def write_notebook(path, cells, **top):
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5, **top}
    Path(path).write_text(json.dumps(notebook))
    return Path(path)


def solution_cell(module, source, **extra):
    nbgrader = {"grade": False, "grade_id": module, "locked": False, "schema_version": 3, "solution": True}
    return {"cell_type": "code", "metadata": {"nbgrader": nbgrader}, "source": source, "outputs": [],
            "execution_count": None, **extra}


# --- the committed source notebooks ------------------------------------------------------------------

def test_committed_notebooks_are_what_the_generator_makes():
    assert notebooks.drifted() == [], "run `python -m autograder notebooks` and commit source/ch03"


def test_notebooks_command_check_reports_up_to_date():
    status, stdout, stderr = run_plain(["notebooks", "--check"])  # cli.main here (tests/in_process.py)
    assert status == 0, stdout + stderr
    assert "notebooks up to date" in stdout


def test_every_module_is_one_solution_cell_holding_the_solution_file_verbatim():
    found = {}
    for path in source_notebooks():
        for cell in cells_of(path):
            meta = cell["metadata"].get("nbgrader", {})
            if meta.get("solution"):
                assert cell["cell_type"] == "code", f"{path.name}: {meta['grade_id']} should be a code cell"
                assert meta["grade_id"] not in found, f"{meta['grade_id']} has two solution cells"
                found[meta["grade_id"]] = text(cell)
    assert sorted(found) == sorted(MODULES)
    for module, code in found.items():
        assert code + "\n" == (SOLUTIONS / f"{module}.py").read_text(), f"the {module} cell differs from solutions/ch03"
        assert solution_regions(code), f"the {module} cell lost its solution markers"


def test_cell_metadata_is_what_nbgrader_expects():
    for path in source_notebooks():
        notebook = json.loads(path.read_text())
        assert notebook["metadata"]["kernelspec"]["name"] == "python3"
        ids = [cell["id"] for cell in notebook["cells"]]
        assert len(ids) == len(set(ids)), f"{path.name}: repeated cell ids"
        for index, cell in enumerate(notebook["cells"]):
            hidden = "### BEGIN HIDDEN TESTS" in text(cell)
            if "nbgrader" not in cell["metadata"]:  # the speed lab's settings and stretch exercise: plain cells,
                where = f"{path.name}, cell {index} ({cell['id']})"  # the student's, unknown to the gradebook
                assert cell["cell_type"] == "code" and not hidden and "SOLUTION" not in text(cell), where
                assert cell["id"] in ("settings", "stretch_exercise"), where
                continue
            meta = cell["metadata"]["nbgrader"]
            where = f"{path.name}, cell {index} ({meta['grade_id']})"
            assert meta["schema_version"] == 3 and meta["grade_id"] == cell["id"], where
            if meta["solution"]:
                assert not meta["grade"] and not meta["locked"], where
            elif meta["grade"]:
                assert cell["cell_type"] == "code" and meta["locked"] and meta["points"] > 0, where
            else:
                assert meta["locked"], f"{where}: an nbgrader cell the student may change must be graded or a solution"
                assert not hidden, f"{where}: read-only cells hold no hidden tests"
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [] and cell["execution_count"] is None, f"{where}: committed with outputs"


def test_each_module_has_check_cells_then_one_graded_cell_worth_its_part():
    points = notebooks.part_points()
    for path in source_notebooks():
        cells = cells_of(path)
        for index, cell in enumerate(cells):
            meta = cell["metadata"].get("nbgrader", {})
            if not meta.get("solution"):
                continue
            module = meta["grade_id"]
            publish = cells[index + 1]
            assert text(publish).startswith(f'publish("{module}", ['), f"{path.name}: no publish cell after {module}"
            names = ast.literal_eval(text(publish)[len(f'publish("{module}", '):-1])
            defined = [node.name for node in ast.parse(text(cell)).body
                       if isinstance(node, (ast.FunctionDef, ast.ClassDef))]
            assert names == defined
            checks = []
            for later in cells[index + 2:]:
                if later["cell_type"] != "code" or later["metadata"]["nbgrader"]["grade"]:
                    break
                checks.append(later)
            assert len(checks) >= 2, f"{path.name}: {module} needs read-only check cells after its publish cell"
            assert all(not c["metadata"]["nbgrader"]["grade"] and "HIDDEN TESTS" not in text(c) for c in checks)
            graded = cells[index + 2 + len(checks)]
            gmeta = graded["metadata"]["nbgrader"]
            where = f"{path.name}: the cell after the checks of {module}"
            assert gmeta["grade"] and gmeta["grade_id"] == f"score_{module}", where
            assert gmeta["points"] == points[module], f"{where}: worth {gmeta['points']}, grading.yml says {points[module]}"
            assert "### BEGIN HIDDEN TESTS" in text(graded), f"{where}: holds no hidden tests"
            assert all(f"import {module}" in text(t) for t in checks + [graded]), f"{path.name}: a {module} test does not import it"


def test_graded_cells_are_the_parts_of_grading_yml():
    graded = {cell["metadata"]["nbgrader"]["grade_id"]: cell["metadata"]["nbgrader"]["points"]
              for path in source_notebooks() for cell in cells_of(path)
              if cell["metadata"].get("nbgrader", {}).get("grade")}
    assert graded == {f"score_{part}": points for part, points in notebooks.part_points().items()}


def _public_messages():
    """Source text of every assertion message and `check.*` description in the public tests."""
    found = {}
    for path in sorted(PUBLIC_TESTS.glob("test_*.py")):
        source = path.read_text()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Assert) and node.msg is not None:
                found[ast.get_source_segment(source, node.msg)] = path.name
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and isinstance(node.func.value, ast.Name) and node.func.value.id == "check" and node.args):
                found[ast.get_source_segment(source, node.args[-1])] = path.name
            elif (isinstance(node, ast.Assign) and [getattr(n, "id", "") for n in node.targets] == ["what"]
                  and isinstance(node.value, ast.Constant)):  # a description used by several checks
                found[ast.get_source_segment(source, node.value)] = path.name
    return found


def _diagnoses_used(sources):
    """The names from _diagnose.py (diagnoses, hints) that the code of sources uses."""
    names = {node.name for node in ast.parse(DIAGNOSE.read_text()).body if isinstance(node, ast.FunctionDef)}
    names |= {target.id for node in ast.parse(DIAGNOSE.read_text()).body if isinstance(node, ast.Assign)
              for target in node.targets if isinstance(target, ast.Name)}
    used = set()
    for source in sources:
        used |= {node.id for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name)} & names
        used |= {node.attr for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Attribute)
                 and node.attr == "shape_errors"}
    return used


def test_visible_test_cells_use_the_public_tests_diagnoses():
    # the same diagnoses, from the one _diagnose.py (copied into ch03_tools.py); that a cell and its
    # public test say the same words is shown case by case in tests/test_public_diagnoses.py
    cells = [text(cell) for path in source_notebooks() for cell in cells_of(path) if cell["id"].startswith("test_")]
    public = _diagnoses_used(path.read_text() for path in sorted(PUBLIC_TESTS.glob("test_*.py")))
    assert {"softmax_dim_mistakes", "transfer_problem", "TRANSPOSE", "head_split_hint", "shape_errors"} <= public
    assert sorted(public - _diagnoses_used(cells)) == []


def test_visible_test_cells_use_the_public_tests_messages():
    cells = "\n".join(text(cell) for path in source_notebooks() for cell in cells_of(path)
                      if cell["id"].startswith("test_"))
    flattened = " ".join(cells.split())
    messages = _public_messages()
    assert len(messages) > 30
    missing = [f"{name}: {message}" for message, name in messages.items() if " ".join(message.split()) not in flattened]
    assert not missing, "messages of the public tests that no notebook test cell uses:\n" + "\n".join(missing)


# --- extraction ----------------------------------------------------------------------------------------

def test_extracting_the_source_notebooks_gives_the_solution_files(tmp_path):
    written = submitted_notebooks.extract_modules(current().source, tmp_path)
    assert sorted(written) == sorted(MODULES)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{m}.py" for m in MODULES)
    for module in MODULES:
        assert (tmp_path / f"{module}.py").read_text() == (SOLUTIONS / f"{module}.py").read_text(), module


@pytest.mark.skipif(not BOOK_CHECK.is_file(), reason="../shared/tools/book_check.py is not there (the course's "
                                                    "shared folder beside the project; a clone elsewhere has none)")
def test_extracted_modules_reproduce_the_book(tmp_path):
    submitted_notebooks.extract_modules(current().source, tmp_path)
    done = subprocess.run([sys.executable, str(BOOK_CHECK), str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert "book values: 16/16 match" in done.stdout, done.stdout + done.stderr
    assert done.returncode == 0


def test_extracting_one_notebook_gives_only_its_modules(tmp_path):
    written = submitted_notebooks.extract_modules(current().source / "02_causal_and_multi_head.ipynb", tmp_path)
    assert written == ["causal", "mha", "exercises"]


def test_outputs_and_other_metadata_are_ignored(tmp_path):
    cell = solution_cell("causal", ["x = 1\n", "y = 2"], outputs=[{"output_type": "stream", "name": "stdout",
                                                                    "text": "import os"}])
    cell["metadata"]["nbgrader"]["checksum"] = "whatever"
    cell["metadata"]["tags"] = ["anything"]
    path = write_notebook(tmp_path / "a.ipynb", [{"cell_type": "markdown", "metadata": {}, "source": "# hi"}, cell])
    assert submitted_notebooks.extract_modules(path, tmp_path / "out") == ["causal"]
    assert (tmp_path / "out" / "causal.py").read_text() == "x = 1\ny = 2\n"


def test_cells_that_are_not_code_solution_cells_are_skipped(tmp_path):
    markdown_solution = dict(solution_cell("mha", "an answer in words"), cell_type="markdown")
    test_cell = solution_cell("causal", "assert True")
    test_cell["metadata"]["nbgrader"].update(solution=False, grade=True, points=1)
    path = write_notebook(tmp_path / "a.ipynb", [markdown_solution, test_cell, {"cell_type": "code", "source": "1"}])
    assert submitted_notebooks.extract_modules(path, tmp_path / "out") == []


def test_ipython_magics_and_shell_lines_are_commented_out(tmp_path):
    source = (
        "%%time\n"
        "import torch\n"
        "!pip install numpy\n"
        "%load_ext autoreload\n"
        "def f(x):\n"
        '    """Docstring line:\n'
        "    %not a magic inside a string\n"
        '    """\n'
        "    %timeit x + 1\n"
        "    y = (x\n"
        "         % 3)\n"
        "    return y != 2\n"
    )
    path = write_notebook(tmp_path / "a.ipynb", [solution_cell("causal", source)])
    submitted_notebooks.extract_modules(path, tmp_path / "out")
    extracted = (tmp_path / "out" / "causal.py").read_text()
    assert extracted == (
        "# %%time\n"
        "import torch\n"
        "# !pip install numpy\n"
        "# %load_ext autoreload\n"
        "def f(x):\n"
        '    """Docstring line:\n'
        "    %not a magic inside a string\n"
        '    """\n'
        "    # %timeit x + 1\n"
        "    y = (x\n"
        "         % 3)\n"
        "    return y != 2\n"
    )
    ast.parse(extracted)


@pytest.mark.parametrize("content, expected", [
    ('{"cells": [', "not valid JSON"),
    ("[]", "a notebook is a JSON object"),
    ('{"nbformat": 4}', "no 'cells' list"),
    ('{"nbformat": 3, "worksheets": []}', "only nbformat 4"),
    ("[" * 100000 + "]" * 100000, "JSON nested too deeply"),
])
def test_malformed_notebook_files_name_the_file(tmp_path, content, expected):
    path = tmp_path / "broken.ipynb"
    path.write_text(content)
    with pytest.raises(ValueError, match=expected) as caught:
        submitted_notebooks.extract_modules(path, tmp_path / "out")
    assert str(path) in str(caught.value)
    assert not (tmp_path / "out").exists()


def test_bad_json_names_the_line(tmp_path):
    path = tmp_path / "broken.ipynb"
    path.write_text('{\n "cells": [\n  {"cell_type": "code",}\n ]\n}')
    with pytest.raises(ValueError, match=r"broken.ipynb: not valid JSON: .* line 3"):
        submitted_notebooks.extract_modules(path, tmp_path / "out")


@pytest.mark.parametrize("bad_cell, expected", [
    ("just a string", "cell 1: a cell is a JSON object"),
    (solution_cell("causal", 42), "cell 1: 'source' should be a string or a list of strings"),
    (solution_cell("causal", ["ok\n", 3]), "cell 1: 'source' should be a string or a list of strings"),
    ({"cell_type": "code", "metadata": {"nbgrader": "yes"}, "source": ""}, "cell 1: metadata.nbgrader should be an object"),
    (solution_cell("conftest", "import os"), "cell 1: solution cell with grade_id 'conftest'"),
    (solution_cell("../causal", "import os"), "cell 1: solution cell with grade_id '../causal'"),
    (solution_cell(None, "import os"), "cell 1: solution cell with grade_id None"),
])
def test_malformed_cells_name_the_file_and_the_cell_index(tmp_path, bad_cell, expected):
    path = write_notebook(tmp_path / "broken.ipynb", [solution_cell("mha", "x = 1"), bad_cell])
    with pytest.raises(ValueError) as caught:
        submitted_notebooks.extract_modules(path, tmp_path / "out")
    assert f"{path}, {expected}" in str(caught.value)
    assert not (tmp_path / "out").exists(), "nothing is written from a malformed notebook"


def test_two_solution_cells_for_one_module_name_both_cells(tmp_path):
    path = write_notebook(tmp_path / "twice.ipynb", [solution_cell("mha", "x = 1"), {"cell_type": "markdown",
                          "metadata": {}, "source": ""}, solution_cell("mha", "x = 2")])
    with pytest.raises(ValueError, match=r"twice.ipynb, cell 2: a second solution cell for mha \(the first is cell 0\)"):
        submitted_notebooks.extract_modules(path, tmp_path / "out")


def test_a_module_in_two_notebooks_names_both_files(tmp_path):
    write_notebook(tmp_path / "a.ipynb", [solution_cell("mha", "x = 1")])
    write_notebook(tmp_path / "b.ipynb", [solution_cell("mha", "x = 2")])
    with pytest.raises(ValueError, match=r"b.ipynb: a second solution cell for mha \(the first is in .*a.ipynb\)"):
        submitted_notebooks.extract_modules(tmp_path, tmp_path / "out")


def test_the_extract_command_reports_malformed_notebooks_as_usage_errors(tmp_path):
    path = tmp_path / "broken.ipynb"
    path.write_text("{")
    status, _, stderr = run_plain(["notebooks", "--extract", path, "--out", tmp_path / "out"])
    assert status == 2
    assert f"error: {path}: not valid JSON" in stderr


# --- templates -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("template, expected", [
    ("%% markdown a\nx\n%% markdown a\ny\n", "line 3: cell id 'a' used twice"),
    ("%% code a\nx = 1\n", "line 1: not a cell header"),
    ("%%markdown a\n", "line 1: not a cell header"),
    ("stray text\n%% markdown a\n", "line 1: text before the first"),
    ("%% test t points=1\nassert True\n", "line 1: not a cell header"),
    ("%% markdown a points=2\n", "line 1: a markdown cell takes no options"),
    ("%% score causal points=2\n", "line 1: a score cell takes no options"),
    ("%% check score_a\nx\n%% score a\ny\n", "line 3: cell id 'score_a' used twice"),
])
def test_template_errors_name_the_file_and_line(template, expected):
    with pytest.raises(ValueError, match=re.escape(f"t.txt, {expected}")):
        notebooks.parse_template(template, "t.txt")


def test_a_solution_without_markers_is_refused(tmp_path):
    (tmp_path / "causal.py").write_text('"""No markers."""\n\ndef causal_mask(n):\n    return n\n')
    template = tmp_path / "t.txt"
    template.write_text("%% solution causal\n")
    with pytest.raises(ValueError, match="no ### BEGIN SOLUTION region"):
        notebooks.build_notebook(template, tmp_path)


# --- student notebooks without nbgrader ----------------------------------------------------------------

def _region_lines(paths):
    """Stripped lines inside solution and hidden-test regions that appear nowhere else in the sources."""
    inside, outside = set(), set()
    for path in paths:
        for cell in cells_of(path):
            in_region = False
            for line in text(cell).splitlines():
                stripped = line.strip()
                if stripped in ("### BEGIN SOLUTION", "### BEGIN HIDDEN TESTS"):
                    in_region = True
                elif stripped in ("### END SOLUTION", "### END HIDDEN TESTS"):
                    in_region = False
                elif stripped:
                    (inside if in_region else outside).add(stripped)
    return inside - outside


def test_release_notebooks_hold_the_stubs_and_no_solution_or_hidden_test(tmp_path):
    written = notebooks.release_notebooks(tmp_path)
    assert [p.name for p in written] == [p.name for p in source_notebooks()]
    secret = _region_lines(source_notebooks())
    assert len(secret) > 100
    stubs = {}
    for path in written:
        released = path.read_text()
        for marker in ("BEGIN SOLUTION", "END SOLUTION", "HIDDEN TESTS"):
            assert marker not in released, f"{path.name} still holds {marker}"
        lines = {line.strip() for cell in cells_of(path) for line in text(cell).splitlines()}
        leaked = sorted(secret & lines)
        assert not leaked, f"{path.name} leaks:\n" + "\n".join(leaked)
        for cell in cells_of(path):
            meta = cell["metadata"].get("nbgrader", {"solution": False, "locked": False})
            if meta["solution"]:
                stubs[meta["grade_id"]] = text(cell) + "\n"
            elif meta["locked"]:
                assert cell["metadata"]["editable"] is False and cell["metadata"]["deletable"] is False
    assert stubs == {module: (STUBS / f"{module}.py").read_text() for module in MODULES}
    assert submitted_notebooks.extract_modules(tmp_path, tmp_path / "out") == list(stubs)
    assert sorted(p.name for p in tmp_path.glob("*.py")) == sorted(notebooks.support_files())
    bench = (tmp_path / "bench_mha.py").read_text()
    assert bench.endswith(notebooks.bench_path().read_text()) and bench.startswith("# A copy of benchmarks/bench_mha.py")


def test_the_release_command_copies_the_support_files_with_the_notebooks(tmp_path):
    notebooks.release_notebooks(tmp_path / "made")
    status, _, stderr = run_plain(["release", "--out", tmp_path / "out", "--notebooks", tmp_path / "made"])
    assert status == 0, stderr
    copied = tmp_path / "out" / "notebooks" / "ch03"
    assert sorted(p.name for p in copied.iterdir()) == sorted(p.name for p in (tmp_path / "made").iterdir())
    assert {"04_speed_lab.ipynb", *notebooks.support_files()} <= {p.name for p in copied.iterdir()}


def test_editable_cells_are_plain_code_and_a_notebook_may_have_no_graded_cell(tmp_path):
    """An editable cell carries no nbgrader metadata: the gradebook never records it, so autograde has
    no grade_id to miss (issue 31: it warned about 'settings' and 'stretch_exercise')."""
    path = tmp_path / "t.txt"
    path.write_text("%% markdown intro\nHello\n%% editable settings\nSIZE = 8\n%% show draw\nprint(SIZE)\n")
    cells = notebooks.build_notebook(path, SOLUTIONS, points={})["cells"]
    assert [(c["cell_type"], c["metadata"].get("nbgrader", {}).get("locked"), c["source"]) for c in cells] == [
        ("markdown", True, "Hello"), ("code", None, "SIZE = 8"), ("code", True, "print(SIZE)")]
    assert cells[1]["metadata"] == {} and cells[1]["id"] == "settings"
    assert not any(c["metadata"]["nbgrader"]["grade"] or c["metadata"]["nbgrader"]["solution"] for c in cells
                   if "nbgrader" in c["metadata"])
    released = notebooks.student_notebook(notebooks.build_notebook(path, SOLUTIONS, points={}))["cells"]
    assert "editable" not in released[1]["metadata"] and released[2]["metadata"]["editable"] is False
    path.write_text("%% editable settings\n### BEGIN HIDDEN TESTS\nx = 1\n### END HIDDEN TESTS\n")
    with pytest.raises(ValueError, match=r"t.txt, line 1: editable cells are visible and not graded"):
        notebooks.build_notebook(path, SOLUTIONS, points={})


@pytest.mark.parametrize("template, expected", [
    ("%% score causal\n# hi\n", "the score cell of 'causal' must follow that module's solution cell"),
    ("%% solution causal\n", "no '%% score' cell for causal"),
    ("%% solution causal\n%% check test_x\n### BEGIN HIDDEN TESTS\n### END HIDDEN TESTS\n",
     "a check cell is read-only and visible"),
    ("%% solution causal\n%% score causal\n### BEGIN SOLUTION\n", "a score cell must not hold a solution region"),
])
def test_graded_cell_errors_name_the_template_line(tmp_path, template, expected):
    path = tmp_path / "t.txt"
    path.write_text(template)
    with pytest.raises(ValueError, match=re.escape(expected)):
        notebooks.build_notebook(path, SOLUTIONS, points={"causal": 22})


def test_a_part_without_points_in_the_rubric_is_refused(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("%% solution causal\n%% check test_x\ncheck_it()\n%% score causal\n# graded\n")
    with pytest.raises(ValueError, match="grading.yml gives part 'causal' no points"):
        notebooks.build_notebook(path, SOLUTIONS, points={"mha": 22})
    cells = notebooks.build_notebook(path, SOLUTIONS, points={"causal": 7.5})["cells"]
    assert cells[-1]["metadata"]["nbgrader"] == {"grade": True, "grade_id": "score_causal", "locked": True,
                                                 "points": 7.5, "schema_version": 3, "solution": False, "task": False}


def test_a_graded_cell_reruns_its_modules_test_calls_after_its_comments(tmp_path):
    # nbgrader's Validate judges only graded cells: one that runs no test would pass the untouched stubs
    path = tmp_path / "t.txt"
    path.write_text("%% solution causal\n%% check test_a\nimport causal\ndef test_a(n):\n    assert n\n\n\n"
                    "for n in (1, 2):\n    test_a(n)\n%% check test_b\ndef test_b():\n    pass\ntest_b()\n"
                    "%% score causal\n# graded\n# twice\n### BEGIN HIDDEN TESTS\nhidden()\n### END HIDDEN TESTS\n")
    graded = notebooks.build_notebook(path, SOLUTIONS, points={"causal": 22})["cells"][-1]
    assert graded["source"] == ("# graded\n# twice\nfor n in (1, 2):\n    test_a(n)\ntest_b()\n"
                                "### BEGIN HIDDEN TESTS\nhidden()\n### END HIDDEN TESTS")
    path.write_text("%% solution causal\n%% check test_a\ndef test_a():\n    pass\n%% score causal\n# graded\n")
    with pytest.raises(ValueError, match="line 5: no check cell before this score cell runs a test"):
        notebooks.build_notebook(path, SOLUTIONS, points={"causal": 22})


def test_the_support_module_holds_the_public_diagnoses():
    setup = notebooks.support_text()
    assert "DIAGNOSES =" not in setup
    for name in ("def which_mistake(", "def multi_head_mistakes(", "def dropout_problem(", "@torch.no_grad()"):
        assert name in setup, name
    assert "import math" in setup and "What a wrong answer most likely got wrong" not in setup  # docstring left out


def test_publish_names_what_another_cell_gives_the_solution_cell(capsys):
    """A learner's softmax_naive calling a helper defined in a scratch cell of their own, or reading a variable
    that cell assigns, worked in the kernel and raised NameError when graded (only the solution cells are read).
    The cell under the solution cell (`publish`) now says so, naming the name; a helper or a variable of the
    solution cell itself, a function of an earlier solution cell (with_earlier_cells_names imports those when
    grading), a module or a builtin gets no note, nor does a function @torch.no_grad() wraps. A function written
    again in a cell after the solution cell (the kernel publishes that one) is named too: only the solution cell
    is graded. The cells' code is in linecache, as IPython keeps it."""
    import linecache

    tools = {}
    exec(compile((ROOT / "source" / "ch03" / "ch03_tools.py").read_text(), "ch03_tools.py", "exec"), tools)
    kernel = {"__name__": "__main__", "publish": tools["publish"], "torch": tools["torch"]}
    cells = ["import math\n\n\ndef scratch_exp(x):\n    return x.exp()\n\n\nscale = 2.0\n",  # the learner's own cell
             "def attention_scores(inputs):\n    return inputs @ inputs.T\n",  # a solution cell, published below
             'publish("simple_attention", ["attention_scores"])',
             "shift = 0.0\n\n\ndef _sum(x):\n    return x.sum()\n\n\ndef softmax_naive(x):\n"
             "    return scratch_exp(x - shift) / _sum(scratch_exp(x)) / len(x) * math.pi\n\n\n"
             "@torch.no_grad()  # torch's wrapper: its code is torch's file, not a cell\n"
             "def attention_weights(scores):\n    return attention_scores(scores) * scale\n",
             'publish("self_attention_v1", ["softmax_naive", "attention_weights"])',
             # context_vector written again in a cell of its own, after the solution cell: the kernel publishes it
             "def attention_scores(inputs):\n    return inputs.T @ inputs\n\n\ndef attention_weights(s):\n"
             "    return s\n",
             "def context_vector(inputs, i):\n    return inputs[i]\n",
             'publish("simple_attention", ["attention_scores", "attention_weights", "context_vector"])']
    saved = {name: sys.modules.get(name) for name in ("simple_attention", "self_attention_v1")}
    try:
        for number, cell in enumerate(cells):
            file = f"<learner cell {number}>"
            linecache.cache[file] = (len(cell), None, cell.splitlines(keepends=True), file)
            exec(compile(cell, file, "exec"), kernel)
    finally:
        for name, module in saved.items():
            sys.modules.pop(name, None) if module is None else sys.modules.__setitem__(name, module)
        for number in range(len(cells)):
            linecache.cache.pop(f"<learner cell {number}>", None)
    said = "which another cell of this notebook gives it: when the notebook is graded only the solution cells are read"
    assert capsys.readouterr().out.splitlines() == [
        f"note: self_attention_v1.softmax_naive uses scratch_exp, {said}, so scratch_exp would be missing there; "
        "define it in the solution cell",
        f"note: self_attention_v1.attention_weights uses scale, {said}, so scale would be missing there; "
        "define it in the solution cell",
        "note: simple_attention's functions and classes come from 2 cells (attention_scores, attention_weights; "
        "context_vector): when the notebook is graded only the solution cell is read; keep your code for "
        "simple_attention in it"]
