"""Container mode's clean-up (sandbox/container.py chooses the mode): nothing of a submission's uid
outlives the part or session it belongs to. Used by the session leader after each part and by the
grader when a session or the sandbox closes.

After a part: every process of the uid is killed and waited for until none is left (orphans come
to a child subreaper, the leader or the grader, and are reaped); whatever the uid left in a folder
any user may write (found once per run) and its SysV IPC objects are removed.
"""
import ctypes
import os
import shutil
import stat
import time


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


def become_subreaper() -> None:
    """Orphans of the processes below this one come here (so they can be reaped and counted)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def writable_folders(top: str = "/") -> list[str]:
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
            entry = dict(zip(header, row, strict=False))  # a row may lack trailing fields
            if entry.get("uid") == str(uid) and entry.get(key, "").isdigit():
                removed += getattr(libc, call)(int(entry[key]), 0, 0) == 0  # IPC_RMID
    return removed


def clear_uid(uid: int, folders: list[str]) -> bool:
    """After a part or a session: no process of uid left (waited for), nothing it wrote left in a
    folder others may write, none of its SysV IPC objects -> True when all processes were gone."""
    gone = end_processes(uid)
    remove_files_of(uid, folders)
    return gone
