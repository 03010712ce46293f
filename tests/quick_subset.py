"""The quick subset (`pytest -m quick`): each test file's main path, in under 2 minutes on a 2-core
machine. Each test file marks its own quick tests (issue 38 item 6; the hand-kept list of names this
module held is gone): `@pytest.mark.quick` on a test, `pytestmark = pytest.mark.quick` for a whole
file, or `pytest.param(..., marks=pytest.mark.quick)` for some cases of a parametrized test.
tests/test_quick_subset.py checks that every test file has a quick test (but the few it names, whose
every test runs a real nbgrader, a kernel, fresh environments, a loaded machine or a whole class).
These helpers read the marks from a file's source, without importing it."""
from __future__ import annotations

import ast
import functools
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _is_quick(node: ast.AST) -> bool:
    """A `pytest.mark.quick` anywhere in node."""
    return any(isinstance(n, ast.Attribute) and n.attr == "quick" and ast.unparse(n.value) == "pytest.mark"
               for n in ast.walk(node))


def marks_itself(source: str) -> bool:
    """Whether a test file's source marks any test quick (on a test, a class, a case or its pytestmark)."""
    return _is_quick(ast.parse(source))


def quick_tests(source: str) -> set[str]:
    """The test functions a file's source marks quick as a whole: all of them where its pytestmark
    holds quick, else those decorated with it (or in a class decorated with it). Cases marked one by
    one (pytest.param) are not counted."""
    tree = ast.parse(source)
    whole = any(isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytestmark" for t in node.targets)
                and _is_quick(node.value) for node in tree.body)
    chosen = set()

    def visit(body, inherited):
        for node in body:
            if isinstance(node, ast.ClassDef):
                visit(node.body, inherited or any(_is_quick(d) for d in node.decorator_list))
            elif isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                if inherited or any(_is_quick(d) and not isinstance(d, ast.Call) for d in node.decorator_list):
                    chosen.add(node.name)

    visit(tree.body, whole)
    return chosen


@functools.cache
def _quick_of_file(file_name: str) -> frozenset[str]:
    return frozenset(quick_tests((HERE / file_name).read_text()))


def chosen(file_name: str, test_name: str) -> bool:
    """Whether tests/<file_name> marks its test <test_name> quick (quick_tests)."""
    return test_name in _quick_of_file(file_name)
