"""Container mode (autograder/sandbox/container.py), tested under a Docker-like restriction built
here (tests/docker_like.py): root without CAP_SYS_ADMIN and Docker's other dropped capabilities,
and a seccomp filter refusing unshare, setns, mount, pivot_root and clone/clone3 with namespace
flags. The Gradescope bundle runs there as Gradescope runs it (run_autograder, which passes
--container): the reference gets full marks (graded first, by the environment check, in the same
container mode), results.json lists the walls that stood and says the container is relied on for
the rest, and a submission that reaches for the hidden suites, the rubric, the reference solutions,
results.json or the grader's memory reaches nothing. Without --container the grader refuses there
as before, naming what the kernel refuses."""
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import bundle_attack
import leftovers
import pytest
from rubric_points import PART, TOTAL

from autograder.sandbox import container

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions" / "ch03"
DOCKER_LIKE = [sys.executable, str(Path(__file__).with_name("docker_like.py"))]

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the Docker-like restriction is built as root")

ATTEMPTS = '''
attempt("read_suite", lambda: open(ROOT + "/source/autograder/suites/test_causal.py").read())
attempt("read_rubric", lambda: open(ROOT + "/source/grading.yml").read())
attempt("read_reference", lambda: open(ROOT + "/source/solutions/ch03/causal.py").read())
attempt("write_results", lambda: overwrite(ROOT + "/results/results.json"))
attempt("grader_memory", lambda: open("/proc/%d/mem" % os.getppid(), "rb").read(1))
attempt("grader_environment", lambda: open("/proc/%d/environ" % os.getppid(), "rb").read())
def unshare():
    import ctypes

    if ctypes.CDLL(None, use_errno=True).unshare(0x00020000) != 0:  # a new mount namespace
        raise PermissionError(ctypes.get_errno(), "unshare")


attempt("new_namespace", unshare)


def native_from_tmp():
    """An extension module written out where the uid may write (a copy of one of Python's own) and imported."""
    import importlib.util
    import shutil
    import tempfile

    import _uuid
    copy = os.path.join(tempfile.mkdtemp(), os.path.basename(_uuid.__file__))
    shutil.copy(_uuid.__file__, copy)
    try:
        importlib.util.module_from_spec(importlib.util.spec_from_file_location("_uuid", copy))
    except ImportError as e:
        if "failed to map segment" in str(e):
            raise PermissionError(str(e)) from None
        raise


attempt("native_from_tmp", native_from_tmp)
'''


@pytest.fixture(scope="module")
def source(built_bundle):
    """The bundle, unpacked as Gradescope does (its folder is made root-only by run_autograder): the
    session's (tests/conftest.py built_bundle), copied by each run."""
    return built_bundle[1]


def run_restricted(source, tmp_path, files, metadata=None, env_extra=None):
    root = tmp_path / "autograder"
    shutil.copytree(source, root / "source", symlinks=True)
    (root / "submission").mkdir(parents=True)
    for name, data in files.items():
        (root / "submission" / name).write_text(data)
    (root / "results").mkdir()
    if metadata is not None:  # as Gradescope writes it: beside submission/, readable by all
        (root / "submission_metadata.json").write_text(json.dumps(metadata))
        (root / "submission_metadata.json").chmod(0o644)
        root.chmod(0o755)
    # as Gradescope starts it: none of this test process's settings (nor the torch cache folder its
    # own `import torch._dynamo` chose, which would hide where the grader's torch puts one)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHONPATH", "AUTOGRADER_", "CH03_", "TORCHINDUCTOR_"))}
    env.update(AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable,
               CH03_ENVCHECK_CACHE=str(tmp_path / "envcheck-cache"), **(env_extra or {}))
    done = subprocess.run(DOCKER_LIKE + [str(root / "source" / "run_autograder")], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600)
    results = root / "results" / "results.json"
    assert results.is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    return done, root, json.loads(results.read_text())


def test_the_restriction_is_real():
    done = subprocess.run(DOCKER_LIKE + ["bash", "-c", "grep CapEff /proc/self/status; unshare -m true"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "Operation not permitted" in done.stderr
    effective = int(done.stdout.split()[1], 16)
    assert not effective & (1 << 21)  # CAP_SYS_ADMIN


def test_the_reference_passes_and_a_submission_reaches_nothing_of_the_grader(attacked):
    done, root, results = attacked.done, attacked.root, attacked.results
    # the reference, graded first in the same container mode (the environment check), got full marks
    check = results["extra_data"]["environment_check"]
    assert check["passed"] and check["reference_score"] == TOTAL and not check["cached"], done.stdout[-3000:]
    walls = results["extra_data"]["protections"]
    assert walls[0] == container.PROTECTION and check["walls"][0] == container.PROTECTION
    for wall in ("no capabilities", "no new privileges", "seccomp system-call allow-list",
                 "no library loaded after the fork server's (no executable mapping of a file)"):
        assert wall in walls
    assert any(w.endswith("(this submission's own)") for w in walls)
    assert not any("namespaces" in w and "refused" not in w for w in walls)  # no wall claimed that did not stand
    # and the attack reached nothing
    assert "OWNED" not in json.dumps(results) and results["score"] < 100
    assert results["extra_data"]["parts"]["causal"]["score"] == PART["causal"]  # the other parts are graded as ever
    attempts = attempts_of(results, "read_suite")
    assert len(attempts) == 9, f"the attacking module was never called, or not every attempt ran: {attempts}"
    assert int(attempts.pop("uid")) > 0
    # no noexec /tmp in container mode: its filter maps no file executable after the fork server's (syscalls,
    # file_exec=False), so an extension module written out cannot be loaded; an installed package's native code, loaded
    # by the fork server (zygote.preload_native), still imports. Before, native_from_tmp loaded the copy (DONE)
    assert attempts["native_from_tmp"] == "PermissionError", attempts
    assert attempts_of(results, "read_metadata").get("installed_native") == "DONE"
    assert all(outcome in ("PermissionError", "FileNotFoundError") for outcome in attempts.values()), attempts
    assert sorted(os.listdir(root / "results")) == ["results.json"]


@pytest.mark.quick
def test_without_the_flag_the_grader_refuses_and_names_the_refusal(tmp_path):
    done = subprocess.run(DOCKER_LIKE + [sys.executable, "-m", "autograder", "grade", str(SOLUTIONS)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "total" not in done.stdout
    assert "the kernel refuses new namespaces to root" in done.stderr and "--container" in done.stderr


def test_with_the_flag_but_an_open_grader_folder_it_refuses(source):
    base = Path(tempfile.mkdtemp(prefix="ch03-open-grader-"))  # /tmp is open: a careless copy of the grader
    try:
        base.chmod(0o755)
        folder = base / "grader"
        # the grader as `gradescope --out DIR` writes it: the bundle, unpacked (test_gradescope's
        # test_the_folder_form_matches_the_zip), copied from the module's
        shutil.copytree(source, folder, symlinks=True)
        command = [sys.executable, "-m", "autograder", "grade", str(SOLUTIONS), "--container"]
        done = subprocess.run(DOCKER_LIKE + command, cwd=folder, env={**os.environ, "PYTHONPATH": str(folder)},
                              capture_output=True, text=True, timeout=300)
    finally:
        shutil.rmtree(base)
    assert done.returncode == 2 and f"chmod 700 {folder}" in done.stderr, done.stderr[-2000:]


LOOK_AROUND = '''
import glob


def metadata():
    open(os.path.dirname(ROOT.rstrip("/")) + "/autograder/submission_metadata.json").read()


def reference_copy():
    """The environment check's copy of the reference solutions, in any session folder still there."""
    for path in glob.glob("{tmp}/ch03-session-*/submission/causal.py"):
        try:
            if {reference!r} in open(path).read():
                return
        except OSError:
            pass
    raise FileNotFoundError()




def torch_cache():
    """The fork server's torch cache (its warm-up imports torch._dynamo, which makes the folder and
    keeps its path in DynamoCache: torch 2.13's attribute): the grader's own folder in the run's
    TMPDIR (scratch.torch_cache), not torchinductor_sandbox in the shared /tmp."""
    import sys
    prefix = getattr(getattr(sys.modules.get("torch._dynamo.package"), "DynamoCache", None), "_path_prefix", "")
    if not prefix.startswith("{tmp}/torch-cache-"):
        raise LookupError(prefix)


def installed_native():
    import csv  # noqa: F401 (the standard library's native code and an installed package's: the fork server
    import matplotlib.pyplot  # noqa: F401 loaded them, zygote.preload_native)
    import sqlite3  # noqa: F401 (a module torch's imports never load: where the standard library is closed to
    # the uid, a pyenv under /root, the fork server imported it, zygote.preload_stdlib; ModuleNotFoundError before)
    import numpy  # a learner's np.random and np.linalg (numpy 2 loads both on first use)
    numpy.random.default_rng(0).normal(size=3)
    numpy.linalg.norm(numpy.ones(3))


attempt("read_metadata", metadata)
attempt("installed_native", installed_native)
attempt("read_reference_copy", reference_copy)
attempt("torch_cache", torch_cache)
'''


def test_a_standard_library_closed_to_other_users_is_found_so(tmp_path):
    """zygote.closed_to_others: a folder the submission's uid cannot read (no read bit for others on it, or no
    search bit on a folder above it) is one the fork server imports the standard library from for it."""
    from autograder.inside import zygote

    home = tmp_path / "home"
    (home / "lib").mkdir(parents=True)
    for folder in (tmp_path, home, home / "lib"):
        folder.chmod(0o755)
    parents_open = all(p.stat().st_mode & 0o001 for p in tmp_path.parents)
    assert zygote.closed_to_others(home / "lib") is not parents_open  # (pytest's base folder may be closed)
    assert zygote.closed_to_others("/usr/lib") is False
    home.chmod(0o700)
    assert zygote.closed_to_others(home / "lib") is True
    home.chmod(0o755)
    (home / "lib").chmod(0o711)
    assert zygote.closed_to_others(home / "lib") is True
    assert zygote.closed_to_others(tmp_path / "missing") is True


def attempts_of(results, label):
    """What the attacking module whose report holds `label` did (bundle_attack.attempts_made; the run
    below has two such modules)."""
    return bundle_attack.attempts_made({"tests": [t for t in results["tests"] if f" {label}=" in t["output"]]})


@pytest.fixture(scope="module")
def attacked(source, tmp_path_factory):
    """One run of the bundle as Gradescope runs it, read by the two tests above and below (issue 38 item 6:
    each made a run of its own): the reference solutions, but simple_attention.py attempts LOOK_AROUND
    and numpy_attention.py ATTEMPTS at import, and causal.py leaks its inputs (leftovers.leaking_causal), with Gradescope's
    metadata beside the submission, the sandbox's uids at a first uid of this run's and TMPDIR a folder of
    /tmp's kind (others may enter it: its session folders are searched for the reference)."""
    tmp_path = tmp_path_factory.mktemp("attacked")
    # the files' clock before anything of the run's is made (leftovers.search_as reads only files changed since;
    # 2 s earlier: a file system's time stamps may be that coarse)
    (tmp_path / "started").touch()
    since = (tmp_path / "started").stat().st_ctime - 2
    scratch = Path(tempfile.mkdtemp(prefix="ch03-container-tmp-", dir="/tmp"))
    scratch.chmod(0o1777)
    try:
        token, address = secrets.token_hex(12), f"student-{secrets.token_hex(6)}@example.edu"
        first_uid = 1_000_000 + secrets.randbelow(150) * 10_000_000
        root = tmp_path / "autograder"
        files = {p.name: p.read_text() for p in SOLUTIONS.glob("*.py")}
        files["causal.py"] = leftovers.leaking_causal(files["causal.py"], token)
        files["simple_attention.py"] = bundle_attack.module(
            root, LOOK_AROUND.format(tmp=str(scratch), reference=leftovers.REFERENCE_TEXT))
        # ATTEMPTS in a module of their own (one report of all eleven would be cut short in the results)
        files["numpy_attention.py"] = bundle_attack.module(root, ATTEMPTS)
        metadata = {"users": [{"email": address, "name": "A Student"}], "previous_submissions": []}
        done, root, results = run_restricted(source, tmp_path, files, metadata,
                                             {"CH03_SANDBOX_UIDS": str(first_uid), "TMPDIR": str(scratch)})
        yield SimpleNamespace(done=done, root=root, results=results, token=token, address=address,
                              first_uid=first_uid, scratch=scratch, since=since)
    finally:
        shutil.rmtree(scratch)


def test_nothing_of_the_grader_is_left_for_the_submission_s_uid(attacked):
    """Container mode: the submission copies its inputs (with a token of this run) into /tmp, /var/tmp
    and /dev/shm and leaves a process behind; during the run it cannot read Gradescope's metadata or
    the environment check's copy of the reference; once run_autograder has returned no process of
    the run's uids is left, and the submission's uid finds nothing of the run (token, metadata,
    reference text) in any file it may read or any process it may see (the files changed since the run
    began: tests/leftovers.py; a file of the run's it may read, planted as the search's control, is found);
    torch's cache folders (the grader's and its fork server's) were the grader's own, in the run's TMPDIR,
    and are gone."""
    results, address, scratch = attacked.results, attacked.address, attacked.scratch
    attempts = attempts_of(results, "read_metadata")
    assert attempts.get("read_metadata") == "PermissionError", attempts
    assert attempts.get("read_reference_copy") == "FileNotFoundError", attempts
    assert attempts.get("torch_cache") == "DONE", attempts
    assert address not in json.dumps(results)
    uids = range(attacked.first_uid, attacked.first_uid + 10)
    assert leftovers.processes_of(uids) == [], "a process of the submission's uid outlived run_autograder"
    student_uid = int(attempts["uid"])
    assert student_uid in uids
    # the search's control: a file of the run's that the uid may read holds a needle of its own, and is found
    control, planted = secrets.token_hex(12), Path(tempfile.mkdtemp(prefix="ch03-search-control-", dir="/tmp"))
    try:
        planted.chmod(0o755)
        (planted / "control.txt").write_text(f"CONTROL {control}\n")
        (planted / "control.txt").chmod(0o644)
        found = leftovers.search_as(student_uid, [attacked.token, address, control],
                                    reference_folders=[str(scratch), str(attacked.root)], since=attacked.since)
    finally:
        shutil.rmtree(planted)
    assert found["files"] > 100 and found["read"] >= 1, found["files"]
    assert found["hits"] == [f"{planted / 'control.txt'}: {control}"], found["hits"][:10]
    assert os.listdir(scratch) == []  # every session folder removed
