"""Turn what a student handed in (a folder, a .zip or notebooks) into a clean staged folder of modules.

Only regular files with plain names are staged: no links, no paths that climb out, no archive
bombs. The staged folder is what the sandbox copies into the child's private workspace.

Every step is bounded before it starts: a folder is walked up to MAX_ENTRIES entries and MAX_DEPTH
levels (links and hidden or dunder folders skipped); a zip is at most MAX_ZIP_BYTES, its end record
is read for its entry count before zipfile reads the central directory, and only the members that
staging takes (read_limit) are unpacked, each up to its limit and all up to MAX_UNPACKED. Whatever
cannot be staged is a SubmissionError whose message names files relative to the submission (never
the grader's own paths), so the message can go to the student as it is.

Where the modules are: the one folder holding the chapter's modules (two such folders are an
error naming both); else the notebooks (below); else the one .zip inside the folder (Gradescope's
submission folder holding the zip a student uploaded); else the submission is empty, one error.

Notebooks: when no chapter module (.py) is found, every .ipynb file of the submission (in any
subfolder but hidden ones such as .ipynb_checkpoints) is read as JSON, never run, and the code of
its solution cells is written as <module>.py by grade_id (autograder.submitted_notebooks.extract_modules, one
call over all the notebooks, so a module in two notebooks is an error naming both).
"""
from __future__ import annotations

import os
import re
import stat
import struct
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePath, PurePosixPath
from typing import IO

from autograder import scratch, source_reading, text

MAX_FILES = 200                   # notebooks read from one submission
MAX_ENTRIES = 20_000              # files and folders walked in a submission folder
MAX_DEPTH = 32                    # folders inside folders
MAX_MEMBERS = MAX_FILES * 5       # entries of a zip
MAX_BYTES = 8 << 20               # the modules' folder: source files together
MAX_NOTEBOOK_BYTES = 32 << 20     # outputs (images) make notebooks larger than modules
MAX_ZIP_BYTES = 64 << 20          # a zip handed in
MAX_UNPACKED = 64 << 20           # what is unpacked from a zip, together
MAX_CENTRAL_DIRECTORY = MAX_MEMBERS << 12  # bytes of a zip's table of contents
# a notebook's JSON before it is parsed: 32 MiB of "{}," parses into ten million dicts (about 1 GiB in
# the grader's own process, from a 60 KiB zip). A real notebook holds its bulk in strings (outputs,
# images, source lines): a few thousand objects, a few hundred thousand values, nesting under 20
MAX_JSON_CONTAINERS = 200_000     # objects and arrays in one notebook
MAX_JSON_VALUES = 1_000_000       # values (elements and members) in one notebook
MAX_JSON_DEPTH = 64               # objects and arrays inside one another
SUFFIXES = (".py", ".json", ".txt", ".md")
CHUNK = 1 << 20


class SubmissionError(ValueError):
    pass


@dataclass
class Staged:
    folder: Path                     # the staged modules
    source: str                      # what was handed in, by its name
    found: list[str] = field(default_factory=list)     # module stems present
    notes: list[str] = field(default_factory=list)     # what was skipped, and why
    notebooks: list[str] = field(default_factory=list)  # the notebooks the modules came from, as shown to people
    # {module: (its notebook as shown to people, its solution cell's position among the notebook's cells,
    # from 1)} for modules staged from notebooks: line N of <module>.py is line N of that cell
    cells: dict[str, tuple[str, int]] = field(default_factory=dict)
    parts: tuple[str, ...] = ()      # the chapter's modules staging looks for (chapter.yml's parts)

    def missing(self, part: str) -> str:
        if part in self.found:
            return ""
        if self.notebooks:
            return (f"no solution cell for {part} (a code cell with nbgrader grade_id '{part}') in "
                    f"{', '.join(self.notebooks)}")
        return f"{part}.py was not found in the submission"


def read_limit(name: str) -> int:
    """The largest file called `name` that staging ever reads, in bytes; 0 for files it never reads."""
    suffix = PurePosixPath(name).suffix
    if suffix in SUFFIXES:
        return MAX_BYTES
    return {".ipynb": MAX_NOTEBOOK_BYTES, ".zip": MAX_ZIP_BYTES}.get(suffix, 0)


def shown(name: str | PurePath | BaseException, limit: int = 200) -> str:
    """A file name from a submission, safe and short enough for a message."""
    return text.excerpt(str(name), limit)


def stage(path: str | Path, into: str | Path, parts: tuple[str, ...] | list[str] | None = None) -> Staged:
    """Stage a folder, zip or notebook into the (new) folder `into` and return a Staged.

    parts: the chapter's modules (its manifest's parts; None: this repository's chapter).
    SubmissionError (with the reason, for the student) when nothing can be staged."""
    if parts is None:
        from autograder import chapter

        parts = chapter.current().parts
    path = Path(path)
    into = Path(into)
    into.mkdir(parents=True, exist_ok=True)
    staged = Staged(into, shown(path.name), parts=tuple(parts))
    try:
        if path.is_dir():
            _stage_folder(path, staged)
        elif path.suffix == ".zip" and path.is_file():
            _stage_zip(path, staged, label="")
        elif path.suffix == ".ipynb" and path.is_file():
            _stage_notebooks([path], path.parent, "", staged)
        else:
            raise SubmissionError(f"{shown(path.name)}: not a folder, .zip or .ipynb")
    except OSError as e:  # unreadable files, a disk that is full: the grader's side, said without its paths
        raise SubmissionError(f"the submission could not be staged ({e.strerror or type(e).__name__})") from None
    modules = sum(1 for _ in into.glob("*.py"))
    if modules > source_reading.MAX_MODULES:  # the grader reads each module the child may import, all of them
        raise SubmissionError(f"more than {source_reading.MAX_MODULES} Python modules ({modules}): hand in the "
                              f"chapter's modules and the helpers they import")
    staged.found = sorted(p for p in staged.parts if (into / f"{p}.py").is_file())
    return staged


# --- folders ------------------------------------------------------------------------------------

def walk(root: Path, limit: int = MAX_ENTRIES) -> list[tuple[PurePosixPath, dict[str, int]]]:
    """[(folder relative to root, {file name: size})] of the regular files under root, folders in
    path order (depth first). Links, hidden and dunder folders and anything but regular files are
    skipped; SubmissionError past `limit` entries or MAX_DEPTH levels of folders."""
    found, seen = [], 0
    stack = [PurePosixPath()]
    while stack:
        rel = stack.pop()
        if len(rel.parts) > MAX_DEPTH:
            raise SubmissionError(f"folders nested more than {MAX_DEPTH} deep ({shown(rel, 120)})")
        files, folders = {}, []
        with os.scandir(Path(root) / rel) as entries:
            for entry in entries:
                seen += 1
                if seen > limit:
                    raise SubmissionError(f"more than {limit} files and folders: hand in the chapter's modules or "
                                          f"notebooks only (no environments, data or caches)")
                if entry.is_dir(follow_symlinks=False):
                    if not entry.name.startswith((".", "__")):
                        folders.append(entry.name)
                elif entry.is_file(follow_symlinks=False):
                    files[entry.name] = entry.stat(follow_symlinks=False).st_size
        found.append((rel, files))
        stack.extend(rel / name for name in sorted(folders, reverse=True))
    return found


def _stage_folder(root: Path, staged: Staged, label: str = "", unzipped: list[str] | None = None) -> None:
    """label: '' for the submission itself, 'hw.zip: ' for a zip found inside it (names in messages
    are relative to the submission, after the label); unzipped: the member names of the zip that
    root was unpacked from (it holds only the members staging takes), None for a folder."""
    tree = walk(root)
    holding = [rel for rel, files in tree if any(f"{p}.py" in files for p in staged.parts)]
    if len(holding) > 1:
        folders = ", ".join(_folder(rel) for rel in holding[:5])
        raise SubmissionError(f"{label}the chapter's modules are in {len(holding)} folders ({folders}): hand in one "
                              f"set of modules (remove or rename the other folders)")
    if holding:
        _copy_modules(root, holding[0], staged, label)
        return
    notebooks = [rel / name for rel, files in tree for name in sorted(files)
                 if name.endswith(".ipynb") and not name.startswith(".")]
    if notebooks:
        _stage_notebooks([Path(root) / rel for rel in notebooks], root, label, staged)
        return
    zips = [rel / name for rel, files in tree for name in sorted(files) if name.endswith(".zip")]
    if len(zips) == 1:  # never in an unpacked zip: a zip inside a zip is not unpacked
        _stage_zip(Path(root) / zips[0], staged, label=f"{shown(zips[0])}: ")
        return
    if len(zips) > 1:
        raise SubmissionError(f"{len(zips)} zip files and no modules or notebooks ({', '.join(map(shown, zips[:5]))}): "
                              f"hand in one zip, or the modules themselves")
    names = unzipped if unzipped is not None else [str(rel / name) for rel, files in tree for name in sorted(files)]
    raise SubmissionError(f"{label}{_nothing_to_grade(names, staged.parts)}")


def _folder(rel: PurePosixPath) -> str:
    return f"{shown(rel, 120)}/" if rel.parts else "the top folder"


def _nothing_to_grade(files: list[str], parts: tuple[str, ...]) -> str:
    modules = ", ".join(f"{p}.py" for p in parts)
    if not files:
        return "nothing to grade: the submission is empty (expected the chapter's modules, e.g. causal.py, or notebooks)"
    others = ", ".join(shown(f, 80) for f in files[:5]) + (", ..." if len(files) > 5 else "")
    return (f"nothing to grade: none of the chapter's modules ({modules}) and no notebook (.ipynb) in the "
            f"submission, which holds {len(files)} other file(s): {others}")


def _copy_modules(root: Path, rel: PurePosixPath, staged: Staged, label: str) -> None:
    """Copy the source files of the modules' folder (not its subfolders), links skipped with a note."""
    total = 0
    folder = Path(root) / rel
    for entry in sorted(folder.iterdir()):
        info = entry.lstat()
        if stat.S_ISLNK(info.st_mode):
            staged.notes.append(f"skipped {label}{shown(rel / entry.name)}: symbolic links are not accepted")
            continue
        if not stat.S_ISREG(info.st_mode) or entry.suffix not in SUFFIXES or not entry.stem.isidentifier():
            continue
        total += info.st_size
        if total > MAX_BYTES:
            raise SubmissionError(f"{label}more than {MAX_BYTES >> 20} MiB of source files in {_folder(rel)}")
        with open(entry, "rb", opener=_no_follow) as source:
            _copy_capped(source, staged.folder / entry.name, MAX_BYTES)


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW)


def _copy_capped(source: IO[bytes], target: str | Path, limit: int) -> int:
    """Copy the stream source into the new file target, at most limit bytes -> bytes written."""
    written = 0
    with open(target, "xb") as out:
        while written < limit:
            chunk = source.read(min(CHUNK, limit - written))
            if not chunk:
                break
            out.write(chunk)
            written += len(chunk)
    return written


# --- notebooks ----------------------------------------------------------------------------------

def _stage_notebooks(notebooks: list[Path], root: Path, label: str, staged: Staged) -> None:
    """Extract the modules of all the notebooks in one go; errors name the file as handed in, and the cell."""
    from autograder import submitted_notebooks as nb

    if len(notebooks) > MAX_FILES:
        raise SubmissionError(f"{label}more than {MAX_FILES} notebooks")
    for path in notebooks:
        if path.stat().st_size > MAX_NOTEBOOK_BYTES:
            raise SubmissionError(f"{_show(path, root, label)}: larger than {MAX_NOTEBOOK_BYTES >> 20} MiB")
        problem = json_shape_problem(_read_capped(path, MAX_NOTEBOOK_BYTES))
        if problem:
            raise SubmissionError(f"{_show(path, root, label)}: not a notebook this grader reads ({problem})")
    origins: dict[str, tuple[Path, int]] = {}
    try:
        nb.extract_modules(notebooks, staged.folder, modules=staged.parts, origins=origins)
    except (ValueError, OSError, RecursionError) as e:
        message = str(e)
        for path in sorted(notebooks, key=lambda p: -len(str(p))):  # the grader's paths mean nothing to people
            message = message.replace(str(path), _show(path, root, label))
        raise SubmissionError(text.clean(message)) from None
    staged.notebooks = [_show(path, root, label) for path in notebooks]
    staged.cells = {module: (_show(path, root, label), index + 1) for module, (path, index) in origins.items()}
    staged.notes.append(f"graded the solution cells of {len(notebooks)} notebook(s): {', '.join(staged.notebooks)}")


_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # unrolled: one step per run of plain bytes
_JSON_BRACKETS = re.compile(rb"[\[\]{}]")


def json_shape_problem(data: bytes) -> str:
    """'' when the JSON text `data` (bytes) parses into a bounded number of Python objects, else why
    not: too many objects and arrays, too many values, or nesting too deep. Counted on the text with
    its strings blanked out, before anything is parsed (a few C-speed passes, no Python objects per
    value)."""
    bare = _JSON_STRING.sub(b'""', data)
    containers = bare.count(b"{") + bare.count(b"[")
    if containers > MAX_JSON_CONTAINERS:
        return f"more than {MAX_JSON_CONTAINERS:,} JSON objects and arrays"
    if bare.count(b",") + containers > MAX_JSON_VALUES:
        return f"more than {MAX_JSON_VALUES:,} JSON values"
    depth = deepest = 0
    for bracket in _JSON_BRACKETS.findall(bare):
        depth += 1 if bracket in (b"{", b"[") else -1
        deepest = max(deepest, depth)
    if deepest > MAX_JSON_DEPTH:
        return f"JSON nested more than {MAX_JSON_DEPTH} levels deep"
    return ""


def _read_capped(path: Path, limit: int) -> bytes:
    with open(path, "rb") as f:
        return f.read(limit + 1)


def _show(path: Path, root: Path, label: str) -> str:
    return f"{label}{shown(PurePosixPath(Path(path).relative_to(root)))}"


# --- zips ---------------------------------------------------------------------------------------

def _stage_zip(path: Path, staged: Staged, label: str) -> None:
    """label: '' for a zip handed in, 'hw.zip: ' for a zip inside the folder handed in."""
    if path.stat().st_size > MAX_ZIP_BYTES:
        raise SubmissionError(f"{label}the zip is larger than {MAX_ZIP_BYTES >> 20} MiB")
    _check_end_record(path, label)
    with scratch.folder("unzipped") as tmp:
        names = _extract_zip(path, Path(tmp), staged, label)
        _stage_folder(Path(tmp), staged, label, unzipped=names)


def _check_end_record(path: Path, label: str) -> None:
    """Refuse a zip whose end record declares more entries, or a larger table of contents, than
    staging accepts: read from the last 64 KiB, before zipfile reads the table."""
    with open(path, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - (22 + 0xFFFF)))
        tail = f.read()
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or at + 22 > len(tail):
        raise SubmissionError(f"{label}not a valid zip file (no end record)")
    entries, directory_size = struct.unpack("<HI", tail[at + 10:at + 16])
    if entries > MAX_MEMBERS or directory_size > MAX_CENTRAL_DIRECTORY:  # 0xFFFF: a zip64 count, far more
        raise SubmissionError(f"{label}too many files in the zip (more than {MAX_MEMBERS})")


def _extract_zip(path: Path, dest: Path, staged: Staged, label: str) -> list[str]:
    """Unpack the members staging takes (read_limit), nothing else, into dest -> the names of
    every regular file in the zip."""
    try:
        archive = zipfile.ZipFile(path)
    except Exception as e:  # zipfile parses untrusted bytes: whatever it raises, the file is not a usable zip
        raise SubmissionError(f"{label}not a valid zip file ({shown(e, 120)})") from None
    with archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            raise SubmissionError(f"{label}too many files in the zip ({len(members)})")
        taken = _members_to_take(members, staged, label)
        total = 0
        for name, info in sorted(taken.items()):
            if info.flag_bits & 0x1:
                raise SubmissionError(f"{label}{shown(name)} is encrypted (password-protected): hand in a zip "
                                      f"without a password")
            limit = read_limit(name)
            if info.file_size > limit:
                staged.notes.append(f"skipped {label}{shown(name)}: larger than {limit >> 20} MiB")
                continue
            total += info.file_size
            if total > MAX_UNPACKED:
                raise SubmissionError(f"{label}the zip unpacks to more than {MAX_UNPACKED >> 20} MiB")
            target = dest.joinpath(*PurePosixPath(name).parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                with archive.open(info) as source:
                    _copy_capped(source, target, limit)
            except Exception as e:  # bad CRC, bad compressed data, an unknown method: named with the member
                raise SubmissionError(f"{label}{shown(name)} cannot be unpacked ({shown(e, 160)})") from None
    return [info.filename for info in members if not info.is_dir()]


def _members_to_take(members: list[zipfile.ZipInfo], staged: Staged, label: str) -> dict[str, zipfile.ZipInfo]:
    """{normalised name: ZipInfo} of the regular files staging takes; links and names that leave the
    folder are skipped with a note; a name taken twice, or a file that is also a folder, is an error."""
    taken: dict[str, zipfile.ZipInfo] = {}
    files: set[str] = set()
    folders: set[str] = set()
    for info in members:
        raw = info.filename
        name = raw.replace("\\", "/")  # some Windows tools write backslashes
        parts = PurePosixPath(name).parts
        if name.startswith("/") or ".." in parts:
            staged.notes.append(f"skipped {label}{shown(raw)}: the path leaves the submission folder")
            continue
        if stat.S_ISLNK(info.external_attr >> 16):
            staged.notes.append(f"skipped {label}{shown(raw)}: symbolic links are not accepted")
            continue
        if not parts:
            continue
        key = "/".join(parts)
        folders.update("/".join(parts[:i]) for i in range(1, len(parts)))
        if info.is_dir():
            folders.add(key)
            continue
        files.add(key)
        if not read_limit(name) or name.endswith(".zip"):  # never staged: never unpacked
            continue
        if key in taken:
            raise SubmissionError(f"{label}{shown(key)} is in the zip twice: which one to grade is not clear")
        taken[key] = info
    clash = sorted(files & folders)
    if clash:
        raise SubmissionError(f"{label}{shown(clash[0])} is both a file and a folder in the zip")
    return taken
