"""The grader's own temporary folders and files: each named after the process that made it, and
swept once that process is gone.

A folder made here is `<kind>-<pid>.<start>.<pidns>-<label><random>` in the temporary folder
(tempfile's: TMPDIR, else /tmp), mode 0700: `pid` the process that made it, `start` that process's
start time (field 22 of /proc/PID/stat, clock ticks since boot: a pid the kernel gives to another
process later has another start time) and `pidns` the inode of its PID namespace (another
namespace's pid 17 is not ours). `with folder(kind)` removes it when the block ends; a process
killed with SIGKILL (an instructor's Ctrl-\\, the out-of-memory killer, a cancelled CI job) leaves
it behind, and `sweep()` (every Engine, when it is made: engine.py) removes the folders whose owner
is gone. What it touches, and nothing else:

- a name of one of KINDS whose namespace is this process's;
- a directory, not a link (read with lstat; shutil.rmtree then works through descriptors and
  refuses a folder swapped for a link meanwhile), owned by this process's effective uid;
- whose owner is gone: /proc/PID/stat missing, or naming another start time. An owner that is
  alive (another instructor's batch, a pytest-xdist worker, a zombie not yet reaped) keeps its
  folder, and so does one whose stat cannot be read for any other reason.

So two graders on one machine never remove each other's live folders: a folder exists only while
its owner can be found alive under its name, from the moment it is made (by the owner itself).

The same holds for a file written whole or not at all (`replaced(path)`: the batch's outputs, the
class report, an LMS export, the environment check's cache): it is written as
`.partial-<pid>.<start>.<pidns>-<name>.<random>` beside `path` (mode 0600) and moved onto `path`
when complete, removed if the writing fails; the first such write of a process in a folder removes
the partial files there whose owner is gone. tests/test_scratch_sweep.py.
"""
from __future__ import annotations

import atexit
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

# every kind of folder the grader makes in the temporary folder (docs/sandbox.md, "The grader's
# temporary files"): staging (grading.py), a zip unpacked (submission.py), nbgrader's cells as
# modules (deploy/nbgrader_plugins.py), a selftest entry applied (selftest/), a session's folder
# where there is no room (sandbox/session.py), torch's cache folder (torch_cache)
KINDS = ("staged", "unzipped", "nbgrader-modules", "selftest", "ch03-session", "torch-cache")
PARTIAL = ".partial"  # a file being written (replaced): the only kind that is a file, not a folder
_NAME = re.compile(r"(?P<kind>" + "|".join(map(re.escape, (*KINDS, PARTIAL)))
                   + r")-(?P<pid>\d+)\.(?P<start>\d+)\.(?P<ns>\d+)-")
_SWEPT: dict[int, set[str]] = {}  # {pid: folders this process has swept of partial files}


def start_time(pid: int) -> int:
    """The process's start time (clock ticks since boot, /proc/PID/stat field 22); OSError where it
    cannot be read (FileNotFoundError/ProcessLookupError: no such process)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()  # the command's name, in parentheses, may hold anything
    return int(fields[19])  # fields[0] is field 3 (the state)


def _pid_namespace() -> str | None:
    try:
        link = os.readlink("/proc/self/ns/pid")  # 'pid:[4026531836]'
    except OSError:
        return None
    digits = link[link.find("[") + 1:-1]
    return digits if digits.isdigit() else None


def owner() -> str | None:
    """This process as a name carries it ('pid.start.pidns'), read afresh (a forked worker is its own
    owner, never its parent); None where /proc cannot tell (then nothing made here is ever swept)."""
    pid, ns = os.getpid(), _pid_namespace()
    try:
        start = start_time(pid)
    except (OSError, ValueError, IndexError):
        return None
    return f"{pid}.{start}.{ns}" if ns is not None else None


def make(kind: str, label: str = "") -> str:
    """A new folder of this kind (one of KINDS), mode 0700, named after this process; the caller removes it."""
    assert kind in KINDS, kind
    me = owner()
    return tempfile.mkdtemp(prefix=f"{kind}-{me}-{label}" if me else f"{kind}-{label}")


@contextmanager
def folder(kind: str, label: str = "") -> Iterator[str]:
    """make(kind, label), removed (whatever it holds) when the block ends."""
    path = make(kind, label)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


TORCH_CACHE_ENV = "TORCHINDUCTOR_CACHE_DIR"
_TORCH_CACHE: dict[int, str] = {}  # {pid: the torch-cache folder that process made}


def torch_cache() -> str | None:
    """This process's folder for torch's compile cache -> its path (None where torch already has one).

    `import torch._dynamo` (the emulated GPU's FakeTensorMode; a stand-in built on the meta device)
    makes inductor's cache folder at once: $TMPDIR/torchinductor_<user>, mode 0755, never removed, in
    the machine's shared temporary folder (on Gradescope, beside the submission's own files). Unless
    TORCHINDUCTOR_CACHE_DIR says where, which this sets for the process (and so for its forked workers
    and a container-mode fork server, client.Sandbox): a folder of this process's own, mode 0700,
    removed when it exits and swept (sweep) when it was killed. A process that already imported
    torch._dynamo, or was given TORCHINDUCTOR_CACHE_DIR, keeps its choice (the caller's). Once per
    process; the grader never compiles, so nothing is written there."""
    me = os.getpid()
    if me in _TORCH_CACHE:
        return _TORCH_CACHE[me]
    if os.environ.get(TORCH_CACHE_ENV) or "torch._dynamo" in sys.modules:
        return None
    try:
        path = make("torch-cache")
    except OSError:  # no writable temporary folder: torch's own import will say so
        return None
    _TORCH_CACHE[me] = os.environ[TORCH_CACHE_ENV] = path
    atexit.register(_remove_torch_cache, me, path)
    return path


def _remove_torch_cache(pid: int, path: str) -> None:
    if os.getpid() == pid:  # never a forked worker's exit: the folder is its parent's
        shutil.rmtree(path, ignore_errors=True)


def _gone(pid: int, start: int) -> bool:
    """True only when the kernel says so: no such process, or another process under that pid."""
    try:
        return start_time(pid) != start
    except (FileNotFoundError, ProcessLookupError):
        return True
    except (OSError, ValueError, IndexError):  # unreadable for another reason: assume alive
        return False


@contextmanager
def replaced(path: str | Path, encoding: str | None = "utf-8", newline: str | None = None) -> Iterator[IO[str]]:
    """A text file to write path with: a partial file beside it, moved onto path when the block ends,
    removed (and path untouched) when it raises. The first call of a process in a folder sweeps
    that folder first (partial files only)."""
    path = Path(path)
    folder = str(path.parent)
    swept = _SWEPT.setdefault(os.getpid(), set())
    if folder not in swept:
        sweep(folder, partial=True)
        swept.add(folder)
    me = owner()
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f"{PARTIAL}-{me}-{path.name}." if me else f"{PARTIAL}-{path.name}.")
    try:
        with open(fd, "w", encoding=encoding, newline=newline) as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def sweep(where: str | None = None, partial: bool = False) -> list[str]:
    """Remove the folders of KINDS (with partial: the partial files instead) in `where` (default: the
    temporary folder) that this uid's processes of this PID namespace made and left behind when
    they died -> the paths removed."""
    where = where if where is not None else tempfile.gettempdir()
    ns, uid = _pid_namespace(), os.geteuid()
    if ns is None:
        return []
    removed = []
    try:
        entries = list(os.scandir(where))
    except OSError:
        return []
    for entry in entries:
        found = _NAME.match(entry.name)
        if not found or found["ns"] != ns or (found["kind"] == PARTIAL) != partial:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        kind_ok = stat.S_ISREG(info.st_mode) if partial else stat.S_ISDIR(info.st_mode)  # never a link
        if not kind_ok or info.st_uid != uid or not _gone(int(found["pid"]), int(found["start"])):
            continue
        if partial:
            try:
                os.unlink(entry.path)
            except OSError:
                continue
        else:
            shutil.rmtree(entry.path, ignore_errors=True)  # never follows a link (descriptor-based on Linux)
        if not os.path.lexists(entry.path):
            removed.append(entry.path)
    return removed
