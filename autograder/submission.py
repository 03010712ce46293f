"""Turn what a student handed in (a folder or a .zip) into a clean staged folder of modules.

Only regular files with plain names are staged: no links, no paths that climb out, no archive
bombs. The staged folder is what the sandbox copies into the child's private workspace.
"""
import os
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from autograder import PARTS

MAX_FILES = 200
MAX_BYTES = 8 << 20
SUFFIXES = (".py", ".json", ".txt", ".md")


class SubmissionError(ValueError):
    pass


@dataclass
class Staged:
    folder: Path                     # the staged modules
    source: str                      # what was handed in
    found: list = field(default_factory=list)     # module stems present
    notes: list = field(default_factory=list)     # what was skipped, and why

    def missing(self, part):
        return "" if part in self.found else f"{part}.py was not found in the submission"


def stage(path, into):
    """Stage a folder or zip into the (new) folder `into` and return a Staged."""
    path = Path(path)
    into = Path(into)
    into.mkdir(parents=True, exist_ok=True)
    staged = Staged(into, str(path))
    if path.is_dir():
        _stage_folder(path, staged)
    elif path.suffix == ".zip" and path.is_file():
        with tempfile.TemporaryDirectory() as tmp:
            _extract_zip(path, Path(tmp), staged)
            _stage_folder(Path(tmp), staged)
    elif path.suffix == ".ipynb" and path.is_file():
        _stage_notebooks([path], staged)
    else:
        raise SubmissionError(f"{path}: not a folder, .zip or .ipynb")
    staged.found = sorted(p for p in PARTS if (into / f"{p}.py").is_file())
    return staged


def _module_folder(root):
    """The folder holding most of the chapter's modules (submissions are often nested one level)."""
    best, best_count = root, -1
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
        count = sum(f"{p}.py" in files for p in PARTS)
        if count > best_count:
            best, best_count = Path(folder), count
    return best


def _stage_folder(root, staged):
    folder = _module_folder(root)
    notebooks = sorted(folder.glob("*.ipynb")) if not any((folder / f"{p}.py").exists() for p in PARTS) else []
    if notebooks:
        _stage_notebooks(notebooks, staged)
        return
    total = 0
    for entry in sorted(folder.iterdir()):
        info = entry.lstat()
        if stat.S_ISLNK(info.st_mode):
            staged.notes.append(f"skipped {entry.name}: symbolic links are not accepted")
            continue
        if not stat.S_ISREG(info.st_mode) or entry.suffix not in SUFFIXES or not entry.stem.isidentifier():
            continue
        total += info.st_size
        if total > MAX_BYTES:
            raise SubmissionError(f"{staged.source}: more than {MAX_BYTES >> 20} MiB of source files")
        shutil.copyfile(entry, staged.folder / entry.name, follow_symlinks=False)


def _stage_notebooks(notebooks, staged):
    from autograder import notebooks as nb

    for notebook in notebooks:
        nb.extract_modules(notebook, staged.folder)
    staged.notes.append(f"graded the solution cells of {len(notebooks)} notebook(s)")


def _extract_zip(path, dest, staged):
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise SubmissionError(f"{path}: not a valid zip file") from None
    with archive:
        members = archive.infolist()
        if len(members) > MAX_FILES * 5:
            raise SubmissionError(f"{path}: too many files in the archive ({len(members)})")
        total = 0
        for info in members:
            name = info.filename
            target = (dest / name).resolve()
            if name.startswith("/") or ".." in Path(name).parts or not str(target).startswith(str(dest.resolve())):
                staged.notes.append(f"skipped {name}: the path leaves the submission folder")
                continue
            if stat.S_ISLNK(info.external_attr >> 16):
                staged.notes.append(f"skipped {name}: symbolic links are not accepted")
                continue
            if info.is_dir():
                continue
            total += info.file_size
            if total > MAX_BYTES * 4:
                raise SubmissionError(f"{path}: the archive unpacks to more than {MAX_BYTES * 4 >> 20} MiB")
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(info) as src, open(target, "wb") as out:
                out.write(src.read(MAX_BYTES + 1)[:MAX_BYTES])
