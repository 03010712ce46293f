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
import shutil
import stat
import time

from autograder import PROJECT_ROOT

NAMESPACES = 0x00020000 | 0x04000000 | 0x08000000 | 0x20000000 | 0x40000000  # mount, UTS, IPC, PID, network
PROTECTION = ("container mode (the kernel refused namespaces): the throw-away container is relied on for the "
              "file system, network and other processes; the grader's files root-only (0700)")


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


def check_grader_files(paths=(PROJECT_ROOT,)):
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


def kill_uid(uid):
    """Kill every process of uid (a part's leftovers, in whatever process group): a helper becomes
    uid and signals all it may signal, i.e. that uid's processes (kill(-1) spares the sender)."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            for _ in range(3):  # a fork racing the first kill is caught by the next
                os.kill(-1, 9)
        except OSError:
            pass
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def processes_of(uid):
    """The pids of every process (zombies included) whose real or effective uid is uid."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as f:
                for line in f:
                    if line.startswith("Uid:"):
                        if str(uid) in line.split()[1:3]:
                            found.append(int(name))
                        break
        except OSError:  # gone meanwhile
            continue
    return found


def end_processes(uid, patience=30.0):
    """Kill every process of uid and wait until none is left (a zombie this process may reap is
    reaped; orphans come here, a child subreaper) -> True when none is left within patience."""
    deadline = time.monotonic() + patience
    while True:
        left = processes_of(uid)
        if not left:
            return True
        if time.monotonic() > deadline:
            return False
        kill_uid(uid)
        for pid in left:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # not ours: its own parent (or init) reaps it
                pass
        time.sleep(0.002)


def become_subreaper():
    """Orphans of the processes below this one come here (so they can be reaped and counted)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def writable_folders(top="/"):
    """Every folder that any user may write (others' write bit: /tmp, /var/tmp, /dev/shm, ...),
    found once: where a submission's uid can leave files. Folders others cannot enter are not
    walked (nothing below them is within that uid's reach)."""
    found = []
    for root, dirs, _ in os.walk(top):
        kept = []
        for name in dirs:
            path = os.path.join(root, name)
            if path in SKIPPED:
                continue
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISDIR(info.st_mode) or not info.st_mode & stat.S_IXOTH:
                continue
            if info.st_mode & stat.S_IWOTH:
                found.append(path)
            kept.append(name)
        dirs[:] = kept
    return found


SKIPPED = {"/proc", "/sys"}
PR_SET_CHILD_SUBREAPER = 36


def remove_files_of(uid, folders):
    """Remove everything uid left in the folders any user may write (files, folders, links, sockets):
    nothing a part wrote there outlives it. -> the number of entries removed."""
    removed = 0
    for folder in folders:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
                removed += 1
            except OSError:
                continue
    return removed + _remove_ipc_of(uid)


IPC = (("shm", "shmid", "shmctl"), ("msg", "msqid", "msgctl"), ("sem", "semid", "semctl"))


def _remove_ipc_of(uid):
    """SysV shared memory, queues and semaphores of uid (there is no IPC namespace in container mode)."""
    libc, removed = ctypes.CDLL(None, use_errno=True), 0
    for kind, key, call in IPC:
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                header, *rows = [line.split() for line in f]
        except (OSError, ValueError):
            continue
        for row in rows:
            entry = dict(zip(header, row))
            if entry.get("uid") == str(uid) and entry.get(key, "").isdigit():
                removed += getattr(libc, call)(int(entry[key]), 0, 0) == 0  # IPC_RMID
    return removed


def clear_uid(uid, folders):
    """After a part or a session: no process of uid left (waited for), nothing it wrote left in a
    folder others may write, none of its SysV IPC objects -> True when all processes were gone."""
    gone = end_processes(uid)
    remove_files_of(uid, folders)
    return gone
