"""The Gradescope bundle as the tests use it: built by the grader's own command, then unpacked with the
file modes unzip would give (run_autograder and setup.sh stay executable)."""
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from in_process import run_plain

ROOT = Path(__file__).resolve().parents[1]


def build(where, into, options=()):
    """Build where/autograder.zip (options: more arguments of `gradescope --out`, e.g. --rubric FILE) and
    unpack it into the folder `into` -> the archive's path."""
    archive = Path(where) / "autograder.zip"
    # cli.main in this process (tests/in_process.py): `gradescope --out` only writes files
    status, _, stderr = run_plain(["gradescope", "--out", archive, *options])
    assert status == 0, stderr
    with zipfile.ZipFile(archive) as z:
        for info in z.infolist():
            target = Path(into) / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(z.read(info))
            target.chmod((info.external_attr >> 16) & 0o777)
    return archive


def run(unpacked, tmp_path, files, before=None):
    """A fresh /autograder-like folder: source/ (the unpacked bundle), submission/ (files), results/;
    before(root) may add Gradescope's own files (submission_metadata.json); then run_autograder runs
    -> (the finished process, the root, results.json's content)."""
    root = tmp_path / "autograder"
    shutil.copytree(unpacked, root / "source")
    (root / "submission").mkdir(parents=True)
    for name, data in files.items():
        (root / "submission" / name).write_text(data)
    (root / "results").mkdir()
    if before is not None:
        before(root)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AUTOGRADER_ROOT", "AUTOGRADER_PYTHON")}
    env.update(AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable)
    done = subprocess.run([str(root / "source" / "run_autograder")], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600)
    results_file = root / "results" / "results.json"
    assert results_file.is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    return done, root, json.loads(results_file.read_text())
