"""Student stubs and public tests: generated from the solutions, failing on the stubs, passing on the solutions."""
import argparse
import ast
import dataclasses
import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from autograder import chapter
from autograder.authoring import stubs
from autograder.commands import stubs as stubs_command

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions" / "ch03"
ASSIGNMENTS = ROOT / "assignments" / "ch03"
PUBLIC_TESTS = ASSIGNMENTS / "tests"
SHARED_BOOK = ROOT.parent / "shared" / "ch03-book-values.json"


def pytest_public(tmp_path, *args):
    """Run the public tests in a fresh interpreter from the repo root.

    Returns (exit code, output, {test id: None if it passed, else its failure, error or skip message}).
    """
    junit = tmp_path / "junit.xml"
    command = [sys.executable, "-m", "pytest", str(PUBLIC_TESTS), "-p", "no:cacheprovider", "-q",
               f"--junitxml={junit}", *args]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    outcomes = {}
    for case in ET.parse(junit).iter("testcase"):
        problems = [child.get("message", child.tag) for child in case if child.tag in ("failure", "error", "skipped")]
        outcomes[f"{case.get('classname')}.{case.get('name')}"] = problems[0] if problems else None
    return done.returncode, done.stdout + done.stderr, outcomes


# --- the generator ---------------------------------------------------------------------------------

@pytest.mark.quick
def test_committed_stubs_are_what_the_generator_makes_now():
    drifted = stubs.drifted(SOLUTIONS, ASSIGNMENTS)
    assert drifted == [], f"out of date in assignments/ch03: {drifted}; run `python -m autograder stubs`"


def test_drift_is_reported_by_file_name(tmp_path):
    stubs.generate(SOLUTIONS, tmp_path)
    assert stubs.drifted(SOLUTIONS, tmp_path) == []
    (tmp_path / "causal.py").write_text((tmp_path / "causal.py").read_text() + "# edited by hand\n")
    (tmp_path / "mha.py").unlink()
    assert stubs.drifted(SOLUTIONS, tmp_path) == ["causal.py", "mha.py"]


def test_stubs_command_check_and_regenerate(tmp_path, capsys):
    here = chapter.current()  # the chapter, its assignment folder moved to tmp_path (the command's --chapter)
    moved = dataclasses.replace(here, folders={**here.folders, "assignments": str(tmp_path)})
    assert stubs_command.run(argparse.Namespace(check=True, chapter=moved)) == 1
    assert f"out of date: {tmp_path / 'numpy_attention.py'}" in capsys.readouterr().out
    assert stubs_command.run(argparse.Namespace(check=False, chapter=moved)) == 0
    assert stubs_command.run(argparse.Namespace(check=True, chapter=moved)) == 0
    assert "stubs up to date" in capsys.readouterr().out


def test_a_region_becomes_a_raise_with_its_hint(monkeypatch):
    source = 'def f(x):\n    """Doc."""\n    ### BEGIN SOLUTION\n    y = x\n    return y\n    ### END SOLUTION\n\n\nz = 1\n'
    assert stubs.solution_regions(source) == [(3, 6, "    ")]
    monkeypatch.setitem(stubs.HINTS, "m.f", 'return "x" (book 3.3)')
    assert stubs.make_stub(source, "m") == ('def f(x):\n    """Doc."""\n'
                                            '    raise NotImplementedError("m.f: return \\"x\\" (book 3.3)")\n\n\nz = 1\n')


@pytest.mark.parametrize("source, line, complaint", [
    ("def f():\n    return 1\n    ### END SOLUTION\n", 3, "without a BEGIN"),
    ("def f():\n    ### BEGIN SOLUTION\n    ### BEGIN SOLUTION\n    ### END SOLUTION\n", 3, "inside the region opened on line 2"),
    ("def f():\n    pass\n    ### BEGIN SOLUTION\n    return 1\n", 3, "never closed"),
    ("def f():\n    ### BEGIN SOLUTION\n    return 1\n  ### END SOLUTION\n", 4, "indented differently"),
    ("def f():\n    ## BEGIN SOLUTION\n    return 1\n", 2, "not exactly"),
])
def test_malformed_markers_name_the_file_and_line(source, line, complaint):
    with pytest.raises(ValueError, match=rf"^broken\.py, line {line}: .*{complaint}"):
        stubs.solution_regions(source, "broken.py")
    with pytest.raises(ValueError, match=rf"^broken\.py, line {line}: "):
        stubs.make_stub(source, "broken")


@pytest.mark.parametrize("source, line, complaint", [
    ("def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION\n", 2, "no hint for broken.f"),
    ("### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n", 1, "outside any function"),
    ("def f():\n    ### BEGIN SOLUTION\n    y = 1\n    ### END SOLUTION\n    return 2\n", 4, "unreachable"),
    ("class A:\n    def __init__(self):\n        ### BEGIN SOLUTION\n        super().__init__()\n"
     "        ### END SOLUTION\n", 3, "must call super"),
])
def test_regions_the_stub_cannot_keep_name_the_file_and_line(source, line, complaint):
    with pytest.raises(ValueError, match=rf"^broken\.py, line {line}: .*{complaint}"):
        stubs.make_stub(source, "broken")


def test_errors_in_a_solution_file_name_its_path(tmp_path):
    for name in stubs.MODULES:
        shutil.copy(SOLUTIONS / f"{name}.py", tmp_path)
    causal = tmp_path / "causal.py"
    causal.write_text(causal.read_text().replace("    ### END SOLUTION\n", "", 1))
    with pytest.raises(ValueError, match=rf"^{re.escape(str(causal))}, line \d+: BEGIN SOLUTION inside"):
        stubs.stub_texts(tmp_path)


# --- the stubs ---------------------------------------------------------------------------------------

def definitions(path):
    """{qualified name: def or class node} of a module."""
    found = {}

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.ClassDef)):
                found[prefix + child.name] = child
                visit(child, prefix + child.name + ".")

    visit(ast.parse(path.read_text()), "")
    return found


@pytest.mark.quick
@pytest.mark.parametrize("name", stubs.MODULES)
def test_stubs_keep_every_signature_and_docstring(name):
    solution, stub = definitions(SOLUTIONS / f"{name}.py"), definitions(ASSIGNMENTS / f"{name}.py")
    assert solution.keys() == stub.keys()
    for qualname, node in stub.items():
        docstring = ast.get_docstring(node)
        assert docstring, f"{name}.{qualname} has no docstring in the stub"
        assert docstring == ast.get_docstring(solution[qualname])
        if isinstance(node, ast.FunctionDef):
            assert ast.dump(node.args) == ast.dump(solution[qualname].args), f"{name}.{qualname}: signature changed"


@pytest.mark.parametrize("name", stubs.MODULES)
def test_stub_bodies_are_a_hinted_raise_and_init_keeps_super(name):
    for qualname, node in definitions(ASSIGNMENTS / f"{name}.py").items():
        if not isinstance(node, ast.FunctionDef):
            continue
        body = [ast.unparse(stmt) for stmt in node.body[1:]]  # after the docstring
        hint = f"{name}.{qualname}: {stubs.HINTS[f'{name}.{qualname}']}"
        expected = [f"raise NotImplementedError({hint!r})"]
        if node.name == "__init__":
            expected.insert(0, "super().__init__()")
        assert body == expected, f"{name}.{qualname}"


def test_every_hint_belongs_to_a_solution_region():
    raised = set()
    for name in stubs.MODULES:
        raised |= set(re.findall(r'raise NotImplementedError\("([\w.]+): ', (ASSIGNMENTS / f"{name}.py").read_text()))
    assert sorted(set(stubs.HINTS) - raised) == [], "hints with no solution region"


def test_stubs_import_cleanly():
    code = f"import sys; sys.path.insert(0, {str(ASSIGNMENTS)!r}); " + "; ".join(f"import {n}" for n in stubs.MODULES)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


# --- the public tests ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def on_the_solutions(tmp_path_factory):
    return pytest_public(tmp_path_factory.mktemp("solutions"), "--submission", str(SOLUTIONS),
                         "-W", "error::pytest.PytestUnknownMarkWarning")


def test_every_public_test_fails_on_the_stubs_saying_what_is_missing(tmp_path):
    code, output, outcomes = pytest_public(tmp_path, f"--submission={ASSIGNMENTS}")
    assert code == 1, output
    assert len(outcomes) >= 30, output
    for test, message in outcomes.items():
        message = (message or "").removeprefix("Failed: ")
        assert message.startswith("not implemented yet: "), f"{test}: {message}"
        assert message.split(": ")[1] in stubs.HINTS, f"{test} does not name what is missing: {message}"
    assert "Traceback" not in output


# not quick: the public tests run by a new pytest; the quick subset checks the stubs' generation and
# signatures (issue 38 item 6)
def test_every_public_test_passes_on_the_solutions(on_the_solutions):
    code, output, outcomes = on_the_solutions
    assert code == 0, output
    assert len(outcomes) >= 30 and all(message is None for message in outcomes.values()), output


def test_a_marker_selects_one_module_and_the_default_submission_is_the_stubs(tmp_path, on_the_solutions):
    code, output, outcomes = pytest_public(tmp_path, "-m", "causal", "-W", "error::pytest.PytestUnknownMarkWarning")
    assert code == 1, output
    of_causal = {test for test in on_the_solutions[2] if ".test_causal." in test}
    assert of_causal and set(outcomes) == of_causal, output
    assert all("not implemented yet: causal." in (message or "") for message in outcomes.values()), output


@pytest.mark.parametrize("name", stubs.MODULES)
def test_each_public_test_file_carries_its_module_marker(name):
    tree = ast.parse((PUBLIC_TESTS / f"test_{name}.py").read_text())
    marks = [ast.unparse(node.value) for node in tree.body
             if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["pytestmark"]]
    assert marks == [f"pytest.mark.{name}"]


def test_book_examples_hold_no_dropout_values():
    snapshot = json.loads((PUBLIC_TESTS / "book_examples.json").read_text())
    assert snapshot["values"], "book_examples.json holds no values"
    assert not [name for name in snapshot["values"] if "dropout" in name], "dropout masks are platform-dependent"


def test_book_examples_are_the_shared_book_values():
    if not SHARED_BOOK.is_file():  # a clone outside the course's workspace has no ../shared
        pytest.skip("the book's values are not here (../shared/ch03-book-values.json: the course's shared folder "
                    "beside the project; a clone elsewhere has none)")
    snapshot = json.loads((PUBLIC_TESTS / "book_examples.json").read_text())
    shared = json.loads(SHARED_BOOK.read_text())
    assert snapshot["inputs"] == shared["inputs"]
    for name, entry in snapshot["values"].items():
        assert entry["value"] == shared["values"][name]["value"], name
