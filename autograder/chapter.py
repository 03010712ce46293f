"""The chapter manifest (chapter.yml at the project root): the one place that names the chapter.

    chapter = current()          # the manifest of this copy of the grader (read once)
    chapter.id, chapter.parts    # "ch03", ("simple_attention", ..., "numpy_attention")
    chapter.solutions            # Path of the reference modules; also assignments, source, ...
    chapter.rubric               # Path of grading.yml

Modules take a Chapter as a parameter or ask current(); none builds `ch03`, `solutions/ch03` or
`grading.yml` itself. This module imports nothing of the package (the package's __init__ reads it
lazily, and it runs before anything else is importable).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

PROJECT_ROOT = Path(__file__).resolve().parents[1]
MANIFEST = "chapter.yml"
FOLDERS = ("solutions", "assignments", "source", "release", "notebook_templates")
RELEASED_COPY = "tests/chapter.json"  # the copy the stubs generator writes into the assignment folder


class ManifestError(ValueError):
    """chapter.yml is missing or malformed; str() names the file and what is wrong."""


@dataclass(frozen=True)
class Chapter:
    id: str
    title: str
    parts: tuple[str, ...]         # one student module each, in grading.yml's order
    root: Path                     # the folder that holds chapter.yml
    folders: dict[str, str]        # name -> path relative to root (FOLDERS)
    rubric_name: str = "grading.yml"

    def folder(self, name: str) -> Path:
        return self.root / self.folders[name]

    @property
    def solutions(self) -> Path:
        return self.folder("solutions")

    @property
    def assignments(self) -> Path:
        return self.folder("assignments")

    @property
    def source(self) -> Path:
        return self.folder("source")

    @property
    def release(self) -> Path:
        return self.folder("release")

    @property
    def notebook_templates(self) -> Path:
        return self.folder("notebook_templates")

    @property
    def rubric(self) -> Path:
        return self.root / self.rubric_name

    @property
    def book_examples(self) -> Path:
        return self.assignments / "tests" / "book_examples.json"

    def module_files(self) -> list[str]:
        return [f"{part}.py" for part in self.parts]

    def released_copy(self) -> dict[str, Any]:
        """What the released files need of the manifest (assignments/<id>/tests/chapter.json)."""
        return {"id": self.id, "title": self.title, "parts": list(self.parts)}


def load(path: Path | str) -> Chapter:
    """The manifest at path -> Chapter; ManifestError naming the file when it is malformed."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise ManifestError(f"{path}: cannot read the chapter manifest ({e})") from None
    if not isinstance(data, dict) or not {"id", "parts", "folders"} <= set(data):
        raise ManifestError(f"{path}: the chapter manifest needs 'id', 'parts' and 'folders'")
    parts, folders = data["parts"], data["folders"]
    if not (isinstance(parts, list) and parts and all(isinstance(p, str) and p.isidentifier() for p in parts)):
        raise ManifestError(f"{path}: 'parts' must be a list of module names")
    if len(set(parts)) != len(parts):
        raise ManifestError(f"{path}: a part is named twice in 'parts'")
    if not isinstance(folders, dict) or set(folders) != set(FOLDERS):
        raise ManifestError(f"{path}: 'folders' must name exactly {', '.join(FOLDERS)}")
    return Chapter(id=str(data["id"]), title=str(data.get("title", "")), parts=tuple(parts), root=path.parent,
                   folders={k: str(v) for k, v in folders.items()}, rubric_name=str(data.get("rubric", "grading.yml")))


@cache
def current() -> Chapter:
    """The manifest of this copy of the grader (the repository's, or the Gradescope bundle's)."""
    return load(PROJECT_ROOT / MANIFEST)
