"""The quick subset (`pytest -m quick`, tests/quick_subset.py) stays honest: every test file is
listed (a new file must say what of it is quick), and every test it names still exists."""
import ast
from pathlib import Path

from quick_subset import QUICK, marks_itself

HERE = Path(__file__).resolve().parent


def test_every_test_file_is_listed():
    """Listed in QUICK, or marking its quick tests itself (@pytest.mark.quick)."""
    files = {p.name for p in HERE.glob("test_*.py")}
    unlisted = {name for name in files - set(QUICK) if not marks_itself((HERE / name).read_text())}
    assert sorted(unlisted) == [] and sorted(set(QUICK) - files) == []


def test_a_file_may_mark_its_quick_tests_itself():
    assert marks_itself("import pytest\n\n@pytest.mark.quick\ndef test_x():\n    pass\n")
    assert marks_itself("import pytest\npytestmark = [pytest.mark.quick]\n")
    assert not marks_itself("import pytest\n\n@pytest.mark.slow\ndef test_quick():\n    pass\n")


def test_every_named_test_exists():
    missing = []
    for name, tests in QUICK.items():
        defined = {node.name for node in ast.walk(ast.parse((HERE / name).read_text()))
                   if isinstance(node, ast.FunctionDef)}
        missing += [f"{name}::{test}" for test in sorted(tests or ()) if test not in defined]
    assert missing == []


def test_most_files_have_a_quick_path():
    # the files left out run a real nbgrader, a Jupyter kernel, fresh virtual environments or a loaded
    # machine: they have markers of their own (`-m nbgrader`, `-m notebooks`, `-m deploy`, `-m load`)
    left_out = sorted(name for name, tests in QUICK.items() if tests == set())
    # and two read a whole graded class (test_readme_batch, test_regrades): the quick subset keeps its 2 minutes
    assert left_out == ["test_deploy_installs.py", "test_graded_under_load.py", "test_nbgrader_commands.py", "test_nbgrader_roundtrip.py",
                        "test_nbgrader_validate.py", "test_notebook_outputs.py", "test_readme_batch.py", "test_regrades.py"]


def _outside_names(tree):
    """Module-level names bound to a path outside the project: an expression that goes up from it
    (`.parent` of the root, `parents[1] / ".."`) to a folder beside it."""
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            source = ast.unparse(node.value)
            if "ROOT.parent" in source or "'..'" in source or '".."' in source:
                names.add(node.targets[0].id)
    return names


def _skip_reasons(tree):
    """Every skip reason written in a test file: pytest.skip(...)'s message and skipif's reason=."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        called = ast.unparse(node.func)
        if called.endswith("skip") and node.args:
            yield node.args[0]
        if called.endswith("skipif"):
            yield from (k.value for k in node.keywords if k.arg == "reason")


def test_no_skip_reason_names_a_path_outside_the_project():
    """Issue 31 item 7: in a clone outside the course's workspace the quick subset said where the
    course's shared folder would be on this machine; a skip reason says ../shared instead."""
    named = []
    for path in sorted(HERE.glob("test_*.py")):
        tree = ast.parse(path.read_text())
        outside = _outside_names(tree)
        for reason in _skip_reasons(tree):
            used = {n.id for n in ast.walk(reason) if isinstance(n, ast.Name)}
            named += [f"{path.name}: {name}" for name in sorted(used & outside)]
            if "resolve()" in ast.unparse(reason):
                named.append(f"{path.name}: a resolved path")
    assert named == []


def test_the_outside_path_rule_finds_one():
    tree = ast.parse('BOOK = ROOT.parent / "shared" / "x.json"\n'
                     'def test_x():\n    pytest.skip(f"not here ({BOOK})")\n')
    assert _outside_names(tree) == {"BOOK"}
    assert [ast.unparse(r) for r in _skip_reasons(tree)] == ["f'not here ({BOOK})'"]
