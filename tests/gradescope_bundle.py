"""The Gradescope bundle as the tests use it: built by the grader's own command, then unpacked with the
file modes unzip would give (run_autograder and setup.sh stay executable)."""
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build(where, into):
    """Build where/autograder.zip and unpack it into the folder `into` -> the archive's path."""
    archive = Path(where) / "autograder.zip"
    done = subprocess.run([sys.executable, "-m", "autograder", "gradescope", "--out", str(archive)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(archive) as z:
        for info in z.infolist():
            target = Path(into) / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(z.read(info))
            target.chmod((info.external_attr >> 16) & 0o777)
    return archive
