"""The grader checks its own environment before it charges anyone.

    record = envcheck.ensure(sandbox, rubric, suites, rubric_path)   # before the first student

grades the reference solutions (solutions/ch03, shipped with every deployed copy of the grader)
in the same sandbox, on the same device, with the same rubric and limits as the students. A
full score is remembered per environment (the cache key: everything that could change the
verdict), so a batch pays once and a repeated run only hashes; anything less raises
EnvironmentFailed, naming the failing checks and the likely cause, and no student is graded.
The engine keeps the record (engine.Engine.environment_check) and puts it into every results.json
under `environment_check`.

The cache is a folder only the grader's user can write (0700, owned by it; refused otherwise):
settings.Settings.envcheck_cache ($CH03_ENVCHECK_CACHE), else /var/cache/ch03-autograder as root, else ~/.cache/ch03-autograder.
Student code never sees it (the room shows no /var/cache or home), and only full scores are kept.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import stat
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autograder import PACKAGE_DIR, chapter, scratch, settings
from autograder.settings import CACHE_ENV  # noqa: F401 (the variable's name, for callers)

if TYPE_CHECKING:
    from autograder.chapter import Chapter
    from autograder.grading import Grade
    from autograder.rubric import Rubric
    from autograder.runner import Checks

VERSION = 1
STUDENT_MESSAGE = ("This submission was not graded: the autograder's environment failed its own check (it "
                   "could not give the reference solutions full marks), so no score was recorded. This is not "
                   "about your code; your instructor can see the details.")

Record = dict[str, Any]  # the environment_check record, as results.json stores it (JSON: its values vary)


class EnvironmentFailed(RuntimeError):
    """The reference solutions did not get full marks here; str() names the failing checks and the likely cause.
    .record: the environment_check record (passed False)."""

    def __init__(self, message: str, record: Record) -> None:
        super().__init__(message)
        self.record = record


def reference_folder() -> Path:
    """The reference solutions this copy of the grader ships with (the repository's, the bundle's)."""
    return chapter.current().solutions


def ensure(sandbox: Any, rubric: Rubric, suites: dict[str, Checks], rubric_path: str | Path,
           reference: str | Path | None = None, cache: str | Path | None = None, seed: int | None = None,
           manifest: Chapter | None = None) -> Record:
    """The environment_check record for this sandbox, from the cache or by grading the reference
    now; EnvironmentFailed when the reference loses any point. cache: the verdicts' folder (default:
    cache_folder()); seed: the run's secret for the reference's unseen inputs (default: drawn);
    manifest: the chapter graded (the Engine's; None: this repository's)."""
    reference = Path(reference or reference_folder())
    if not reference.is_dir():
        raise EnvironmentFailed(f"the environment check cannot run: the reference solutions are missing "
                                f"({reference}); this copy of the grader is incomplete", _record(sandbox, None))
    key = cache_key(sandbox, rubric_path, reference)
    folder = cache_folder(cache)
    record = _cached(key, folder)
    if record is None:
        record = _grade_reference(sandbox, rubric, suites, reference, seed, manifest)
        if record["passed"]:
            _store(key, record, folder)
    return {**record, "cached": record.get("cached", False)}


def _grade_reference(sandbox: Any, rubric: Rubric, suites: dict[str, Checks], reference: Path,
                     seed: int | None = None, manifest: Chapter | None = None) -> Record:
    from autograder import grading

    grade = grading.grade_submission(reference, rubric, suites, sandbox, figures=False, seed=seed, chapter=manifest)
    record = _record(sandbox, grade)
    if not record["passed"]:
        raise EnvironmentFailed(failure_message(grade, sandbox.device), record)
    return record


def _record(sandbox: Any, grade: Grade | None) -> Record:
    import torch

    record: Record = {"passed": False, "score": 0.0, "max_score": None, "device": getattr(sandbox, "device", "cpu"),
              "walls": [], "torch": torch.__version__, "python": platform.python_version(), "failed": []}
    if grade is not None:
        failed = [f"{c.part}: {c.name}" for c in grade.checks if not c.passed]
        record.update(passed=not failed and grade.score >= grade.max_score, score=grade.score,
                      max_score=grade.max_score, walls=list(grade.protections), failed=failed)
    return record


def failure_message(grade: Grade, device: str) -> str:
    failed = [c for c in grade.checks if not c.passed]
    lines = [f"the grader's environment failed its own check: the reference solutions scored "
             f"{grade.score:g} / {grade.max_score:g} here (device {device}), so no student is graded. Failing checks:"]
    lines += [f"  {c.part}: {c.name}: {c.message}" for c in failed[:20]]
    if len(failed) > 20:
        lines.append(f"  ... and {len(failed) - 20} more")
    lines.append(f"likely cause: {likely_cause(grade, device)}")
    return "\n".join(lines)


def likely_cause(grade: Grade, device: str) -> str:
    problems = " ".join(p.problem for p in grade.parts.values())
    if grade.not_graded:  # sandbox/death.py measured no cause of the reference's own
        return ("the machine was overloaded while the reference was graded (its processes were killed or kept "
                "waiting by something else, again and again): grade again when the machine is quieter")
    if "could not start the sandbox" in problems or "lost" in problems:
        return "the sandbox cannot run code here (its fork server or session did not start)"
    if "timed out" in problems:
        return "the rubric's time limits are too tight for this machine (grading.yml: timeout)"
    if "SIGKILL" in problems or "memory" in problems:
        return "the rubric's memory limits are too tight for this build of torch (grading.yml: memory_mb)"
    if device != "cpu":
        return f"the device ({device}): results there differ from the CPU's beyond the checks' tolerances, or it failed"
    return ("the installed packages (torch, NumPy) differ from what the checks expect, or the rubric and "
            "suites were changed without the reference solutions")


# ---------------------------------------------------------------- the cache

def cache_key(sandbox: Any, rubric_path: str | Path, reference: str | Path) -> str:
    """A hash of everything the verdict depends on."""
    import numpy
    import torch

    h = hashlib.sha256()
    plan = getattr(sandbox, "plan", {}) or {}
    facts = {"version": VERSION, "torch": torch.__version__, "cuda": torch.version.cuda,
             "numpy": numpy.__version__, "python": sys.version, "executable": os.path.realpath(sys.executable),
             "device": getattr(sandbox, "device", "cpu"), "unsafe": bool(getattr(sandbox, "unsafe", False)),
             "walls": {k: plan.get(k) for k in sorted(plan) if k != "why"}, "root": os.geteuid() == 0,
             "machine": platform.machine()}
    if facts["device"] == "cuda":
        facts["gpu"] = _gpus()
    h.update(json.dumps(facts, sort_keys=True).encode())
    h.update(Path(rubric_path).read_bytes())
    _hash_files(h, ((PACKAGE_DIR, "**/*"), (reference, "*.py")))  # the suites' snapshots too
    return h.hexdigest()


# the grader's code a grade depends on besides the engine, (folder, pattern): the hidden suites (with their
# snapshots), the stand-ins they give a child (the reference's answers, their bounds) and the grader's
# reading of the submitted source (the efficiency and device checks agree with it)
GRADING_CODE = ((PACKAGE_DIR / "suites", "**/*"), (PACKAGE_DIR, "stand_ins.py"), (PACKAGE_DIR, "source_reading.py"))


def grader_fingerprint(rubric_path: str | Path, reference: str | Path | None = None) -> str:
    """What a student's grade depends on besides their submission, from the cache key's ingredients:
    the rubric, the hidden suites (with their snapshots), the reference solutions and the versions of
    torch, NumPy and Python. `batch` stores it with each result and regrades every student whose
    result came from another grader (not the machine's walls or device: the same grader elsewhere)."""
    h = hashlib.sha256()  # the packages' own version.py: neither is imported for this (the batch forks later)
    versions = {"version": VERSION, "torch": _version_file("torch"), "numpy": _version_file("numpy"),
                "python": platform.python_version()}
    h.update(json.dumps(versions, sort_keys=True).encode())
    h.update(Path(rubric_path).read_bytes())
    _hash_files(h, GRADING_CODE + ((Path(reference or reference_folder()), "*.py"),))
    return h.hexdigest()


def _version_file(package: str) -> str:
    """The text of package/version.py (its version and build), found without importing the package."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            return "not installed"
        return (Path(spec.submodule_search_locations[0]) / "version.py").read_text(encoding="utf-8")
    except (ImportError, AttributeError, TypeError, IndexError, OSError, ValueError):
        return "not installed"


def _hash_files(h: hashlib._Hash, sources: Iterable[tuple[str | Path, str]]) -> None:
    for folder, pattern in sources:
        for path in sorted(Path(folder).glob(pattern)):
            if "__pycache__" not in path.parts and path.is_file():
                h.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")


def _gpus() -> dict[str, Any]:
    """The cards and their driver, asked without initialising CUDA here (the batch's workers are
    forked from this process: client.cuda_devices)."""
    from autograder.sandbox.client import cuda_devices

    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        named = done.stdout.strip() if done.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        named = ""
    return {"count": cuda_devices(), "cards": named}


def cache_folder(cache: str | Path | None = None) -> Path:
    """cache, else the settings' (from the environment), else root's or the user's cache folder."""
    cache = cache or settings.from_environment().envcheck_cache
    if cache:
        return Path(cache)
    if os.geteuid() == 0:
        return Path("/var/cache/ch03-autograder")
    return Path(settings.user_cache_home()) / "ch03-autograder"


def _ours(path: str | Path) -> bool:
    """path exists, is not a link, belongs to this user and only this user can write it."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return info.st_uid == os.geteuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) \
        and not stat.S_ISLNK(info.st_mode)


def _cached(key: str, folder: Path | None = None) -> Record | None:
    folder = folder or cache_folder()
    path = folder / f"envcheck-{key}.json"
    if not (_ours(folder) and _ours(path)):
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return {**record, "cached": True} if isinstance(record, dict) and record.get("passed") is True else None


def _store(key: str, record: Record, folder: Path | None = None) -> None:
    folder = folder or cache_folder()
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _ours(folder):
            print(f"warning: environment check not cached: {folder} is not this user's alone", file=sys.stderr)
            return
        with scratch.replaced(folder / f"envcheck-{key}.json") as f:
            json.dump(record, f)
    except OSError as e:  # a read-only home: the check is simply run again next time
        print(f"warning: environment check not cached ({e})", file=sys.stderr)
