"""The linter and the type checker as the README's test command (and so .ci/run) runs them: ruff
with the project's configuration ([tool.ruff] in pyproject.toml) finds nothing, mypy finds nothing
in the package ([tool.mypy]: every module, function bodies included; the core strict), and every public
function and method of the strict core is annotated (its parameters and its return)."""
import ast
import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest
from toml_reader import tomllib

ROOT = Path(__file__).resolve().parents[1]


def run_tool(module, *args):
    """`python -m module args` from the project root -> the finished process; skipped when the tool
    is not installed (scripts/setup.sh installs both with the dev extra)."""
    found = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True)
    if found.returncode != 0:
        pytest.skip(f"{module} is not installed (pip install -e '.[dev]'; scripts/setup.sh installs it)")
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)


def mypy_cache():
    """mypy's cache folder for the test: one outside the project, kept between runs and clones
    (~/.cache/ch03-autograder-tests/mypy, as tests/axe.py keeps axe-core), else None (mypy's own
    .mypy_cache in the project). mypy takes a module's analysis from its cache only when the module's
    source is unchanged (same size and content hash) under the same mypy version and options, and
    analyses every other module again, so the verdict is the one a cold run gives; torch's modules, most
    of a cold run's work, are analysed once per torch version (issue 38 item 6, 2026-11-28: 21.3 s of
    CPU cold, 0.5 s warm; 0.75 s from another copy of the project with another environment's torch,
    where an error put into chapter.py was reported as without the cache)."""
    folder = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ch03-autograder-tests" / "mypy"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return folder if os.access(folder, os.W_OK | os.X_OK) else None


def core_files():
    """The modules of the core: [[tool.mypy.overrides]] that ask for annotations (the strict core with
    disallow_untyped_defs, the annotated modules with disallow_incomplete_defs)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    modules = [name for override in config["tool"]["mypy"].get("overrides", [])
               if override.get("disallow_untyped_defs") or override.get("disallow_incomplete_defs")
               for name in override["module"]]
    paths = [ROOT / name.replace(".", "/") for name in modules]  # a package (runner, batch): its __init__.py
    return [path / "__init__.py" if path.is_dir() else path.with_suffix(".py") for path in paths]


@pytest.mark.quick
def test_ruff_finds_nothing():
    done = run_tool("ruff", "check", "--no-cache", ".")
    assert done.returncode == 0, f"ruff check:\n{done.stdout}{done.stderr}"


def test_the_strict_core_is_listed():
    names = {path.relative_to(ROOT).as_posix() for path in core_files()}
    assert {"autograder/grading.py", "autograder/engine.py", "autograder/settings.py", "autograder/runner/turns.py",
            "autograder/sandbox/client.py", "autograder/inside/protocol.py"} <= names
    assert all(path.is_file() for path in core_files()), names


def test_mypy_finds_nothing_in_the_package():
    cache = mypy_cache()
    if cache is None:
        done = run_tool("mypy")
    else:
        # one mypy at a time on the shared cache (its SQLite files: a second writer waits 5 s at most,
        # then fails), whichever checkout's test runs it
        with open(cache / "test_lint.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            done = run_tool("mypy", "--cache-dir", str(cache))
    assert done.returncode == 0, f"mypy:\n{done.stdout}{done.stderr}"
    assert "Success: no issues found" in done.stdout


def unannotated(path):
    """["name (line)"] of the public functions and methods of public classes in the module at path
    with a parameter (other than self/cls) or the return left unannotated."""
    tree = ast.parse(path.read_text(), str(path))
    functions = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for cls in (node for node in tree.body if isinstance(node, ast.ClassDef) and not node.name.startswith("_")):
        functions += [node for node in cls.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                      and (node.name == "__init__" or not node.name.startswith("_"))]
    found = []
    for fn in functions:
        if fn.name.startswith("_") and fn.name != "__init__":
            continue
        args = fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
        params = [a for a in args if a.arg not in ("self", "cls")] + [a for a in (fn.args.vararg, fn.args.kwarg) if a]
        if any(a.annotation is None for a in params) or fn.returns is None:
            found.append(f"{fn.name} (line {fn.lineno})")
    return found


@pytest.mark.quick
def test_every_public_function_of_the_core_is_annotated():
    missing = {path.relative_to(ROOT).as_posix(): unannotated(path) for path in core_files()}
    assert {name: found for name, found in missing.items() if found} == {}


@pytest.mark.quick
def test_the_annotation_check_sees_a_missing_annotation(tmp_path):
    """The check above can fail: a public function without a return annotation, a method without
    a parameter annotation, and nothing said of private helpers."""
    module = tmp_path / "m.py"
    module.write_text("def ok(a: int) -> int:\n    return a\n\ndef bare(a: int):\n    return a\n\n"
                      "def _private(a):\n    return a\n\nclass C:\n    def m(self, x) -> None:\n        pass\n")
    assert unannotated(module) == ["bare (line 4)", "m (line 11)"]
