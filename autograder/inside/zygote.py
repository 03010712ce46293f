"""The fork server and the session leaders it forks: torch imported once, inside the room.

Started by client.Sandbox in the room (room.py) with one end of a control socket; a batch attaches
one more control socket per worker through it ("attach"), so all workers share this one server.
Per "open" request (one submission) it receives two descriptors, the leader's own control socket
and a memfd holding the staged submission, and forks:

    fork server --fork--> intermediate (new PID namespace) --fork--> leader (PID 1 there)
    leader: builds its walls (isolation.enter), then per "part" request --fork--> part child

The fork server never reads a submission, an output or a reply: it only hands descriptors on,
so nothing of one student is in the memory that the next student's processes are forked from.
A leader never runs student code itself; its part child does (one child takes the submission's
parts in turn, visible checks first, inside/part_reset.py), and when it ends the leader kills
whatever it left behind before it answers.
"""
import contextlib
import gc
import importlib
import importlib.util
import io
import os
import select
import signal
import socket
import stat
import sys
import sysconfig
import tempfile
import time

import numpy as np  # imported once here, inherited by every child
import torch

from autograder.inside import child, counting, emulated_gpu, isolation, part_reset, protocol, uid_cleanup

CONFIG: dict = {}  # from the grader's first message: seccomp program, namespaces or not


def main(control_fd, grader_pid):
    control = socket.socket(fileno=control_fd)
    if grader_pid:  # outside the room (unsafe mode) nothing else ties this server to the grader
        isolation.die_with_parent(grader_pid)
    torch.set_num_threads(1)
    config, _ = protocol.receive_message(control)  # sent at once by the grader: read before the warm-up
    CONFIG.update(config)
    os.environ[part_reset.NO_COMPILING] = "1"  # before the warm-up's import of torch._dynamo, which reads it
    warm_up(autograd=not cuda_reachable(config))
    if config.get("container") and config.get("device", "cpu") == "cpu":
        preload_native()  # before the part's filter refuses to map a library's code (syscalls, file_exec=False)
    if config.get("container") and closed_to_others(sysconfig.get_paths()["stdlib"]):
        preload_stdlib()  # what the submission's uid could not read itself
    part_reset.compile_eagerly()  # torch.compile runs the code as written: nothing is compiled in the room
    counting.settle()  # torch's own kernels registered from Python, before any student code
    part_reset.prepare(also=(protocol, child))  # the watched namespaces as every child starts with them
    gc.freeze()  # what is here now is never collected by a child: a collection there copies no page of it
    _give_back_free_memory()
    ready = {"ready": True, "torch": torch.__version__, "python": sys.version.split()[0]}
    protocol.send_message(control, ready)
    doors = [control]  # the grader's, then one per batch worker attached through it
    while True:
        for door in select.select(doors, [], [])[0]:
            if not serve(door, door is control, doors, ready):
                if door is control:
                    return
                doors.remove(door)
                door.close()


def serve(door, first, doors, ready):
    """One request from a door -> False when that door is closed (or asked to quit)."""
    try:
        request, fds = protocol.receive_message(door, max_fds=2)
    except protocol.ProtocolError:
        return False
    _reap()
    op = request.get("op")
    if op == "open" and len(fds) == 2:
        _open(request, *fds)
    elif op == "attach" and first and len(fds) == 1:  # another worker's door: only the grader's own adds one
        doors.append(socket.socket(fileno=fds[0]))
        protocol.send_message(doors[-1], ready)
    else:
        for fd in fds:
            os.close(fd)
        return op != "quit"
    return True


def _give_back_free_memory():
    """Return the allocator's free pages to the system (glibc's malloc_trim): every fork copies the
    page tables of what this process maps, so the less it holds, the cheaper each child."""
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def _reap():
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _open(request, leader_fd, submission_fd):
    zygote_pid = os.getpid()
    if os.fork() == 0:
        code = 1
        try:
            intermediate(request, leader_fd, submission_fd, zygote_pid)
            code = 0
        finally:
            os._exit(code)
    os.close(leader_fd)
    os.close(submission_fd)


def intermediate(request, leader_fd, submission_fd, zygote_pid):
    """Enter a new PID namespace, fork the leader, tell the grader its pidfd, wait for it."""
    isolation.die_with_parent(zygote_pid)
    in_namespaces = CONFIG.get("namespaces", False) and isolation.new_pid_namespace(
        int(request["uid"]), CONFIG.get("user_namespace", False))
    gate_r, gate_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(gate_w)
        os.read(gate_r, 1)  # the grader has the leader's pidfd before the leader does anything
        os.close(gate_r)
        lead(request, leader_fd, submission_fd, in_namespaces)
        os._exit(0)
    os.close(gate_r)
    sock = socket.socket(fileno=leader_fd)
    pidfd = os.pidfd_open(pid)
    protocol.send_message(sock, {"leader": True, "namespaces": bool(in_namespaces)}, [pidfd])
    os.close(pidfd)
    sock.close()
    os.close(submission_fd)
    os.write(gate_w, b"x")
    os.close(gate_w)
    os.waitpid(pid, 0)


def lead(request, leader_fd, submission_fd, in_namespaces):
    """The session leader: build the walls, then one child per part until the grader closes."""
    sock = socket.socket(fileno=leader_fd)
    try:
        request = {**request, "parent": os.getppid(), "seccomp": CONFIG.get("seccomp"),
                   "device": CONFIG.get("device", "cpu"), "container": bool(CONFIG.get("container")),
                   "writable": list(CONFIG.get("writable", ())),
                   "scratch": None if in_namespaces else request.get("scratch") or tempfile.mkdtemp(prefix="ch03-session-")}
        if request["container"]:  # the part's orphans come to this leader, which reaps them
            uid_cleanup.become_subreaper()
        isolation.close_all_but({leader_fd, submission_fd})
        workspace, protections = isolation.enter_session(request, submission_fd, in_namespaces)
        isolation.deaf_to_signals()
    except BaseException as exc:  # report the set-up failure, in the grader's words
        protocol.send_message(sock, {"error": f"sandbox set-up failed: {type(exc).__name__}: {exc}"[:500]})
        return
    protocol.send_message(sock, {"ready": True, "protections": protections})
    request["parent"] = os.getpid()  # the part children's parent (PID 1 in its namespace)
    while True:
        try:
            message, fds = protocol.receive_message(sock, max_fds=1)
        except protocol.ProtocolError:
            return
        if message.get("op") != "part" or len(fds) != 1:
            return
        limits = {"memory_mb": int(message.get("memory_mb", 2048)), "timeout": float(message.get("timeout", 20))}
        exitcode = fork_part(sock, fds[0], {**request, **limits}, workspace, in_namespaces)
        protocol.send_message(sock, {"ended": True, "exitcode": exitcode})


def fork_part(sock, output_fd, request, workspace, in_namespaces):
    """Fork the part's child, hand its pipes and pidfd to the grader, wait, clear up after it."""
    requests_r, requests_w = os.pipe()
    replies_r, replies_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(output_fd, 1)
            os.dup2(output_fd, 2)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            isolation.close_all_but({requests_r, replies_w})
            signal.signal(signal.SIGINT, signal.default_int_handler)  # as in any Python program
            if not in_namespaces:
                os.setpgid(0, 0)
            protections = isolation.enter_part(request, in_namespaces)
            os.chdir(workspace)
            child.serve(requests_r, replies_w, workspace, protections, request["device"], request["memory_mb"])
        finally:
            os._exit(0)
    os.close(output_fd)
    os.close(requests_r)
    os.close(replies_w)
    pidfd = os.pidfd_open(pid)
    protocol.send_message(sock, {"part": True}, [requests_w, replies_r, pidfd])
    for fd in (requests_w, replies_r, pidfd):
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    _clear_up(pid, in_namespaces)
    if request.get("container"):  # leftovers that left the process group: all of the submission's uid,
        uid_cleanup.clear_uid(int(request["uid"]), request["writable"])  # and what it wrote where anyone may write
    return os.waitstatus_to_exitcode(status)


def _clear_up(pid, in_namespaces, patience=5.0):
    """Kill every process the part left behind (as PID 1 here: everything but this leader) and
    wait until they are gone, so the next part starts in an empty namespace."""
    try:
        if in_namespaces:
            os.kill(-1, signal.SIGKILL)
        else:
            os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    if not in_namespaces:
        return _reap()
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                time.sleep(0.001)
        except ChildProcessError:
            return


def cuda_reachable(config):
    """Whether this server could reach a CUDA driver: a CUDA build of torch (a build flag, no call
    into the driver) with the NVIDIA devices at hand (--device cuda, or no room to hide them)."""
    return torch.backends.cuda.is_built() and (config.get("device") == "cuda" or not config.get("namespaces"))


def warm_up(autograd=True):
    """Run once here what every child's first calls would otherwise pay for again: the lazy
    imports and first-use set-up inside torch and NumPy (modules, dropout, autograd, state
    dicts, einsum). Forked children inherit the result. Touches nothing of the project.

    Nothing here may initialise CUDA: a process forked after that cannot use the GPU ("CUDA
    error: initialization error"). No call here goes to torch.cuda; and with autograd=False (where
    a CUDA driver is reachable) no backward pass either: the autograd engine's first run counts
    every device type's devices (for CUDA, cudaGetDeviceCount, which initialises the driver) and
    from then on refuses to run in a forked child. Each part's child initialises CUDA itself."""
    nn = torch.nn
    layer = nn.Sequential(nn.Linear(4, 4, bias=False), nn.Dropout(0.5), nn.Linear(4, 4))
    layer.register_buffer("mask", torch.triu(torch.ones(3, 3), diagonal=1))
    x = torch.rand(2, 3, 4, dtype=torch.float64).float()
    scores = (x @ x.transpose(1, 2)).masked_fill(layer.get_buffer("mask").bool(), -torch.inf)
    weights = torch.softmax(scores / 2**0.5, dim=-1)
    out = layer(weights @ x).view(2, 3, 2, 2).transpose(1, 2).contiguous().reshape(2, 3, 4)
    out = out + torch.einsum("btd,bsd->bts", x, x).sum() + nn.functional.scaled_dot_product_attention(x, x, x)
    if autograd:
        out.sum().backward()
    layer.load_state_dict(layer.state_dict())
    layer.eval()
    with torch.no_grad():
        layer(x)
    _warm_up_counting(layer, x)
    array = np.random.rand(3, 4)
    np.einsum("ij,kj->ik", array, array).max(axis=-1, keepdims=True)
    np.testing.assert_allclose(array, array)
    torch.default_generator.manual_seed(0)  # the CPU's alone: torch.manual_seed queues CUDA's too


# the extension modules a child may not load in container mode: the test modules of CPython's own, and those that
# touch a terminal or a display as they are imported
NOT_PRELOADED = ("_test", "_xx", "xx", "_ctypes_test", "readline", "_tkinter", "_curses")
# installed packages whose native code a submission may import, loaded with them (where installed)
PRELOADED_PACKAGES = ("numpy.fft", "numpy.random", "numpy.linalg", "matplotlib.pyplot")  # (np.random.seed, np.linalg.norm: a learner's)


def preload_native():
    """Container mode on the CPU: every extension module of Python's standard library (its lib-dynload) and of
    PRELOADED_PACKAGES imported here, once, so that a child can import them after its filter refuses to map a file
    executable (inside/syscalls.compile_filter(file_exec=False): no shared object the submission writes into /tmp,
    which container mode cannot mount noexec, is loaded). Python finds a library already loaded by its path and maps
    nothing again. Failures are left: a module that cannot be imported here fails in the child as it would."""
    folders = [path for path in sys.path if os.path.basename(path) == "lib-dynload" and os.path.isdir(path)]
    names = sorted({entry.split(".")[0] for folder in folders for entry in os.listdir(folder) if entry.endswith(".so")})
    for name in [n for n in names if not n.startswith(NOT_PRELOADED)] + list(PRELOADED_PACKAGES):
        try:
            if name == "matplotlib.pyplot" and importlib.util.find_spec("matplotlib") is not None:
                importlib.import_module("matplotlib").use("Agg")  # (no display in the room or the container)
            importlib.import_module(name)
        except Exception:  # not installed, or not importable here
            continue


# modules of the standard library never preloaded: they act as they are imported (a browser, a window, the Zen of
# Python printed), are another system's, or are CPython's own tests and tools
NOT_PRELOADED_STDLIB = {"antigravity", "this", "turtle", "turtledemo", "tkinter", "idlelib", "test", "ensurepip",
                        "venv", "lib2to3", "pydoc_data", "msvcrt", "winreg", "winsound", "nt", "msilib", "readline",
                        "rlcompleter", "curses"}  # (rlcompleter imports readline)


def closed_to_others(folder):
    """True when a user other than the folder's owner and group cannot read it: a folder on its path lacks the
    others' search bit, or it lacks their read bit (Python's standard library under a home of mode 700, such as
    a pyenv in /root). In container mode the submission's uid imports with ordinary permissions."""
    path = os.path.abspath(folder)
    try:
        if not os.stat(path).st_mode & stat.S_IROTH:
            return True
        while True:
            if not os.stat(path).st_mode & stat.S_IXOTH:
                return True
            parent = os.path.dirname(path)
            if parent == path:
                return False
            path = parent
    except OSError:
        return True


def preload_stdlib():
    """Container mode where the standard library is closed to the submission's uid (closed_to_others): each of
    its public top-level modules not imported yet is imported here, once, so that a child finds it in
    sys.modules as it would find it on disk elsewhere (import sqlite3 raised ModuleNotFoundError: about 90
    modules, 0.3 s of CPU and 12 MB once per fork server, measured 2026-11-29 on the course's machine). What
    cannot be imported here is left, and fails in the child as it would."""
    for name in sorted(sys.stdlib_module_names - NOT_PRELOADED_STDLIB):
        if name.startswith("_") or name in sys.modules:
            continue
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                importlib.import_module(name)
        except Exception:  # another platform's, or not importable here
            continue


# what the emulated GPU's first use imports (FakeTensorMode: sympy, torch._dynamo, the symbolic
# shapes): seconds of CPU that every child running a device check would pay again
EMULATION_IMPORTS = ("sympy", "torch._dynamo", "torch._subclasses.fake_tensor", "torch.fx.experimental.symbolic_shapes",
                     "torch._subclasses.schema_check_mode")  # (the last: _disable_current_modes, emulated_gpu.Twins)


def _warm_up_counting(layer, x):
    """The first forward under a dispatch mode (counting.count_ops) pays for lazy set-up inside
    torch: paid here once, not by every child. On the CPU and, on a CPU-only build of torch, on the
    emulated GPU. On a CUDA build entering FakeTensorMode asks torch.cuda.is_available(), which
    nothing before the fork may do: there only its imports are made here (they call nothing in
    torch.cuda: tests/test_cuda_fork.py's tripwires), nearly all of its first use's cost. Without
    them each child paid it again: on issue 35's H200 (CUDA build, --device cpu, one job) a causal
    selftest entry took 13.5 s, 4x what the CPU-only development machine takes.

    What stays is each child's first emulated forward paying for FakeTensorMode's dispatch cache
    (its entries are keyed on the inputs' shapes, strides and dtypes). A warm-up here running an
    attention forward's operations on other shapes saved a child nothing measurable (issue 38 item 7,
    2026-11-28); on the device checks' own shapes it halved that first run, but would put what the
    hidden checks run on into every child's memory, visible checks' children included: not done."""
    counting.count_ops(layer, [x], {})
    if torch.backends.cuda.is_built():
        for name in EMULATION_IMPORTS:
            importlib.import_module(name)
    else:
        counting.count_ops(torch.nn.Linear(4, 4), [x], {}, device=emulated_gpu.EMULATED)
