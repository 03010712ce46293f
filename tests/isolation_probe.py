"""Copied into a submission as probe.py by tests/test_isolation.py: looks at the sandbox from the
inside, as hostile student code would, and reports what it found as plain data."""
import ctypes
import errno
import os
import platform
import socket
import subprocess
import sys

SKIP = ("/proc", "/sys/devices/system/cpu", "/dev")
_held = []  # what plant() keeps alive in this process


def outside(allowed, cap=100):
    """(files seen, [paths seen that lie under none of the allowed roots])."""
    allowed = [a.rstrip("/") or "/" for a in allowed]
    count, strays = 0, []

    def ok(path):
        return any(path == a or path.startswith(a + "/") for a in allowed)

    for root, dirs, names in os.walk("/"):
        if root in SKIP or any(root.startswith(s + "/") for s in SKIP):
            dirs[:] = []
            continue
        for name in dirs + names:
            path = os.path.join(root, name)
            count += 1
            # a parent folder of an allowed root is seen (its name), never its other contents
            if not ok(path) and not any(a.startswith(path + "/") for a in allowed) and len(strays) < cap:
                strays.append(path)
    return count, strays


def listdir(path):
    return sorted(os.listdir(path))


SYSCALLS = {  # x86_64 and arm64 numbers
    "unshare": (272, 97), "setns": (308, 268), "mount": (165, 40), "ptrace": (101, 117),
    "bpf": (321, 280), "perf_event_open": (298, 241), "keyctl": (250, 219), "add_key": (248, 217),
    "request_key": (249, 218), "io_uring_setup": (425, 425), "userfaultfd": (323, 282),
    "process_vm_readv": (310, 270), "chroot": (161, 51), "kexec_load": (246, 104),
}


def forbidden_calls():
    """{name: errno} for calls student code never needs (0: it worked)."""
    libc = ctypes.CDLL(None, use_errno=True)
    column = 0 if platform.machine() == "x86_64" else 1
    found = {}
    for name, numbers in SYSCALLS.items():
        args = {"unshare": (0x10000000,), "mount": (b"none", b"/tmp", b"tmpfs", 0, None),
                "ptrace": (0, 0, 0, 0), "keyctl": (0, -3), "chroot": (b"/tmp",)}.get(name, (0, 0, 0, 0))
        result = libc.syscall(numbers[column], *args)
        found[name] = 0 if result >= 0 else ctypes.get_errno()
    # clone with a new user namespace, the way a fork would do it
    column_clone = 56 if column == 0 else 220
    result = libc.syscall(column_clone, 0x10000000 | 17, 0, 0, 0, 0)
    if result == 0:
        os._exit(0)
    found["clone(CLONE_NEWUSER)"] = 0 if result > 0 else ctypes.get_errno()
    if hasattr(os, "unshare"):  # Python 3.12+
        try:
            os.unshare(os.CLONE_NEWUSER)
            found["os.unshare"] = 0
        except OSError as e:
            found["os.unshare"] = e.errno
    return found


def keys():
    """What the kernel's key store shows this process."""
    try:
        with open("/proc/keys") as f:
            return f.read()
    except OSError as e:
        return f"unreadable: {errno.errorcode.get(e.errno)}"


def identity():
    return {"uid": os.getuid(), "gid": os.getgid(), "pid": os.getpid(), "ppid": os.getppid(),
            "cap_eff": _status("CapEff"), "no_new_privs": _status("NoNewPrivs"), "seccomp": _status("Seccomp")}


def _status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return line.split(":", 1)[1].strip()
    return ""


def plant(token):
    """Leave everything a process can leave: files, shared memory, SysV IPC, a listening abstract
    socket, a background process; print the token and keep it in memory."""
    print(f"PLANTED-{token}", flush=True)
    _held.append(f"PLANTED-{token}".encode())
    done = []
    for folder in ("/tmp", "/dev/shm"):
        try:
            with open(os.path.join(folder, f"planted-{token}"), "w") as f:
                f.write(token)
            done.append(folder)
        except OSError:
            pass
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.shmget(0x0C03, 4096, 0o1666) >= 0:  # IPC_CREAT | 0666
        done.append("shm")
    if libc.msgget(0x0C03, 0o1666) >= 0:
        done.append("msg")
    server = socket.socket(socket.AF_UNIX)
    server.bind(f"\0planted-{token}")
    server.listen()
    _held.append(server)
    done.append("socket")
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    done.append("process")
    return done


def look(token):
    """What of plant()'s leftovers this process can find."""
    found = []
    for folder in ("/tmp", "/dev/shm"):
        if os.path.exists(os.path.join(folder, f"planted-{token}")):
            found.append(folder)
    for kind in ("shm", "msg"):
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                if len(f.read().splitlines()) > 1:
                    found.append(kind)
        except OSError:
            pass
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(f"\0planted-{token}")
            found.append("socket")
    except OSError:
        pass
    others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())]
    if others:
        found.append(f"processes {others}")
    return found


def memory_hits(prefix):
    """Every place in this process's writable memory where prefix occurs, with what follows it
    (read in place: /proc/self/mem is closed to a non-dumpable process)."""
    hits = set()
    needle = prefix.encode()
    with open("/proc/self/maps") as f:
        regions = f.read().splitlines()
    for line in regions:
        fields = line.split()
        if not fields[1].startswith("rw") or line.endswith(("[vvar]", "[vsyscall]", "[vvar_vclock]")):
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        for at in range(start, end, 8 << 20):
            data = ctypes.string_at(at, min(8 << 20, end - at))
            i = data.find(needle)
            while i >= 0:
                hits.add(data[i:i + len(needle) + 40].decode("latin-1"))
                i = data.find(needle, i + 1)
    return sorted(hits)
