"""Issue 27: one chapter manifest (chapter.yml, read by autograder/chapter.py), one engine
(autograder/engine.py) that every entry point uses, and settings read from the environment in one
module (autograder/settings.py), passed explicitly from there."""
import ast
import json
from pathlib import Path

import pytest

from autograder import PARTS, chapter, rubric, settings
from autograder.authoring import stubs

pytestmark = pytest.mark.quick  # the whole file is in the quick subset

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "autograder"


def code_strings(path):
    """(line, text) of every string constant in the module's code, docstrings left out."""
    tree = ast.parse(path.read_text(), str(path))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def grader_modules():
    return [p for p in sorted(PACKAGE.rglob("*.py")) if "notebook_templates" not in p.parts]


def calls(path, names):
    """["module.py:line name"] of the calls of the functions or classes named (an engine's own
    methods, engine.load_rubric(), are not counted)."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Attribute)
                                               and getattr(node.func.value, "id", "") in ("engine", "self")):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if name in names:
                found.append(f"{path.relative_to(PACKAGE).as_posix()}:{node.lineno} {name}")
    return found


# ---------------------------------------------------------------- the manifest

def test_the_manifest_names_the_parts_in_the_rubrics_order():
    manifest = chapter.current()
    assert manifest.id == "ch03" and manifest.solutions == ROOT / "solutions" / "ch03"
    assert manifest.rubric == ROOT / "grading.yml"
    assert manifest.parts == tuple(rubric.load(manifest.rubric).parts)
    assert PARTS == manifest.parts and stubs.MODULES == list(manifest.parts)
    for name in chapter.FOLDERS[:3]:  # solutions, assignments, source: in the repository
        assert manifest.folder(name).is_dir(), name


def test_the_released_copy_is_the_manifests():
    """The public tests read the chapter's parts from the copy the stubs generator writes."""
    copy = chapter.current().assignments / chapter.RELEASED_COPY
    assert json.loads(copy.read_text()) == chapter.current().released_copy()
    assert json.loads(copy.read_text())["parts"] == list(PARTS)


@pytest.mark.parametrize("text, says", [
    ("id: x\nparts: [a]\n", "needs 'id', 'parts' and 'folders'"),
    ("id: x\nparts: [a, a]\nfolders: {}\n", "a part is named twice"),
    ("id: x\nparts: [not a name]\nfolders: {}\n", "'parts' must be a list of module names"),
    ("id: x\nparts: [a]\nfolders: {solutions: s}\n", "'folders' must name exactly"),
    ("id: [\n", "cannot read the chapter manifest"),
])
def test_a_malformed_manifest_names_the_file_and_the_problem(tmp_path, text, says):
    path = tmp_path / "chapter.yml"
    path.write_text(text)
    with pytest.raises(chapter.ManifestError) as caught:
        chapter.load(path)
    assert str(caught.value).startswith(f"{path}: ") and says in str(caught.value)


def test_another_manifest_moves_every_folder(tmp_path):
    (tmp_path / "chapter.yml").write_text(
        "id: ch04\ntitle: t\nparts: [gpt]\nrubric: rubric.yml\nfolders: {solutions: sol/ch04, assignments: a, "
        "source: s, release: r, notebook_templates: t}\n")
    other = chapter.load(tmp_path / "chapter.yml")
    assert (other.id, other.parts, other.solutions, other.rubric) == ("ch04", ("gpt",), tmp_path / "sol" / "ch04",
                                                                      tmp_path / "rubric.yml")
    assert other.book_examples == tmp_path / "a" / "tests" / "book_examples.json"


def test_no_grader_module_names_the_chapters_folders_or_rubric_itself():
    manifest = chapter.current()
    own = [manifest.id, manifest.rubric_name] + list(manifest.folders.values())
    found = [f"{path.relative_to(PACKAGE).as_posix()}:{line} {text!r}"
             for path in grader_modules() if path.name != "chapter.py"
             for line, text in code_strings(path) if text in own or any(f in text for f in own[2:])]
    assert found == []


# ---------------------------------------------------------------- settings

def test_the_environment_is_read_in_the_settings_module_only():
    """The grader's CH03_* variables are named in settings.py alone (the cgroup list is a variable of
    the shell that starts the fork server, written for it, never read by the grader)."""
    found = [f"{path.relative_to(PACKAGE).as_posix()}:{line} {text}"
             for path in grader_modules() if path.name != "settings.py"
             for line, text in code_strings(path) if "CH03_" in text and "CH03_CGROUP_PROCS" not in text]
    assert found == []


def test_settings_from_the_environment_and_the_flags():
    given = settings.from_environment({"CH03_DEVICE": "cuda", "CH03_UNSAFE_NO_SANDBOX": "1", "CH03_SEED": "42",
                                       "CH03_ENVCHECK_CACHE": "/c", "CH03_CONTAINER": "0"})
    assert given.sandbox.device == "cuda" and given.sandbox.unsafe and not given.sandbox.container
    assert given.seed == 42 and given.envcheck_cache == Path("/c")
    empty = settings.from_environment({})
    assert empty == settings.Settings() and empty.seed is None
    assert empty.with_secret().seed is not None and given.with_secret().seed == 42
    assert empty.with_sandbox(container=True).sandbox == settings.SandboxSettings(container=True)


def test_the_command_line_passes_its_flags_as_settings_and_leaves_the_environment_alone(monkeypatch):
    import argparse
    import os

    from autograder import cli

    monkeypatch.delenv("CH03_SEED", raising=False)
    before = dict(os.environ)
    args = argparse.Namespace(unsafe_no_sandbox=True, container=True, seed=7, device=None)
    made = cli.settings_from(args)
    assert made.seed == 7 and made.sandbox.unsafe and made.sandbox.container and made.sandbox.device == "cpu"
    drawn = cli.settings_from(argparse.Namespace(unsafe_no_sandbox=False, container=False, seed=None, device="cpu"))
    assert drawn.seed is not None and not drawn.sandbox.unsafe
    assert dict(os.environ) == before


# ---------------------------------------------------------------- the engine

def test_only_the_engine_assembles_the_grader():
    """The sandbox, the rubric and the environment check are built in engine.py; the entry points
    (commands, batch, selftest, nbgrader's preprocessor) call the engine. A batch's fork server and
    its doors (batch/workers.start_fork_servers) are the one other place a Sandbox is made."""
    made = [c for path in grader_modules() if path.name != "engine.py"
            for c in calls(path, {"Sandbox", "ensure", "load_rubric"})]
    # batch/workers.start_fork_servers: the batch's server; Sandbox.attach: a door to it
    assert sorted((m.split(":")[0], m.split()[-1]) for m in made) == [("batch/workers.py", "Sandbox"),
                                                                      ("sandbox/client.py", "Sandbox")], made


def test_nothing_is_added_to_the_sandbox_from_outside():
    found = []
    for path in grader_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Assign):
                found += [f"{path.name}:{node.lineno}" for t in node.targets
                          if isinstance(t, ast.Attribute) and t.attr == "environment_check"
                          and not (isinstance(t.value, ast.Name) and t.value.id in ("self", "worker"))]
    assert found == []


def test_the_engine_grades_with_its_settings_and_keeps_the_environment_check(monkeypatch, tmp_path):
    """Engine.grade hands the grade its secret and the environment check's record (no attribute on
    the sandbox); a worker's engine carries both over."""
    from autograder import engine as engine_mod
    from autograder import grading

    seen = {}

    def grade_submission(path, rubric, suites, sandbox, **kwargs):
        seen.update(kwargs, path=path, sandbox=sandbox)
        return "graded"

    monkeypatch.setattr(grading, "grade_submission", grade_submission)
    engine = engine_mod.Engine(settings.Settings(seed=99))
    engine.rubric, engine.suites, engine.environment_check = "rubric", {}, {"passed": True}
    sandbox = object()
    engine.start_sandbox(sandbox=sandbox)
    assert engine.grade(tmp_path) == "graded"
    assert seen["seed"] == 99 and seen["environment_check"] == {"passed": True} and seen["sandbox"] is sandbox
    engine.close()  # a sandbox it did not start is its owner's to close
    assert engine.sandbox is None and not hasattr(sandbox, "environment_check")


@pytest.mark.quick
def test_the_batch_and_the_reports_import_no_torch():
    """Expected: importing the batch, the reports and the grade records loads no torch (nor the runner): a
    batch starts its fork server before this process imports torch, so the two imports overlap
    (batch/workers.start_fork_servers), and a refusal comes before either (tests/test_cannot_isolate.py)."""
    import subprocess
    import sys

    probe = ("import sys, autograder.batch, autograder.reports, autograder.scores, autograder.commands.batch; "
             "print(sorted(m for m in ('torch', 'autograder.runner', 'autograder.grading') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.split("\n")[-2] == "[]", (done.stdout, done.stderr[-2000:])
