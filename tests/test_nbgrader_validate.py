"""Issue 12 item 5: nbgrader's Validate fails on the untouched released notebooks and passes once they are solved.

The released notebooks are made by the real `nbgrader generate_assignment` in a temporary course
(the project's nbgrader_config.py, run from the project root; made once per session and copied,
tests/nbgrader_release.py); `nbgrader validate` then executes them in a kernel. A graded cell reruns
its module's test cells, so on the stubs every graded cell fails with "not implemented yet"; with the
solutions typed into the released notebooks (hidden tests already removed) every notebook passes;
one bug fails only the notebook that holds it.
All three folders are validated in one nbgrader run (one start-up instead of three). Of the buggy folder
only the notebook holding the bug is validated (issue 38 item 6): the folder's other notebooks are the
solved folder's byte for byte, beside the same support files, and Validate runs each notebook in a
kernel of its own, so their verdicts are the solved ones (the test asserts the bytes are the same).
About 40 s: nbgrader and kernel start-up (7 kernels).
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from nbgrader_release import copy_course
from notebook_cases import BUGS, fill_notebooks, module_texts
from optional import require

require("nbgrader", reason="nbgrader is not installed (pip install '.[notebooks]', nbgrader==0.9.6)")

pytestmark = pytest.mark.nbgrader

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "source" / "ch03"
# the notebooks with graded cells (the speed lab has none: Validate would only time it)
NOTEBOOKS = sorted(p.name for p in SOURCE.glob("*.ipynb")
                   if any(c["metadata"].get("nbgrader", {}).get("grade") for c in json.loads(p.read_text())["cells"]))


def environment(base):
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])  # nbgrader runs alembic
    for name in ("CONFIG", "DATA", "RUNTIME"):  # no user-level Jupyter or nbgrader configuration
        folder = base / f"jupyter-{name.lower()}"
        folder.mkdir(exist_ok=True)
        env[f"JUPYTER_{name}_DIR"] = str(folder)
    return env


def nbgrader(base, *args):
    """Run nbgrader from the project root; its log and its verdicts interleaved as printed."""
    env = dict(environment(base), PYTHONUNBUFFERED="1")
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    return done.stdout


@pytest.fixture(scope="module")
def released(tmp_path_factory, nbgrader_release):
    """A copy of the session's course released by `nbgrader generate_assignment ch03 --force`
    (tests/nbgrader_release.py: made once for this file and tests/test_nbgrader_roundtrip.py)."""
    base = tmp_path_factory.mktemp("validate")
    course = copy_course(nbgrader_release, base / "course")
    output = nbgrader_release.output
    folder = course / "release" / "ch03"
    released_files = sorted(p.name for p in folder.iterdir())
    expected = sorted(p.name for p in SOURCE.iterdir() if p.suffix in (".ipynb", ".py"))  # the speed lab, its bench_mha.py
    assert released_files == expected, output
    return base, folder


def validate(base, folders):
    """{folder name: {notebook name: what `nbgrader validate` printed for it}}, of folders ({folder:
    the names of its notebooks to validate}, distinct folder names) in one run: one start-up of
    nbgrader, each notebook in a kernel of its own."""
    output = nbgrader(base, "validate", *(str(folder / name) for folder, names in folders.items() for name in names))
    parts = re.split(r"\[ValidateApp \| INFO\] Validating '([^']+)'", output)
    found: dict[str, dict[str, str]] = {folder.name: {} for folder in folders}
    for path, verdict in zip(parts[1::2], parts[2::2], strict=True):
        found[Path(path).parent.name][Path(path).name] = verdict
    return found


@pytest.fixture(scope="module")
def verdicts(released, tmp_path_factory):
    """What `nbgrader validate` says of the released notebooks untouched, solved, and solved with one bug
    (causal_diagonal): {"untouched" | "solved" | "buggy": {notebook name: verdict}}, from one run; of
    the buggy folder, the notebook that holds the bug (BUGGY), its other files kept for the test to
    compare with the solved folder's ("folders": (solved, buggy))."""
    base, folder = released
    where = tmp_path_factory.mktemp("validated")
    solved = fill_notebooks(module_texts(), where / "solved", folder)
    buggy = fill_notebooks(module_texts(bugs=["causal_diagonal"]), where / "buggy", folder)
    found = validate(base, {folder: NOTEBOOKS, solved: NOTEBOOKS, buggy: BUGGY})
    return {"untouched": found[folder.name], "solved": found["solved"], "buggy": found["buggy"],
            "folders": (solved, buggy)}


# the notebooks that hold the module with the bug causal_diagonal (the others do not import it)
BUGGY = [name for name in NOTEBOOKS if BUGS["causal_diagonal"][0] in name]


def graded_cells(name):
    cells = json.loads((SOURCE / name).read_text())["cells"]
    return sum(1 for cell in cells if cell["metadata"].get("nbgrader", {}).get("grade"))


def test_untouched_released_notebooks_fail_validation(verdicts):
    verdicts = verdicts["untouched"]
    assert sorted(verdicts) == NOTEBOOKS, verdicts
    for name, verdict in verdicts.items():
        assert "Success!" not in verdict, f"{name}: {verdict}"
        assert f"VALIDATION FAILED ON {graded_cells(name)} CELL(S)!" in verdict, f"{name}: {verdict}"
        assert "NotImplementedError" in verdict, f"{name}: {verdict}"


def test_solved_released_notebooks_pass_and_a_bug_fails_its_notebook_only(verdicts):
    solved, buggy = verdicts["solved"], verdicts["buggy"]
    assert sorted(solved) == NOTEBOOKS, solved
    for name, verdict in solved.items():
        assert "Success! Your notebook passes all the tests." in verdict, f"{name}: {verdict}"
    assert BUGGY and sorted(buggy) == BUGGY, buggy
    for name, verdict in buggy.items():
        assert "Success!" not in verdict and "VALIDATION FAILED ON " in verdict, f"{name}: {verdict}"
    # the buggy folder's other notebooks pass: each is the solved folder's notebook byte for byte, beside
    # the same support files (Validate runs each notebook in a kernel of its own), which passed above
    solved_folder, buggy_folder = verdicts["folders"]
    others = sorted(p.name for p in buggy_folder.iterdir() if p.name not in BUGGY)
    assert others == sorted(p.name for p in solved_folder.iterdir() if p.name not in BUGGY)
    assert set(NOTEBOOKS) - set(BUGGY) <= set(others)
    for name in others:
        assert (buggy_folder / name).read_bytes() == (solved_folder / name).read_bytes(), name
    for name in BUGGY:
        assert (buggy_folder / name).read_bytes() != (solved_folder / name).read_bytes(), name
