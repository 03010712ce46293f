"""Each deployment path, installed from what it ships into a fresh virtual environment that holds
nothing else, then graded as deployed:

- the Gradescope bundle: its setup.sh (run whole, with AUTOGRADER_PYTHON pointing at the fresh
  environment; it ends with the environment check, whose verdict each submission then finds), then
  run_autograder on the reference (full marks) and on the stubs (0, with the teaching messages); as
  root, both under the restriction of Gradescope's Docker container (tests/docker_like.py: no namespaces,
  Docker's capabilities), so the grader runs in container mode there, with the native code the fresh
  install has, as it does on Gradescope (test_container_mode attacks that mode with the project's environment);
- the released workflow: the install step and the grading step of the generated grade.yml,
  read from the file and run with bash as the runner would (`sudo` is the identity here: the
  tests run as root).

PyTorch's CPU index cannot be reached from these machines: both install the same torch version
from the local wheels instead (TORCH_SPEC/TORCH_INDEX for setup.sh; the torch line of grade.yml
has its index replaced), and nothing else changes. Where no local wheel fits the Python running the
tests (3.10, Gradescope's default: pip's own index then gives the CUDA build, gigabytes the first
time), setup.sh's refusal of that build is checked, then TORCH_ALLOW_CUDA=1 installs it. Each test
gets an environment of its own, made for it and removed after it: what one path installs never
stands in for what the other forgets, nor what an earlier run installed for what this one does not,
and two runs at once (two checkouts on one machine) never share one half made (an environment kept
between runs in the system's temporary folder did both). pip's cache keeps the downloads; the
installs are paid once per test. pip is told not to compile the installed modules to bytecode
(PIP_COMPILE=0): that writes only the caches Python writes itself when a module is first imported,
it changes no file a path installs, and it was 40 % of the two tests' CPU (159 s of CPU for both
with it, 95 s without, `time pytest tests/test_deploy_installs.py`, this 2-core machine, 2026-11-29,
shared with other test runs). Marked `deploy`: part of the default full suite.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
import yaml
from in_process import run_plain
from rubric_points import TOTAL, g

from autograder.sandbox import container

pytestmark = pytest.mark.deploy

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions" / "ch03"
STUBS = ROOT / "assignments" / "ch03"
TORCH = "torch==2.13.0"  # this machine's local CPU wheel (pip's configuration finds it)
CPU_INDEX_TORCH = '"torch>=2.2,<3" --index-url https://download.pytorch.org/whl/cpu'
# Gradescope builds its image and runs each submission in a Docker container, which refuses namespaces to
# root: as root, setup.sh and run_autograder run under the same restriction (tests/docker_like.py), so the
# bundle grades in container mode from a fresh install, as it does there; as another user (no capabilities
# to drop) they run as they are, and the bundle grades in its room
DOCKER_LIKE = [sys.executable, str(Path(__file__).with_name("docker_like.py"))] if os.geteuid() == 0 else []


@pytest.fixture
def fresh_venv(tmp_path):
    """An environment with nothing but pip, this test's own: the test installs into it what its path installs."""
    folder = tmp_path / "fresh-venv"
    venv.EnvBuilder(with_pip=True, symlinks=True).create(folder)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)  # a torch install is most of a gigabyte: not kept with pytest's last runs


def _clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("VIRTUAL_ENV", "PYTHON", "AUTOGRADER_", "CH03_", "GITHUB_", "TORCH_"))}
    env["PIP_COMPILE"] = "0"  # no bytecode written at install (the module's docstring says why)
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def bundle(built_bundle):
    """The Gradescope bundle, unpacked as Gradescope unpacks it: the session's (tests/conftest.py
    built_bundle; the folder `gradescope --out DIR` writes is the same files: test_gradescope's
    test_the_folder_form_matches_the_zip); each test copies it."""
    return built_bundle[1]


def _unpacked_bundle(bundle, where):
    shutil.copytree(bundle, where / "autograder" / "source", symlinks=True)
    return where / "autograder"


def _run_autograder(root, python, submission, cache):
    shutil.rmtree(root / "submission", ignore_errors=True)
    shutil.rmtree(root / "results", ignore_errors=True)
    shutil.copytree(submission, root / "submission", ignore=shutil.ignore_patterns("tests", "__pycache__", "*.md"))
    (root / "results").mkdir()
    done = subprocess.run([*DOCKER_LIKE, str(root / "source" / "run_autograder")], cwd=root, capture_output=True, text=True,
                          timeout=600, env=_clean_env(AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=python,
                                                      CH03_ENVCHECK_CACHE=str(cache)))
    assert (root / "results" / "results.json").is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    return done, json.loads((root / "results" / "results.json").read_text())


def test_the_gradescope_bundle_installs_and_grades_as_deployed(fresh_venv, bundle, tmp_path):
    root = _unpacked_bundle(bundle, tmp_path)
    python = str(fresh_venv / "bin" / "python")
    cache = tmp_path / "envcheck-cache"  # as the image's /var/cache: setup.sh's check really runs here
    def setup(**extra):
        return subprocess.run([*DOCKER_LIKE, "bash", str(root / "source" / "setup.sh")], capture_output=True, text=True, timeout=1200,
                              env=_clean_env(AUTOGRADER_PYTHON=python, TORCH_SPEC=TORCH, TORCH_INDEX="",
                                             CH03_ENVCHECK_CACHE=str(cache), **extra))

    done = setup()
    # pip's own index (TORCH_INDEX empty), checked before installing: this machine's local CPU wheel where
    # it has one for this Python (3.11), so no refusal; where pip's index gives only the CUDA build (for
    # Python 3.10, Gradescope's default: no local wheel), setup.sh refuses it, and TORCH_ALLOW_CUDA=1 installs it
    assert "TORCH_INDEX is empty" in done.stderr
    if "would install the cuda build of torch==2.13.0" in done.stdout:
        assert done.returncode == 1 and "setup: refused: a CUDA build brings NVIDIA's libraries" in done.stderr
        assert "environment check" not in done.stdout
        done, build = setup(TORCH_ALLOW_CUDA="1"), "CUDA"
    else:
        assert "would install the cpu build of torch==2.13.0" in done.stdout
        build = "CPU"
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Failed to initialize NumPy" not in done.stdout + done.stderr  # NumPy came first
    installed = re.search(r"^setup: installed torch (2\.13\.0\+\w+) \((CPU|CUDA [\d.]+) build\)", done.stdout, re.M)
    assert installed and installed[2].split()[0] == build, done.stdout[-3000:]
    assert f"environment check: the reference scored {g(TOTAL)} / {g(TOTAL)} (device cpu, torch {installed[1]})\n" \
        in done.stdout

    done, results = _run_autograder(root, python, SOLUTIONS, cache)
    assert results.get("score") == results.get("max_score") == TOTAL, done.stdout[-3000:] + done.stderr[-3000:]
    check = results["extra_data"]["environment_check"]
    assert check["passed"] and check["reference_score"] == TOTAL and check["cached"]  # the verdict of the image build
    walls = results["extra_data"]["protections"]
    assert "seccomp system-call allow-list" in walls
    # in Gradescope's Docker-like container, container mode: the container is relied on for the room
    assert (walls[0] == container.PROTECTION) == bool(DOCKER_LIKE), walls

    done, results = _run_autograder(root, python, STUBS, cache)
    assert results["score"] == 0 and results["max_score"] == TOTAL, done.stderr[-3000:]
    assert results["extra_data"]["environment_check"]["cached"]
    # the teaching messages: what is not written yet, with the stub's own hint
    assert "What to fix:" in results["output"]
    assert "not implemented yet: simple_attention.softmax_naive" in results["output"]
    assert "return exp(x) divided by the sum of exp(x)" in results["output"]


def _steps(workflow):
    return {step.get("name"): step for step in workflow["jobs"]["grade"]["steps"]}


def test_the_released_workflow_installs_and_grades_as_deployed(fresh_venv, bundle, tmp_path):
    release, grader = tmp_path / "workspace" / "submission", tmp_path / "workspace" / "grader"
    status, _, stderr = run_plain(["release", "--out", release])  # cli.main here (tests/in_process.py)
    assert status == 0, stderr
    shutil.copytree(bundle, grader, symlinks=True)  # what `gradescope --out grader` writes (see bundle)
    for module in SOLUTIONS.glob("*.py"):  # a student who solved everything
        shutil.copyfile(module, release / "assignments" / "ch03" / module.name)
    workflow = yaml.safe_load((release / ".github" / "workflows" / "grade.yml").read_text())
    steps = _steps(workflow)
    install = steps["Install the CPU build of torch and the grader's requirements"]["run"]
    assert CPU_INDEX_TORCH in install
    install = install.replace(CPU_INDEX_TORCH, TORCH)  # the one change: PyTorch's index is out of reach here
    grade = steps["Grade in the sandbox"]

    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sudo").write_text('#!/bin/sh\nexec "$@"\n')  # already root: sudo changes nothing
    (shim / "sudo").chmod(0o755)
    runner_temp, outputs = tmp_path / "runner-temp", tmp_path / "github-output"
    runner_temp.mkdir()
    env = _clean_env(PATH=f"{fresh_venv / 'bin'}:{shim}:{os.environ['PATH']}", GITHUB_WORKSPACE=str(grader.parent),
                     RUNNER_TEMP=str(runner_temp), GITHUB_ACTIONS="true", GITHUB_EVENT_NAME="push",
                     GITHUB_OUTPUT=str(outputs), GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"), **workflow["env"])
    done = subprocess.run(["bash", "-e", "-c", install], cwd=grader.parent, env=env, capture_output=True, text=True,
                          timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    done = subprocess.run(["bash", "-e", "-c", grade["run"]], cwd=grader.parent / grade["working-directory"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((runner_temp / "results.json").read_text())
    assert results["score"] == results["max_score"] == TOTAL
    assert results["environment_check"]["passed"]
    assert "seccomp system-call allow-list" in results["extra_data"]["protections"]
    assert "score=100" in outputs.read_text().splitlines()
    assert (runner_temp / "comment.md").read_text().startswith("<!-- ch03-autograder:grade-comment -->")
