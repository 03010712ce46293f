"""The grader's modules import each other without a circle (issue 22: reports/html_feedback and
reports/results_json, sandbox/child and sandbox/part_reset each imported the other), and a process
imports only what it uses, once (issue 38 item 7: a batch's start-up)."""
import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "autograder"


@functools.cache
def imports():
    """{module: {modules of the package it imports, anywhere in its code}}: parsed once for the file's
    four tests (issue 38 item 6), which only read it."""
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


@pytest.mark.quick
def test_the_two_circles_are_broken():
    graph = imports()
    for a, b in (("autograder.reports.html_feedback", "autograder.reports.results_json"),
                 ("autograder.inside.child", "autograder.inside.part_reset")):
        assert a in graph and b in graph
        assert not (reaches(graph, a, b) and reaches(graph, b, a)), (a, b)


@pytest.mark.quick
def test_no_module_of_the_package_imports_itself_through_others():
    graph = imports()
    circles = sorted({tuple(sorted((a, b))) for a in graph for b in graph[a] if reaches(graph, b, a)})
    assert circles == []


@pytest.mark.quick
def test_nothing_inside_the_room_imports_from_the_host_side():
    """Issue 27 item 4: what runs inside the room is a package of its own (autograder/inside), bound
    whole into the room with the package root (room.RUNTIME); none of its modules imports anything
    of the grader outside it (anywhere in its code, a function's body included), so a module the
    child needs is always in the room and nothing of the host's side (suites, rubric, reports,
    solutions) can be pulled in."""
    from autograder.sandbox import room

    graph = imports()
    inside = {name for name in graph if name == "autograder.inside" or name.startswith("autograder.inside.")}
    assert {"autograder.inside.child", "autograder.inside.zygote", "autograder.inside.protocol",
            "autograder.inside.stand_in"} <= inside
    reaching_out = {name: sorted(m for m in graph[name] if m not in inside and m != "autograder") for name in inside}
    assert {name: found for name, found in reaching_out.items() if found} == {}
    assert room.RUNTIME == ("__init__.py", "inside")
    root = (PACKAGE / "__init__.py").read_text()
    assert not [n for n in ast.parse(root).body if isinstance(n, (ast.Import, ast.ImportFrom))
                and "autograder" in ast.dump(n)], "the package root imports the grader at module level"


@pytest.mark.quick
def test_the_suites_use_the_student_adapter_and_it_uses_no_suite():
    """Issue 38 item 5: student.py (the adapter every suite reaches student code through) imports
    nothing of autograder/suites, directly or through another module, so the dependency goes one way
    (suites -> student); the stand-ins it answers with and the grader's reading of the source live beside
    it (autograder/stand_ins.py, autograder/source_reading.py), in the grader's fingerprint with the suites."""
    graph = imports()
    suites = {name for name in graph if name.startswith("autograder.suites.")}
    assert "autograder.suites.test_causal" in suites and "autograder.stand_ins" in graph["autograder.student"]
    assert sorted(s for s in suites if reaches(graph, "autograder.student", s)) == []
    assert any("autograder.student" in graph[s] for s in suites)


# not quick: a new interpreter importing nbgrader (3 s of CPU), the one cost of this file (issue 38 item 6)
def test_nbgrader_s_commands_load_the_plugins_without_torch():
    """Every nbgrader command that reads the course's nbgrader_config.py imports the plugins
    (generate_assignment, release, collect, feedback, export...): torch (1.4 s of CPU) is loaded only
    by the one that grades, GradeInSandbox, when it grades."""
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("nbgrader") is None:
        pytest.skip("nbgrader is not installed (pip install '.[notebooks]'; Python 3.11+)")
    probe = ("import sys, autograder.deploy.nbgrader_plugins as p; "
             "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('autograder.grading')))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]", done.stdout


@pytest.mark.quick
def test_the_command_line_loads_torch_only_for_a_command_that_needs_it():
    """cli.main builds every command's parser by importing its module (commands/<name>.py): a module
    that imported torch at the top made every command pay for it (`notebooks --check`, `export`,
    `history`, `--help`: 2.7 s of CPU for milliseconds of work). Parsing any command's arguments
    loads no torch: a command that grades imports it when it runs."""
    import subprocess
    import sys

    from autograder import cli

    probe = ("import sys\nfrom autograder import cli\nfor name in cli.COMMANDS:\n"
             "    try:\n        cli.main([name, '--help'])\n    except SystemExit:\n        pass\n"
             "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('autograder.grading')))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout[-2000:]
    assert len(cli.COMMANDS) >= 12


@pytest.mark.quick
def test_a_batch_worker_imports_nothing_to_draw_for_a_record_without_pictures(monkeypatch):
    """Issue 38 item 7: a worker asks for matplotlib (plots.available imports it) only when the record it
    graded has a figure to draw (a failed weight check's); a record without one draws nothing and asks
    nothing (tests/test_visual_feedback.py: a record with one is drawn in the worker)."""
    from autograder import grading, reports
    from autograder.batch import workers
    from autograder.reports import plots

    asked = []
    monkeypatch.setattr(plots, "available", lambda: asked.append("matplotlib") or True)
    results = reports.broken_results(grading.load_rubric()[0], "nothing to grade")
    assert len(results["tests"]) > 10
    assert workers._pictures(results) == {} and asked == []


@pytest.mark.quick
def test_a_batch_forks_its_workers_after_matplotlib_is_loaded_and_no_more_than_it_grades(monkeypatch):
    """Issue 38 item 7: matplotlib's drawing modules are imported in the batch's process before its
    workers are forked (plots.warm_up, then batch.workers._pool), so each worker inherits them instead of
    importing them again (about 0.3 s of CPU a worker); and a class smaller than --jobs forks one
    worker per submission: a worker beyond the batch's doors (start_fork_servers makes min(jobs,
    submissions)) started a fork server of its own, a second import of torch and the emulated GPU."""
    from pathlib import Path

    from autograder.batch import workers
    from autograder.reports import plots

    order = []

    class Forked(Exception):
        pass

    def pool(jobs, engine, doors):
        order.append(f"{jobs} worker(s) forked")
        raise Forked

    monkeypatch.setattr(plots, "warm_up", lambda: order.append("matplotlib imported"))
    monkeypatch.setattr(workers, "_pool", pool)
    grading = workers.Grading(engine=None, book=None, out=Path("out"), grader="g", run=1, doors=[])
    for students, forked in ((1, "1 worker(s) forked"), (3, "2 worker(s) forked")):
        order.clear()
        todo = [(f"s{i}", Path(f"s{i}"), "fingerprint", "new") for i in range(students)]
        with pytest.raises(Forked):
            workers.grade_all(todo, 2, grading)
        assert order == ["matplotlib imported", forked]
