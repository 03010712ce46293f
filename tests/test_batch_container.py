"""Issue 37.4: `batch --container` is refused, with the reason, before anything is made.

One process grading a class in container mode would leave the class folder, the output folder and
the gradebook (with the run's secret) open to every submission's uid (gradescope closes its own folder;
a batch's folders are the instructor's). So batch, and nbgrader's autograde that grades many notebooks
in one process, refuse container mode, however it is asked for (--container or CH03_CONTAINER=1), and
say what to do instead; nothing is created and nobody is graded."""
import subprocess
import sys

import pytest

from autograder import batch
from autograder.sandbox import container
from autograder.sandbox.client import SandboxUnavailable
from autograder.settings import from_environment


def _assert_refusal(said, what):
    assert f"{what} grades many submissions in one process" in said, said
    assert "gradescope --run --container" in said and "gradebook" in said


def test_batch_container_is_refused_on_the_command_line(tmp_path):
    (tmp_path / "class" / "ann").mkdir(parents=True)
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "autograder", "batch", str(tmp_path / "class"), "--out", str(out),
                           "--container"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    _assert_refusal(done.stderr, "batch")
    assert not out.exists()  # refused before any folder, gradebook or process


@pytest.mark.quick
def test_container_mode_from_the_environment_is_refused_by_run_batch(tmp_path, monkeypatch):
    monkeypatch.setenv("CH03_CONTAINER", "1")
    with pytest.raises(SandboxUnavailable) as refused:
        batch.run_batch(tmp_path, tmp_path / "out")
    _assert_refusal(str(refused.value), "batch")
    assert not (tmp_path / "out").exists()


# not quick: importing nbgrader's plugins costs 3 s of CPU (issue 38 item 6); run_batch's refusal above is the quick one
def test_container_mode_from_the_environment_is_refused_by_nbgrader_s_autograde(monkeypatch):
    monkeypatch.setenv("CH03_CONTAINER", "1")
    pytest.importorskip("nbgrader", reason="nbgrader is not installed (pip install '.[notebooks]'; Python 3.11+)")
    from autograder.deploy import nbgrader_plugins  # (here: nbformat's import costs every worker seconds at collection)

    with pytest.raises(SandboxUnavailable) as refused:
        nbgrader_plugins.shared_engine([], settings=from_environment())
    _assert_refusal(str(refused.value), "nbgrader's autograde")
    assert nbgrader_plugins._engine is None


@pytest.mark.quick
def test_without_container_mode_nothing_is_refused():
    assert container.refuse_many(False, "batch") == ""
