"""What a grader is made of, in parts, and what changed between two of them (issue 36 item 3).

`batch` regrades a student whose result came from another grader (envcheck.grader_fingerprint: one
hash). To say *what* changed, each run also records the grader in parts:

    parts = grader_parts(rubric_path, reference)
    # {"rubric": {"points": {"mha.book_example": 4, ...}, "limits": {...}, "other": digest},
    #  "suites": {"test_causal.py": digest, ...}, "reference": {"causal.py": digest, ...},
    #  "versions": {"autograder": "1", "torch": "2.13.0", "numpy": "2.1.0", "python": "3.11.2"}}
    changes(old_parts, parts)
    # -> ["points of mha.book_example 4 -> 5", "suites changed: test_causal.py", "torch 2.12.0 -> 2.13.0"]

The gradebook keeps the parts of every grader it saw (gradebook.Gradebook.remember_grader), so a
regrade's reason names what changed since the grader of that student's previous grade.
"""
from __future__ import annotations

import hashlib
import json
import platform
import re
from pathlib import Path
from typing import Any

from autograder import envcheck

_VERSION = re.compile(r"""^(?:__version__|version)\s*(?::\s*str)?\s*=\s*['"]([^'"]+)['"]""", re.M)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


def _files(folder: Path, pattern: str) -> dict[str, str]:
    return {path.relative_to(folder).as_posix(): _digest(path.read_bytes())
            for path in sorted(folder.glob(pattern)) if path.is_file() and "__pycache__" not in path.parts}


def _version(package: str) -> str:
    """The installed version of package, read from its version.py without importing it."""
    text = envcheck._version_file(package)
    found = _VERSION.search(text)
    return found[1] if found else text.strip()[:40]


def _rubric(rubric_path: str | Path) -> dict[str, Any]:
    """{points: {part.check: points}, limits: {part: "timeout s, memory MB"}, other: digest of the rest}."""
    from autograder import rubric

    try:
        loaded = rubric.load(rubric_path)
    except rubric.RubricError:
        return {"points": {}, "limits": {}, "other": _digest(Path(rubric_path).read_bytes())}
    points: dict[str, float] = {}
    other = []
    for part in loaded.parts.values():
        for check in part.checks.values():
            if not check.group:
                points[f"{part.name}.{check.name}"] = check.points
            other.append([part.name, check.name, check.visibility, check.diagnosis, list(check.requires), check.group])
        for group, (group_points, _) in part.groups.items():
            points[f"{part.name}.{group}"] = group_points
    limits = {part.name: f"timeout {part.timeout:g} s, memory {part.memory_mb} MB" for part in loaded.parts.values()}
    limit = loaded.submissions.describe() if loaded.submissions else "none"
    return {"points": points, "limits": limits, "submissions": limit,
            "other": _digest(json.dumps(other, sort_keys=True).encode())}


def grader_parts(rubric_path: str | Path, reference: str | Path | None = None) -> dict[str, Any]:
    """The grader of envcheck.grader_fingerprint, in parts that can be compared one by one."""
    return {"rubric": _rubric(rubric_path),
            "suites": {name: digest for folder, pattern in envcheck.GRADING_CODE
                       for name, digest in _files(folder, pattern).items()},  # suites/, stand_ins.py, source_reading.py
            "reference": _files(Path(reference or envcheck.reference_folder()), "*.py"),
            "versions": {"autograder": str(envcheck.VERSION), "torch": _version("torch"), "numpy": _version("numpy"),
                         "python": platform.python_version()}}


def _changed_files(old: dict, new: dict) -> list[str]:
    return sorted(name for name in set(old) | set(new) if old.get(name) != new.get(name))


def changes(old: dict | None, new: dict) -> list[str]:
    """What differs between two graders' parts, in words; [] when nothing recorded differs (or old is
    unknown: a grade recorded before the parts were)."""
    if not old:
        return []
    said = []
    old_rubric, new_rubric = old.get("rubric") or {}, new.get("rubric") or {}
    old_points, new_points = old_rubric.get("points") or {}, new_rubric.get("points") or {}
    for name in sorted(set(old_points) | set(new_points), key=lambda n: (n not in old_points, n)):
        before, after = old_points.get(name), new_points.get(name)
        if before != after:
            said.append(f"points of {name} {_num(before)} -> {_num(after)}")
    old_limits, new_limits = old_rubric.get("limits") or {}, new_rubric.get("limits") or {}
    said += [f"limits of {part}: {old_limits.get(part, 'none')} -> {new_limits.get(part, 'none')}"
             for part in sorted(set(old_limits) | set(new_limits)) if old_limits.get(part) != new_limits.get(part)]
    if old_rubric.get("submissions", "none") != new_rubric.get("submissions", "none"):
        said.append(f"submission limit {old_rubric.get('submissions', 'none')} -> {new_rubric.get('submissions', 'none')}")
    if old_rubric.get("other") != new_rubric.get("other"):
        said.append("rubric settings changed (visibility, diagnosis, requires or groups)")
    for key, what in (("suites", "suites changed"), ("reference", "reference solutions changed")):
        files = _changed_files(old.get(key) or {}, new.get(key) or {})
        if files:
            said.append(f"{what}: {', '.join(files)}")
    old_versions, new_versions = old.get("versions") or {}, new.get("versions") or {}
    said += [f"{name} {old_versions.get(name, '?')} -> {new_versions.get(name, '?')}"
             for name in sorted(set(old_versions) | set(new_versions)) if old_versions.get(name) != new_versions.get(name)]
    return said


def _num(value: object) -> str:
    return "none" if value is None else f"{value:g}" if isinstance(value, (int, float)) else str(value)
