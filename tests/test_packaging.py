"""A `pip install .` that is not editable gets the whole grading package: every subpackage and
every file the grader reads beside its modules (templates, the selftest corpus, the book's
snapshot). Until 2026-11-28 pyproject.toml named the top package alone, so such an install held 17
of the package's 141 files and no subpackage: `ch03-autograder` failed at its first import.
"""
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.quick
def test_the_wheel_holds_every_tracked_file_of_the_package(tmp_path):
    """Built from a copy of the tracked files (a build in the checkout would reuse what an earlier
    build left in build/)."""
    listed = subprocess.run(["git", "ls-files", "autograder", "pyproject.toml"], cwd=ROOT, capture_output=True,
                            text=True)
    if listed.returncode != 0 or not listed.stdout.strip():
        pytest.skip("not a git checkout: the package's tracked files are unknown")
    tracked = [name for name in listed.stdout.split() if name.startswith("autograder/")]
    source = tmp_path / "source"
    for name in listed.stdout.split():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / name, source / name)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                            "-w", str(tmp_path / "wheel"), str(source)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    (wheel,) = (tmp_path / "wheel").glob("*.whl")
    packed = {name for name in zipfile.ZipFile(wheel).namelist() if name.startswith("autograder/")}
    assert sorted(set(tracked) - packed) == [], "tracked files missing from the wheel"
    assert "autograder/sandbox/client.py" in packed and "autograder/selftest/mutants.yml" in packed
    assert sorted(packed - set(tracked)) == [], "the wheel holds files git does not track"
