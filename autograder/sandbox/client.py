"""The grader's end: start a fork server, open one sandboxed session per part, talk to it.

Every wait has a deadline; on a deadline or any sign of trouble the child is killed with
SIGKILL from here (the grader's clock), and the session reports what happened in words.
"""
import os
import re
import signal
import socket
import subprocess
import sys
import time

from autograder import PROJECT_ROOT, protocol
from autograder.sandbox import cgroup

SAFE_ENV = ("PATH", "LANG", "LC_ALL", "TZ")
MAX_ERROR_TEXT = 2000  # what the child itself sends at most
BOOT = (
    "import sys; sys.path.insert(0, {root!r}); "
    "from autograder.sandbox.zygote import main; main({fd}, {parent})"
)


class SessionDied(Exception):
    """The child ended (or was ended) before answering; str() says how, in a student's terms."""


def scrubbed_environment():
    """Only harmless variables reach the fork server (and so any student code): no tokens."""
    env = {k: os.environ[k] for k in SAFE_ENV if k in os.environ}
    env["OMP_NUM_THREADS"] = "1"
    return env


def python_dirs():
    """Folders the child needs to see to keep importing (the Python installation)."""
    import sysconfig

    dirs = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    dirs.update(sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib"))
    return sorted(d for d in dirs if d)


class Sandbox:
    """One fork server (torch imported once); sessions are opened on it one at a time."""

    def __init__(self, hide=(), slot=0):
        # the project root holds suites, solutions, rubric; a file (existing or to be written) is
        # hidden through its folder; a folder that does not exist has nothing to hide
        self.hide = [str(PROJECT_ROOT)] + [folder for folder in map(_folder_of, hide) if folder]
        self.slot = slot
        self._start()

    def _start(self):
        ours, theirs = socket.socketpair()
        self.control = ours
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-c", BOOT.format(root=str(PROJECT_ROOT), fd=theirs.fileno(), parent=os.getpid())],
            pass_fds=[theirs.fileno()], env=scrubbed_environment(), stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        theirs.close()
        self.info = None

    def ready(self, timeout=120):
        if self.info is None:
            try:
                self.info, _ = protocol.receive(self.control.fileno(), time.monotonic() + timeout)
            except (protocol.Deadline, protocol.ProtocolError) as e:
                self.close()
                raise RuntimeError(f"the sandbox fork server did not start ({type(e).__name__})") from None
        return self.info

    def open(self, submission, timeout, memory_mb):
        """A session on a staged submission folder, with a wall-clock budget of `timeout` seconds."""
        if self.process.poll() is not None:  # the fork server died (the OOM killer?): start another
            self.close()
            self._start()
        self.ready()
        request = {"op": "open", "submission": str(submission), "timeout": timeout, "memory_mb": memory_mb,
                   "hide": self.hide, "keep": python_dirs(), "slot": self.slot}
        protocol.send(self.control.fileno(), request, deadline=time.monotonic() + 30)
        message, fds, _, _ = socket.recv_fds(self.control, 1 << 16, 2)
        head_len, payload_len = protocol.HEAD.unpack_from(message)
        import json

        opened = json.loads(message[protocol.HEAD.size:protocol.HEAD.size + head_len])
        return Session(self, opened["pid"], fds[0], fds[1], timeout)

    def close(self):
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.wait()
        self.control.close()
        cgroup.remove((self.info or {}).get("groups", []))  # the fork server's control group, now empty

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Session:
    """One child process for one part: call() until close(); each call counts against the budget."""

    def __init__(self, sandbox, pid, requests_w, replies_r, timeout):
        self.sandbox, self.pid, self.timeout = sandbox, pid, timeout
        self.requests_w, self.replies_r = requests_w, replies_r
        self.started = time.monotonic()
        self.deadline = self.started + timeout
        self.pidfd = _pidfd(pid)
        self.died = None  # the reason, once the child is gone
        self.end = None
        try:
            hello, _ = protocol.receive(replies_r, self.deadline)
            self.protections = hello.get("protections", [])
        except (protocol.Deadline, protocol.ProtocolError) as e:
            self.protections = []
            self._fail(e)

    def call(self, header, buffers=()):
        """Send one request and wait for its reply -> (reply header, payload); SessionDied on trouble."""
        if self.died:
            raise SessionDied(self.died)
        try:
            protocol.send(self.requests_w, header, buffers, self.deadline)
            reply, payload = protocol.receive(self.replies_r, self.deadline)
        except (protocol.Deadline, protocol.ProtocolError, RecursionError) as e:  # JSON nested too deep
            self._fail(e)
            raise SessionDied(self.died) from None
        if "error" in reply:  # student code can write its own frames: never trust their sizes or types
            reply = {"error": _plain_error(reply["error"])}
        return reply, payload

    def _fail(self, error):
        self.kill()
        end = self._collect_end()
        if isinstance(error, protocol.Deadline):
            self.died = f"timed out after {self.timeout:g} s (the part's time limit): look for a loop that never ends"
        elif end.get("exitcode") is None:
            self.died = f"the sandbox lost the child ({error})"
        elif isinstance(error, RecursionError) or isinstance(error, protocol.ProtocolError) and "closed" not in str(error):
            self.died = f"sent back something that is not an answer ({str(error)[:200]})"  # and was killed for it
        elif end["exitcode"] == -signal.SIGKILL:
            self.died = "was killed (SIGKILL): most likely it used more memory than the part's limit"
        elif end["exitcode"] < 0:
            self.died = f"was killed by signal {signal.Signals(-end['exitcode']).name}"
        else:
            self.died = f"exited with status {end['exitcode']} before returning (sys.exit/os._exit in the code?)"

    def kill(self):
        try:
            if self.pidfd is not None:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            else:
                os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, OSError):
            pass

    def _collect_end(self):
        if self.end is None:
            try:
                self.end, _ = protocol.receive(self.sandbox.control.fileno(), time.monotonic() + 30)
            except (protocol.Deadline, protocol.ProtocolError):
                self.end = {}
            for fd in (self.requests_w, self.replies_r, self.pidfd):
                if fd is not None:
                    os.close(fd)
        return self.end

    def close(self):
        """End the child (whatever it is doing) -> {'exitcode', 'output', 'output_bytes'}."""
        self.kill()
        end = self._collect_end()
        self.elapsed = time.monotonic() - self.started
        return end


def _folder_of(path):
    path = os.path.abspath(path)
    if os.path.isdir(path):
        return path
    parent = os.path.dirname(path)
    return parent if os.path.isdir(parent) and parent != "/" else None


def _plain_error(error):
    """An error reply as the grader may use it: short plain strings and a bool, whatever was sent."""
    error = error if isinstance(error, dict) else {}
    kind = re.sub(r"[^\w.]", "", str(error.get("type", "")))[:100] or "Exception"
    return {"type": kind, "message": str(error.get("message", ""))[:MAX_ERROR_TEXT],
            "where": str(error.get("where", ""))[:200], "not_implemented": error.get("not_implemented") is True}


def _pidfd(pid):
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None
