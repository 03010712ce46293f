"""Grading a copy of the solutions with edits written in a test, part by part (tests of issue 21)."""
import shutil
import types

from autograder import runner, selftest


def submission(tmp_path, *edits):
    """The solutions with each (module, find, replace) applied to every occurrence of find."""
    folder = tmp_path / "submission"
    # the modules alone: not a __pycache__ the grader's own imports of the solutions may have left
    shutil.copytree(selftest.SOLUTIONS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    for module, find, replace in edits:
        path = folder / f"{module}.py"
        text = path.read_text(encoding="utf-8")
        assert find in text, (module, find)
        path.write_text(text.replace(find, replace), encoding="utf-8")
    return folder


def grade(engine, folder, parts):
    """Graded by the engine (tests/conftest.py's session engine: Engine.grade), no pictures drawn."""
    return engine.grade(folder, parts=parts, figures=False)


def scores(result):
    return {part: p.score for part, p in result.parts.items()}


def failed(result, part):
    return {c.name: c.message for c in result.checks if not c.passed and c.part == part}


def run_one(engine, tmp_path, source, timeout=2, memory_mb=512):
    """One check calling task.work() in a fresh child whose part may use `timeout` s of CPU time and
    `memory_mb` of memory: the part's run (runner.PartRun), judged by the caller."""
    sandbox = engine.sandbox
    folder = tmp_path / "task"
    folder.mkdir()
    (folder / "task.py").write_text(source, encoding="utf-8")

    def test_work(student):
        assert student.module("task").work() == "done"

    limits = types.SimpleNamespace(timeout=timeout, memory_mb=memory_mb)
    return runner.run_part(sandbox, str(folder), "task", [("work", test_work)], limits, runner.default_fixtures())
