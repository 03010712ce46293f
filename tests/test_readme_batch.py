"""README.md's example batch summary (after "The batch ends with a summary") is what `batch` prints.

The class the example describes, built here: alice (the solutions), bob (attention_weights with the
softmax over dim 0: 95 on any draw of the hidden inputs, every check of that bug fails whatever
the numbers), carol.zip (the solutions, zipped), dave (an empty folder), erin (two folders of
modules, attempt1/ and final/) and frank.zip (a file that is not a zip). One run of the README's
command, `.venv/bin/python -m autograder batch submissions/ --out graded/ --jobs 2`, from the
class's folder; its summary must be the README's block, line for line (nothing in it varies:
the paths are the relative ones given on the command line). Run again (as cli.main in the test's
process, from the same folder: tests/in_process.py), it says what the README says it says, and grades nobody.
"""
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from in_process import run_plain

from autograder import PROJECT_ROOT, selftest

README = PROJECT_ROOT / "README.md"
COMMAND = ".venv/bin/python -m autograder batch submissions/ --out graded/ --jobs 2"


def readme_summary():
    """The ```text block that follows "The batch ends with a summary" in README.md."""
    readme = README.read_text(encoding="utf-8")
    assert f"```bash\n{COMMAND}\n```" in readme  # the command the example is the output of
    after = readme[readme.index("batch ends with a summary"):]
    block = re.search(r"```text\n(.*?)```", after, re.S)
    assert block, "no text block after 'The batch ends with a summary'"
    return block.group(1)


def the_readme_class(root: Path) -> Path:
    folder = root / "submissions"
    folder.mkdir()
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(selftest.SOLUTIONS, folder / "alice", ignore=ignore)
    shutil.copytree(selftest.SOLUTIONS, folder / "bob", ignore=ignore)
    simple = folder / "bob" / "simple_attention.py"
    code = simple.read_text(encoding="utf-8")
    assert code.count("return torch.softmax(scores, dim=-1)") == 1
    simple.write_text(code.replace("return torch.softmax(scores, dim=-1)", "return torch.softmax(scores, dim=0)"),
                      encoding="utf-8")
    with zipfile.ZipFile(folder / "carol.zip", "w") as archive:
        for module in sorted(selftest.SOLUTIONS.glob("*.py")):
            archive.write(module, module.name)
    (folder / "dave").mkdir()
    for attempt in ("attempt1", "final"):
        shutil.copytree(selftest.SOLUTIONS, folder / "erin" / attempt, ignore=ignore)
    (folder / "frank.zip").write_bytes(b"my homework, I promise\n")
    return folder


def test_the_readme_batch_summary_is_what_batch_prints(tmp_path, monkeypatch):
    the_readme_class(tmp_path)
    python = Path(sys.executable)
    run = subprocess.run([str(python), "-m", "autograder", *COMMAND.split()[3:]], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    printed = run.stdout[run.stdout.index("batch: "):]
    assert printed == readme_summary(), printed
    grades = (tmp_path / "graded" / "grades.csv").read_text(encoding="utf-8").splitlines()
    assert grades[1].startswith("alice,100,100,") and grades[2].startswith("bob,95,100,")
    # "Run again with nothing changed, it says `...`": the second line, nothing graded again
    again = re.search(r"Run again with nothing changed, it says `([^`]*)`", README.read_text(encoding="utf-8"))
    # the rerun as cli.main in this process, from the class's folder (tests/in_process.py, issue 38 item 6: the
    # first run above is the README's command line; what the rerun prints is read, not its interpreter's start)
    monkeypatch.chdir(tmp_path)
    status, stdout, stderr = run_plain(COMMAND.split()[3:])
    rerun = subprocess.CompletedProcess(COMMAND.split(), status, stdout, stderr)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert again and rerun.stdout.splitlines()[1] == "  " + " ".join(again.group(1).split()), rerun.stdout
    assert rerun.stdout.replace(rerun.stdout.splitlines()[1], "  graded now: 6; up to date: 0", 1) == printed
