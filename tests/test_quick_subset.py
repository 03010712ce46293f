"""The quick subset (`pytest -m quick`, tests/quick_subset.py) stays honest: every test file is
listed (a new file must say what of it is quick), and every test it names still exists."""
import ast
from pathlib import Path

from quick_subset import QUICK

HERE = Path(__file__).resolve().parent


def test_every_test_file_is_listed():
    files = {p.name for p in HERE.glob("test_*.py")}
    assert sorted(files - set(QUICK)) == [] and sorted(set(QUICK) - files) == []


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
    assert left_out == ["test_deploy_installs.py", "test_graded_under_load.py", "test_nbgrader_commands.py", "test_nbgrader_roundtrip.py",
                        "test_nbgrader_validate.py", "test_notebook_outputs.py"]
