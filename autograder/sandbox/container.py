"""Container mode: for runners that put each submission in a throw-away container of its own
(Gradescope, a Docker-based runner) where the kernel refuses what the room needs: the grader is
root there but without CAP_SYS_ADMIN, and the container's seccomp profile refuses new namespaces
and mounts, so bubblewrap cannot build the room.

It is chosen by the deployment, never by a submission: `--container` on a grading command (the
Gradescope bundle's run_autograder passes it) allows it, and it is then used only where the
kernel refuses new namespaces to root (probed here). Everywhere else the full room stays
required, as without the flag.

What still stands in container mode (each child, isolation.enter_part): the submission's own
unprivileged uid (one per submission, never shared), no capabilities, no_new_privs, the seccomp
allow-list, rlimits (memory, CPU, file size, open files, processes of that uid), the OOM killer's
first choice, not dumpable; every process of that uid is killed when a part ends. The grader's
files are kept from that uid by ownership and mode: the grader's folder (package, hidden suites,
rubric, reference solutions) must be closed to other users (root's, mode 0700 or inside such a
folder), else the grader refuses. What the container is relied on for: the file system view,
the network and the other processes of the machine (one submission per container).
"""
import ctypes
import os
import stat
from pathlib import Path

from autograder import PROJECT_ROOT

NAMESPACES = 0x00020000 | 0x04000000 | 0x08000000 | 0x20000000 | 0x40000000  # mount, UTS, IPC, PID, network
PROTECTION = ("container mode (the kernel refused namespaces): the throw-away container is relied on for the "
              "file system, network and other processes; the grader's files root-only (0700)")


# issue 37.4: one process grading many students (batch, nbgrader's autograde) in one container would mix them:
# the class folder, the output folder and the gradebook (with the run's secret) are the grader's files
# there, not closed to every submission's uid as gradescope closes its own; so it is refused outright
MANY_REFUSED = ("{what} grades many submissions in one process, and container mode (--container, or the deployment's container setting) "
                "is for one submission per throw-away container: the class folder, the output folder and the "
                "gradebook (with the run's secret) would be open to every submission's code. Grade each submission "
                "in a container of its own (gradescope --run --container, or grade --container), or run {what} "
                "without container mode where the kernel allows the sandbox's namespaces (docs/sandbox.md)")


def refuse_many(requested: bool, what: str) -> str:
    """Why `what` (a command grading many submissions in one process) may not run in container mode
    ('' when container mode is not requested)."""
    return MANY_REFUSED.format(what=what) if requested else ""


def kernel_refusal():
    """Why this root process may not create namespaces ('' when it may): probed in a child."""
    if os.geteuid() != 0:
        return "not root"
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            libc = ctypes.CDLL(None, use_errno=True)
            failed = libc.unshare(NAMESPACES) != 0
            os.write(write, str(ctypes.get_errno() if failed else 0).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        answer = f.read()
    os.waitpid(pid, 0)
    code = int(answer or 0)
    return f"unshare of new namespaces refused ({os.strerror(code)})" if code else ""


def usable(requested: bool) -> tuple[bool, str]:
    """(True, why) where container mode may stand in for the room; (False, why not) elsewhere.
    requested: the deployment allows it (--container, settings.SandboxSettings.container)."""
    if not requested:
        return False, "--container not given"
    if os.geteuid() != 0:
        return False, "container mode needs root (to give student code a uid of its own)"
    refusal = kernel_refusal()
    if not refusal:
        return False, "the kernel allows namespaces here: the full room is required"
    return True, refusal


def check_grader_files(paths: tuple[Path, ...] = (PROJECT_ROOT,)) -> str:
    """SandboxUnavailable-worthy text when a grader-only folder is reachable by other users, else ''."""
    for path in paths:
        if not _closed_to_others(os.path.realpath(path)):
            return (f"container mode needs the grader's files closed to other users: {path} (or a folder "
                    f"above it) must be owned by root with no access for others (chmod 700 {path})")
    return ""


def _closed_to_others(path):
    """path, or a folder above it, is root's and gives others no way in (no o+x on a folder)."""
    while True:
        try:
            info = os.stat(path)
        except OSError:
            return False
        if info.st_uid == 0 and stat.S_ISDIR(info.st_mode) and not info.st_mode & (stat.S_IXOTH | stat.S_IXGRP):
            return True
        if path == os.path.dirname(path):
            return False
        path = os.path.dirname(path)


# what a session leader (inside the room's package) and the grader both do after a part or session
from autograder.inside.uid_cleanup import (  # noqa: E402,F401  (the names, for the grader's callers)
    become_subreaper,
    clear_uid,
    end_processes,
    kill_uid,
    processes_of,
    remove_files_of,
    writable_folders,
)
