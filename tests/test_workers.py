"""The suite on several test workers (`pytest -n N --dist loadgroup`, .ci/run: -n 3): a worker takes a whole
test file, or a group of files that read one session fixture (tests/xdist_groups.py, issue 38 item 6).
Under pytest 9 xdist's own xdist_group marker was silently ignored and every module fixture was
made on both workers; these tests run a small suite on two workers and see where its fixtures were made."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from xdist_groups import TOGETHER, group_of

pytestmark = pytest.mark.quick

HERE = Path(__file__).resolve().parent
FILE = '''import os
import pytest


@pytest.fixture(scope="module")
def made():
    with open("made.txt", "a") as f:
        f.write("{name} " + os.environ["PYTEST_XDIST_WORKER"] + "\\n")


@pytest.mark.parametrize("i", range(6))
def test_x(made, i):
    pass
'''
CONFTEST = '''import pytest
import xdist_groups


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    return xdist_groups.scheduler(config, log, {"test_a.py": "ab", "test_b.py": "ab"})
'''


def test_each_file_is_one_workers_and_a_group_is_one_workers(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    for name in ("a", "b", "c", "d"):
        (tmp_path / f"test_{name}.py").write_text(FILE.replace("{name}", name))
    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-q", "-p", "no:cacheprovider"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(HERE)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "24 passed" in done.stdout
    made = [line.split() for line in (tmp_path / "made.txt").read_text().splitlines()]
    assert sorted(name for name, _ in made) == ["a", "b", "c", "d"]  # each module fixture made once
    worker = dict(made)
    assert worker["a"] == worker["b"]  # a group: one worker


def test_the_corpus_readers_are_one_unit_and_every_other_file_its_own():
    corpus = group_of("tests/test_suites.py::test_x[a-b]", TOGETHER)
    assert {group_of(f"tests/{name}::test_y", TOGETHER) for name in ("test_isolation.py", "test_efficiency.py",
                                                                      "test_fairness.py")} == {corpus}
    assert group_of("tests/test_batch.py::test_x", TOGETHER) == "test_batch.py"
    # the nbgrader release's readers (tests/nbgrader_release.py), one unit apart from the corpus's
    release = group_of("tests/test_nbgrader_roundtrip.py::test_x", TOGETHER)
    assert release == group_of("tests/test_nbgrader_validate.py::test_y", TOGETHER) != group_of("tests/test_suites.py::t", TOGETHER)


def test_every_unit_ranked_longest_first_is_a_unit():
    """xdist_groups.LONGEST_FIRST (tests/conftest.py orders by it) ranks units as group_of names them: a group,
    or a test file of no group (a file moved into a group, as test_efficiency was, would otherwise keep a rank
    that no test carries)."""
    from xdist_groups import LONGEST_FIRST

    files = {path.name for path in HERE.glob("test_*.py")}
    units = set(TOGETHER.values()) | (files - set(TOGETHER))
    assert set(LONGEST_FIRST) <= units, sorted(set(LONGEST_FIRST) - units)
