"""Turn what a student handed in (a folder, a .zip or notebooks) into a clean staged folder of modules.

Only regular files with plain names are staged: no links, no paths that climb out, no archive
bombs. The staged folder is what the sandbox copies into the child's private workspace.

Notebooks: when no chapter module (.py) is found, every .ipynb file of the submission (in any
subfolder but hidden ones such as .ipynb_checkpoints) is read as JSON, never run, and the code of
its solution cells is written as <module>.py by grade_id (autograder.notebooks.extract_modules, one
call over all the notebooks, so a module in two notebooks is an error naming both).
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
MAX_NOTEBOOK_BYTES = 32 << 20  # outputs (images) make notebooks larger than modules
SUFFIXES = (".py", ".json", ".txt", ".md")


class SubmissionError(ValueError):
    pass


@dataclass
class Staged:
    folder: Path                     # the staged modules
    source: str                      # what was handed in
    found: list = field(default_factory=list)     # module stems present
    notes: list = field(default_factory=list)     # what was skipped, and why
    notebooks: list = field(default_factory=list)  # the notebooks the modules came from, as shown to people

    def missing(self, part):
        if part in self.found:
            return ""
        if self.notebooks:
            return (f"no solution cell for {part} (a code cell with nbgrader grade_id '{part}') in "
                    f"{', '.join(self.notebooks)}")
        return f"{part}.py was not found in the submission"


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
            _stage_folder(Path(tmp), staged, shown=f"{path}:")
    elif path.suffix == ".ipynb" and path.is_file():
        _stage_notebooks([path], path.parent, str(path.parent), staged)
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


def _find_notebooks(root):
    """Every regular .ipynb file under root, hidden and dunder folders skipped, in path order."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
        for name in sorted(files):
            path = Path(folder) / name
            if name.endswith(".ipynb") and not name.startswith(".") and stat.S_ISREG(path.lstat().st_mode):
                found.append(path)
    return sorted(found, key=lambda p: p.relative_to(root).parts)


def _stage_folder(root, staged, shown=None):
    """shown: how people know root (the folder handed in, or 'the.zip:' for an unpacked zip)."""
    folder = _module_folder(root)
    if not any((folder / f"{p}.py").exists() for p in PARTS):
        notebooks = _find_notebooks(root)
        if notebooks:
            _stage_notebooks(notebooks, root, shown or str(root), staged)
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


def _stage_notebooks(notebooks, root, shown, staged):
    """Extract the modules of all the notebooks in one go; errors name the file as handed in, and the cell."""
    from autograder import notebooks as nb

    if len(notebooks) > MAX_FILES:
        raise SubmissionError(f"{staged.source}: more than {MAX_FILES} notebooks")
    for path in notebooks:
        if path.stat().st_size > MAX_NOTEBOOK_BYTES:
            raise SubmissionError(f"{_show(path, root, shown)}: larger than {MAX_NOTEBOOK_BYTES >> 20} MiB")
    try:
        nb.extract_modules(notebooks, staged.folder)
    except (ValueError, OSError) as e:
        message = str(e)
        for path in notebooks:  # the temporary folder of an unpacked zip means nothing to people
            message = message.replace(str(path), _show(path, root, shown))
        raise SubmissionError(message) from None
    staged.notebooks = [_show(path, root, shown) for path in notebooks]
    staged.notes.append(f"graded the solution cells of {len(notebooks)} notebook(s): {', '.join(staged.notebooks)}")


def _show(path, root, shown):
    relative = Path(path).relative_to(root)
    return f"{shown} {relative}" if shown.endswith(":") else str(Path(shown) / relative)


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
