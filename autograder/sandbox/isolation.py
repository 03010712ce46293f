"""Walls around the child that runs student code (Linux).

With root (or user namespaces) the child gets its own PID, mount, network, IPC and UTS
namespaces: it is PID 1 of an empty process tree (killing it kills everything it started),
sees no network, and sees the grader's files (project, hidden suites, solutions, other
submissions, results, home) replaced by empty read-only tmpfs, except the Python installation
it needs. It then drops to an unprivileged uid of its own. Where the kernel refuses, the child
falls back to a process group, rlimits and a private temporary folder, and `protections()` says
which walls stood.
"""
import ctypes
import os
import resource
import signal

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
SYS_MOUNT_SETATTR, AT_FDCWD, AT_RECURSIVE = 442, -100, 0x8000  # mount_setattr(2), Linux 5.12+
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID = 0x1, 0x2
SANDBOX_UID_BASE = 61000
PROCESSES = 64  # processes (and threads) the child's code may have at once
WRITABLE = ("/tmp", "/dev/shm")  # fresh, empty and size-capped inside the namespace

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result, what):
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source, target, fstype, flags, data=None):
    _check(_libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(),
                       ctypes.c_ulong(flags), data and data.encode()), f"mount {target}")


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _read_only_everywhere():
    """Make every mount this namespace inherited read-only (and nosuid), recursively, in one step.

    Without it the child could write wherever the host lets any uid write (/run/lock, ...):
    files that outlive it and that the next student's child could read.
    """
    attr = _MountAttr(MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0, 0, 0)
    return _libc.syscall(ctypes.c_long(SYS_MOUNT_SETATTR), ctypes.c_long(AT_FDCWD), b"/",
                         ctypes.c_long(AT_RECURSIVE), ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr))) == 0


def new_pid_namespace():
    """Called in the intermediate process: its next child becomes PID 1 of a new namespace."""
    return _libc.unshare(CLONE_NEWPID) == 0


def _under(path, folder):
    return os.path.commonpath([path, folder]) == folder


def _hide(paths, keep):
    """Cover each path with an empty tmpfs, then bind back (read-only) the kept folders inside it."""
    paths = sorted({os.path.realpath(p) for p in paths if os.path.isdir(p)})
    paths = [p for p in paths if not any(q != p and _under(p, q) for q in paths)]
    keep = sorted({os.path.realpath(k) for k in keep if os.path.isdir(k)})
    keep_fds = {k: os.open(k, os.O_PATH | os.O_DIRECTORY) for k in keep if any(_under(k, p) for p in paths)}
    for path in paths:
        _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=64m")
    for k, fd in keep_fds.items():
        os.makedirs(k, mode=0o755, exist_ok=True)
        _mount(f"/proc/self/fd/{fd}", k, None, MS_BIND | MS_REC)
        _mount(None, k, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        os.close(fd)
    for path in paths:
        if path not in WRITABLE:
            _mount(None, path, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, "mode=755")


def _read_tree(folder, limit=16 << 20):
    """The staged submission as {relative path: bytes}: regular files only, links skipped."""
    files, total = {}, 0
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
        for name in names:
            path = os.path.join(root, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, "rb") as f:
                data = f.read(limit - total + 1)
            total += len(data)
            if total > limit:
                raise OSError("submission larger than the sandbox accepts")
            files[os.path.relpath(path, folder)] = data
    return files


def _write_tree(files, folder, uid):
    for rel, data in files.items():
        path = os.path.join(folder, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    if uid is not None:
        for root, dirs, names in os.walk(folder):
            for name in dirs + names + [""]:
                os.chown(os.path.join(root, name), uid, uid)


def _limit(kind, value):
    try:
        soft, hard = resource.getrlimit(kind)
        hard = value if hard == resource.RLIM_INFINITY or os.geteuid() == 0 else min(value, hard)
        resource.setrlimit(kind, (min(value, hard), hard))
        return True
    except (ValueError, OSError):
        return False


def _address_space():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def enter(request, output_fd, keep_fds, in_pid_namespace):
    """Put this process (the child, right after fork) inside the walls; return (workspace, protections)."""
    parent_pid = os.getppid()
    die_with_parent(parent_pid)
    protections = [request["group"]] if request.get("group") else []  # born in the fork server's group
    files = _read_tree(request["submission"])
    root = os.geteuid() == 0
    namespaces = in_pid_namespace and _libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) == 0
    if namespaces:
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        read_only = _read_only_everywhere()
        # /run: where local services keep their Unix sockets, which no network namespace covers
        _hide(request["hide"] + ["/tmp", "/var/tmp", "/dev/shm", "/run", os.path.expanduser("~")], request["keep"])
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        workspace = "/tmp/submission"
        protections += ["pid, mount, network, IPC and UTS namespaces", "grader files hidden"]
        if read_only:
            protections.append("host file system read-only")
    else:
        os.setpgid(0, 0)
        workspace = os.path.join(request["scratch"], "submission")
        protections += ["process group", "private temporary folder"]
    os.makedirs(workspace, exist_ok=True)
    uid = SANDBOX_UID_BASE + int(request.get("slot", 0)) if root else None
    _write_tree(files, workspace, uid)

    memory = _address_space() + (int(request["memory_mb"]) << 20)
    limits = [
        (resource.RLIMIT_AS, memory),
        (resource.RLIMIT_FSIZE, 16 << 20),
        (resource.RLIMIT_NOFILE, 256),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_CPU, int(request["timeout"]) + 5),
    ]
    if uid is not None:
        limits.append((resource.RLIMIT_NPROC, PROCESSES))
    if all(_limit(kind, value) for kind, value in limits):
        protections.append(f"rlimits (memory {request['memory_mb']} MiB, processes, file size, open files)")
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    _close_all_but(keep_fds)

    os.environ.clear()
    os.environ.update({"PATH": "/usr/bin:/bin", "HOME": workspace, "LANG": "C.UTF-8", "TMPDIR": workspace,
                       "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"})
    if _oom_first():
        protections.append("first to go if the machine runs out of memory")
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        protections.append(f"unprivileged uid {uid}")
    die_with_parent(parent_pid)
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0:
        protections.append("no new privileges")
    os.chdir(workspace)
    return workspace, protections


def die_with_parent(parent_pid):
    """SIGKILL this process when its parent dies (a grader killed with -9 leaves nothing behind).
    Cleared by the kernel on a change of uid, so the child calls it again after dropping privileges."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent was already gone before the signal was armed
        os._exit(1)


def _oom_first():
    """The memory limit is per process (and there may be 64 of them): should the machine still run
    short, the kernel's OOM killer takes the student's processes, not the grader's. Written while
    privileged, 1000 is also the floor below which the student's code cannot set it back."""
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
        return True
    except OSError:
        return False


def _close_all_but(keep):
    for fd in range(3, 1024):
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


