"""The grader's modules import each other without a circle (issue 22: reports/html_feedback and
reports/results_json, sandbox/child and sandbox/part_reset each imported the other)."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "autograder"


def imports():
    """{module: {modules of the package it imports, anywhere in its code}}."""
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(("autograder",) + path.relative_to(PACKAGE).with_suffix("").parts).removesuffix(".__init__")
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("autograder"):
                found |= {f"{node.module}.{alias.name}" for alias in node.names} | {node.module}
            elif isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names if alias.name.startswith("autograder")}
        graph[name] = found
    return {name: {m for m in found if m in graph and m != name} for name, found in graph.items()}


def reaches(graph, start, goal):
    seen, todo = set(), [start]
    while todo:
        name = todo.pop()
        if name == goal:
            return True
        if name not in seen:
            seen.add(name)
            todo += graph.get(name, ())
    return False


def test_the_two_circles_are_broken():
    graph = imports()
    for a, b in (("autograder.reports.html_feedback", "autograder.reports.results_json"),
                 ("autograder.sandbox.child", "autograder.sandbox.part_reset")):
        assert a in graph and b in graph
        assert not (reaches(graph, a, b) and reaches(graph, b, a)), (a, b)


def test_no_module_of_the_package_imports_itself_through_others():
    graph = imports()
    circles = sorted({tuple(sorted((a, b))) for a in graph for b in graph[a] if reaches(graph, b, a)})
    assert circles == []
