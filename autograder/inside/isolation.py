"""The walls each session leader builds around itself inside the room (room.py), before any
student code runs. One leader per submission; it forks the child its parts take turns in (a
fresh one when needed).

    intermediate: unshare(PID [+ USER when the grader is not root]) -> fork -> leader (PID 1)
    leader:       new mount and UTS namespaces and its own /proc; the submission written to
                  /run/submission, then made read-only; a fresh anonymous session keyring. It
                  keeps its privileges (it never runs student code) and forks one child per part.
    part child:   new mount, network and IPC namespaces with a fresh /tmp and /dev/shm; rlimits;
                  the OOM killer's first choice; the submission's own uid (one per submission,
                  never shared in a run); no capabilities; no new privileges; the seccomp
                  allow-list (syscalls.py). When it ends, the leader kills all it left behind.

Where the grader could not build the room (only with --unsafe-no-sandbox), `enter` falls back
to a process group, rlimits and a private folder, and `protections` says which walls stood. In
container mode (container.py) the same, plus the part child's own uid and no capabilities.
"""
import ctypes
import os
import platform
import resource
import signal
import struct

from autograder.inside import syscalls

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38
KEYCTL_JOIN_SESSION_KEYRING = 1
KEYCTL = {"x86_64": 250, "aarch64": 219, "riscv64": 219, "ppc64le": 271, "s390x": 280, "i686": 288, "armv7l": 311}
PROCESSES = 64  # processes (and threads) a session's code may have at once
WORKSPACE = "/run/submission"  # a mount point the room provides

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result, what):
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source, target, fstype, flags, data=None):
    _check(_libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(),
                       ctypes.c_ulong(flags), data and data.encode()), f"mount {target}")


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def new_pid_namespace(uid, user_namespace):
    """In the intermediate: its next child is PID 1 of a new PID namespace (and, without root, of a
    new user namespace in which `uid` is this process's outside uid). True when it worked."""
    outer_uid, outer_gid = os.getuid(), os.getgid()
    flags = CLONE_NEWPID | (CLONE_NEWUSER if user_namespace else 0)
    if _libc.unshare(flags) != 0:
        return False
    if user_namespace:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {outer_uid} 1")
        _write("/proc/self/gid_map", f"{uid} {outer_gid} 1")
    return True


# ---------------------------------------------------------------- the submission, from its memfd

def read_files(fd, limit=16 << 20):
    """The staged submission the grader packed (files.pack) -> {relative path: bytes}."""
    data = os.pread(fd, limit + 1, 0)
    if len(data) > limit:
        raise OSError("submission larger than the sandbox accepts")
    files, at = {}, 0
    while at < len(data):
        name_len, size = struct.unpack_from(">IQ", data, at)
        at += 12
        name = data[at:at + name_len].decode("utf-8")
        at += name_len
        parts = name.split("/")
        if name.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise OSError(f"refused path {name!r}")
        files[name] = data[at:at + size]
        at += size
    return files


def pack(files: dict[str, bytes]) -> bytes:
    """{relative path: bytes} -> the bytes read_files takes (grader side)."""
    out = bytearray()
    for name, content in files.items():
        encoded = name.encode("utf-8")
        out += struct.pack(">IQ", len(encoded), len(content)) + encoded + content
    return bytes(out)


def _write_tree(files, folder):
    for rel, data in files.items():
        path = os.path.join(folder, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)


# ---------------------------------------------------------------- the leader's walls

# Native code: every folder a part child can write to, and the submission's, is mounted noexec, so no shared object
# the submission brings (as data: base64 in a module or a .txt, written out) can be mapped executable and run.
# Before, the part's own /tmp was not: a Python extension written there from a string and imported
# (sys.path.insert(0, "/tmp"); import own_ext) ran native code in the child, code neither the grader's reading nor
# the counter sees, with no name the reading lists
# (tests/test_compiled_code.py::test_no_native_code_of_the_submission_s_own_runs_in_the_room).


def enter_session(request, submission_fd, in_namespaces):
    """Build the session's walls around this process (the leader, which never runs student
    code and keeps its privileges inside them) -> (workspace, protections)."""
    files = read_files(submission_fd)
    os.close(submission_fd)
    protections = [request["group"]] if request.get("group") else []
    if in_namespaces:
        _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWUTS), "unshare")
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        _cover_key_lists()
        workspace = WORKSPACE
        # no execution from it either (Native code, above): a submitted file holding a shared object
        _mount("tmpfs", workspace, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755,size=32m")
        _write_tree(files, workspace)
        _mount(None, workspace, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755")
        protections += ["allow-list file system (Python and its packages read-only, nothing else of the host)",
                        "pid, mount, network, IPC and UTS namespaces", "submission read-only"]
    else:
        os.setpgid(0, 0)
        workspace = os.path.join(request["scratch"], "submission")
        os.umask(0o027)  # the scratch's group (container mode: the submission's uid) reads, nobody else
        os.makedirs(workspace)
        _write_tree(files, workspace)
        protections += ["process group", "private temporary folder"]
    if _new_session_keyring():
        protections.append("fresh session keyring")
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    die_with_parent(request["parent"])
    return workspace, protections


def _cover_key_lists():
    """/proc/keys lists every key whose owner uid matches (without a user namespace of its own
    uid, the grader's keys): empty files over both lists."""
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755,size=64k")
    empty = "/tmp/.empty"
    open(empty, "w").close()
    for path in ("/proc/keys", "/proc/key-users"):
        if os.path.exists(path):
            _mount(empty, path, None, MS_BIND)


def enter_part(request, in_namespaces):
    """In a part's child, before any student code: a fresh /tmp, /dev/shm, IPC and network of its
    own, its limits, the submission's uid, no capabilities, no new privileges, the syscall filter
    -> the protections that stood."""
    uid, root = int(request["uid"]), os.geteuid() == 0
    own_uid = in_namespaces or root and request.get("container")  # container mode: a uid of its own, no room
    protections = []
    if in_namespaces:
        _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC), "unshare")
        _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=1777,size=64m")  # Native code
        if os.path.isdir("/dev/shm"):
            _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=1777,size=16m")
        protections.append("a fresh /tmp, /dev/shm, IPC and network for each part")
    on_gpu = request.get("device", "cpu") != "cpu"
    # a process limit only where it counts this session alone: a uid of its own as root, or (without
    # root) the session's own user namespace on a kernel that counts per namespace
    processes = bool(own_uid) and (root or (in_namespaces and _nproc_per_user_namespace()))
    if _limit_all(processes) and limit_part(request["memory_mb"], request["timeout"], on_gpu):
        memory = "CPU memory by control group only" if on_gpu else f"memory {int(request['memory_mb'])} MiB"
        counted = f", {PROCESSES} processes" if processes else ""
        protections.append(f"rlimits ({memory}, CPU, file size, open files{counted})")
    if _oom_first():
        protections.append("first to go if the machine runs out of memory")
    if own_uid:
        _drop_to(uid, root)
        protections.append(f"uid {uid} (this submission's own)" + ("" if root else " in a user namespace"))
        protections.append("no capabilities")
    # not dumpable (inherited from the leader): its /proc files stay root's, so student code can
    # neither lower its oom_score_adj nor be read through /proc/PID/mem by another process
    die_with_parent(request["parent"])
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    protections.append("no new privileges")
    if request.get("seccomp"):
        syscalls.install(bytes.fromhex(request["seccomp"]))
        protections.append("seccomp system-call allow-list")
        if request.get("container") and request.get("device", "cpu") == "cpu":  # (syscalls: file_exec=False)
            protections.append("no library loaded after the fork server's (no executable mapping of a file)")
    os.environ.clear()
    os.environ.update(CHILD_ENVIRONMENT)
    return protections


# the part child's whole environment. TORCHINDUCTOR_CACHE_DIR: torch.compile asks for inductor's cache folder
# on every call (its bisector's status file; part_reset.compile_eagerly: nothing is compiled), making it if missing
# and writing its name into the environment: without one named, /tmp/torchinductor_<user>, which every part that
# called torch.compile left in its /tmp, with a changed environment, and was retired for (tests/test_compiled_code.py).
# /tmp exists wherever a child runs (the part's own in the room), and asking for it writes nothing
CHILD_ENVIRONMENT = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "TMPDIR": "/tmp",
                     "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
                     "TORCHINDUCTOR_CACHE_DIR": "/tmp", "TORCH_COMPILE_DISABLE": "1"}


def _drop_to(uid, root):
    if root:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    _drop_capabilities()


def _drop_capabilities():
    """Empty effective, permitted and inheritable sets (in a user namespace the creator keeps them
    through a change to its own mapped uid)."""
    header = struct.pack("Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = ctypes.create_string_buffer(24)
    _check(_libc.capset(ctypes.c_char_p(header), data), "capset")


def _new_session_keyring():
    """Leave whatever session keyring the grader was started in (pam_keyinit, systemd): join a new,
    empty, anonymous one. The seccomp filter then forbids every keyring call."""
    number = KEYCTL.get(platform.machine())
    return number is not None and _libc.syscall(number, KEYCTL_JOIN_SESSION_KEYRING, None) >= 0


def _limit(kind, value, above=0):
    """Soft limit `value`, hard limit `value + above` (where the inherited hard limit allows)."""
    try:
        soft, hard = resource.getrlimit(kind)
        want = value + above
        hard = want if hard == resource.RLIM_INFINITY or os.geteuid() == 0 else min(want, hard)
        resource.setrlimit(kind, (min(value, hard), hard))
        return True
    except (ValueError, OSError):
        return False


def _nproc_per_user_namespace():
    """Without root every session is its own user namespace, mapped onto the grader's uid. From
    Linux 5.14 RLIMIT_NPROC counts the processes of a uid per user namespace (so the limit holds for
    the session alone, never the grader's own processes); before, it counted every process of the
    grader's uid on the host, so it is not set there (and not claimed)."""
    try:
        major, minor = (int(x) for x in os.uname().release.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= (5, 14)


def deaf_to_signals():
    """The leader is PID 1 of its namespace: the kernel delivers a signal sent from inside only if
    PID 1 installed a handler for it. Python installs one for SIGINT (and the fork server may hold
    others): put every catchable signal back to its default, so a part's kill(1, SIGINT) is dropped.
    A handler Python did not install itself (getsignal says None: one set by C code) is reset too.
    (Not blocked: a blocked signal is queued rather than dropped, and real-time ones would fill the
    per-user queue, the grader's own without root.)"""
    for number in range(1, signal.NSIG):
        if number in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            if signal.getsignal(number) not in (signal.SIG_DFL, signal.SIG_IGN):
                signal.signal(number, signal.SIG_DFL)
        except (OSError, ValueError):
            pass


def _limit_all(per_uid_processes):
    limits = [(resource.RLIMIT_FSIZE, 16 << 20), (resource.RLIMIT_NOFILE, 256), (resource.RLIMIT_CORE, 0)]
    if per_uid_processes:
        limits.append((resource.RLIMIT_NPROC, PROCESSES))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    return all(_limit(kind, value) for kind, value in limits)


def limit_part(memory_mb, timeout, on_gpu=False):
    """In a part's child, before any student code: its memory (address space) and CPU time. On a
    GPU no address-space limit: the CUDA driver reserves tens of GiB of address space it never
    uses; the control group (client.py) still caps the memory actually used."""
    memory = on_gpu or _limit(resource.RLIMIT_AS, _address_space() + (int(memory_mb) << 20))
    # the kernel's SIGXCPU at the soft limit, its SIGKILL only CPU_HARD_ABOVE s later: a SIGKILL
    # from it is never the first word (the grader's own CPU-time check comes first), and the part
    # cannot move either (the system-call filter refuses setrlimit and a writing prlimit64)
    return memory and _limit(resource.RLIMIT_CPU, int(timeout) + 5, above=CPU_HARD_ABOVE)


CPU_HARD_ABOVE = 5  # seconds of CPU time between RLIMIT_CPU's soft (SIGXCPU) and hard (SIGKILL) limits


def _address_space():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def die_with_parent(parent_pid: int) -> None:
    """SIGKILL this process when its parent dies. Cleared by the kernel on a change of uid, so the
    leader arms it again after dropping privileges."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent was already gone before the signal was armed
        os._exit(1)


def _oom_first():
    """The kernel's OOM killer takes the student's processes first, never the grader's. Written
    while privileged, 1000 is also the floor the student's code cannot set back. Raising one's own
    score needs no privilege, but a process that is not dumpable (the leader made itself so, and
    the child inherits it) has /proc files owned by root outside a user namespace's reach: the
    child is dumpable for the one write, before any student code, then not again."""
    _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    try:
        _write("/proc/self/oom_score_adj", "1000")
        return True
    except OSError:
        return False
    finally:
        _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def close_all_but(keep):
    for fd in range(3, 1024):
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
