"""The quick subset (`pytest -m quick`) stays honest: every test file marks its own main path quick
(@pytest.mark.quick, its pytestmark, or some cases; tests/quick_subset.py), but the few named here,
whose every test needs a real nbgrader, a kernel, fresh environments, a loaded machine or a whole
graded class, each with a marker or a reason of its own."""
import ast
from pathlib import Path

import pytest
from quick_subset import chosen, marks_itself, quick_tests

pytestmark = pytest.mark.quick  # the whole file is in the quick subset

HERE = Path(__file__).resolve().parent
# the files with no quick test: they run a real nbgrader, a Jupyter kernel, fresh virtual environments or
# a loaded machine (markers of their own: `-m nbgrader`, `-m notebooks`, `-m deploy`, `-m load`), or read a
# whole graded class (test_readme_batch, test_regrades): the quick subset keeps its 2 minutes
NOT_QUICK = ["test_deploy_installs.py", "test_graded_under_load.py", "test_nbgrader_commands.py", "test_nbgrader_roundtrip.py",
             "test_nbgrader_validate.py", "test_notebook_outputs.py", "test_readme_batch.py", "test_regrades.py"]


def test_every_test_file_marks_a_quick_test_but_the_named_few():
    unmarked = sorted(p.name for p in HERE.glob("test_*.py") if not marks_itself(p.read_text()))
    assert unmarked == NOT_QUICK


def test_the_marks_are_read_as_pytest_reads_them():
    assert marks_itself("import pytest\n\n@pytest.mark.quick\ndef test_x():\n    pass\n")
    assert marks_itself("import pytest\npytestmark = [pytest.mark.quick]\n")
    assert not marks_itself("import pytest\n\n@pytest.mark.slow\ndef test_quick():\n    pass\n")
    source = ("import pytest\n\n@pytest.mark.quick\ndef test_a():\n    pass\n\ndef test_b():\n    pass\n\n"
              "@pytest.mark.quick\nclass TestC:\n    def test_c(self):\n        pass\n\n"
              "@pytest.mark.parametrize('k', [pytest.param(1, marks=pytest.mark.quick), 2])\ndef test_d(k):\n    pass\n")
    assert quick_tests(source) == {"test_a", "test_c"}  # test_d: one case only, not the whole test
    assert quick_tests("import pytest\npytestmark = [pytest.mark.nbgrader, pytest.mark.quick]\n"
                       "def test_a():\n    pass\ndef helper():\n    pass\n") == {"test_a"}


def test_the_quick_marks_are_the_ones_pytest_selects(request):
    """What quick_subset reads from the sources is what pytest marks quick in this session's collection
    (the files collected now, whatever -m selects; whole tests: a case marked alone is not counted)."""
    wrong = []
    for item in request.session.items:
        case_marks = getattr(getattr(item, "callspec", None), "marks", [])
        whole = item.get_closest_marker("quick") is not None and not any(m.name == "quick" for m in case_marks)
        if whole != chosen(item.path.name, getattr(item, "originalname", item.name)):
            wrong.append(item.nodeid)
    assert wrong == []


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
