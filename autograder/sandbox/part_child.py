"""One part child seen from the grader: its request channel (call: one request, one reply, on the
part's clocks), its limits and CPU time, the end of a part and the next one in the same child, and
its end. Why it died is judged in death.py (death.judge)."""
from __future__ import annotations

import os
import select
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from autograder import text
from autograder.inside import protocol
from autograder.sandbox import death, gpu_watch, procfs, session_cpu
from autograder.sandbox.errors import SandboxUnavailable, SessionDied
from autograder.sandbox.idle import IdleMeter

OUTPUT_CAP = 64 << 10


class PartChild:
    """One child: call() until close(); each call counts against the current part's time. After a
    part, next_part() resets the child for the submission's next part (part_reset.py)
    or says it cannot be reused."""

    RESET_SECONDS = 5  # for the child to forget a part: not the part's time (its checks are done)

    def __init__(self, session: Any, fds: list[int] | None, timeout: float, died: str = "",
                 memory_mb: int = 512) -> None:
        self.session = session
        self.protections = list(session.protections)
        self.own_session: Any = None  # a Session (session.py) this child closes with it (Sandbox.open)
        self.died = died
        # set by the runner before the first hidden input is sent: from then on every word about
        # this child (how it ended) comes from a fixed phrase, never a number or name it picked
        self.saw_hidden = False
        self.end: dict[str, Any] | None = None if fds else {"output": "", "output_bytes": 0}
        # the child's descriptors (None once it has ended: every use is behind a check of self.died)
        self.requests_w: Any
        self.replies_r: Any
        self.pidfd: Any
        self.output_fd: Any
        self.requests_w, self.replies_r, self.pidfd, self.output_fd = fds or (None, None, None, None)
        self.output_from, self.host_pid = 0, 0
        self.gpu_killed: str | None = None  # gpu_watch: why the watch killed it, if it did
        self.cpu_out = False  # the last deadline was the CPU-time limit's (else the wall clock's)
        self.clock: session_cpu.SessionClock | None = None  # where no control group counts: the session's processes, from /proc
        self.machine = ""  # it died of a cause its own time and memory do not explain: death.PROOF or SUSPECT
        self.grader_killed = False  # the grader's own SIGKILL ended it (after a deadline or a broken channel)
        self.asleep: bool | None = None    # at a wall-clock deadline: was it mostly off the CPU by its own doing?
        if fds:  # the grader's ends try each read and write at once (protocol.send, receive: nonblocking)
            os.set_blocking(self.requests_w, False)
            os.set_blocking(self.replies_r, False)
        self._limits(timeout, memory_mb)
        if fds:
            self._hello()

    WALL_FACTOR, WALL_SLACK = 4, 10  # the wall clock behind a part's CPU-time limit: for a loaded machine
    FAR_WALL = 10  # x that wall clock: how far it is moved on while the machine keeps the child waiting for a CPU
    IDLE_AFTER_HIDDEN = 2.0  # seconds a part's child may spend neither running nor runnable, after a hidden input
    TICK = 0.05  # how often a wait looks at the child's CPU time

    def _limits(self, timeout: float, memory_mb: int) -> None:
        """The part's clocks start now: `timeout` seconds of the child's own CPU time, and a generous
        wall clock behind them (a child that sleeps uses none); its memory cap is the server's own
        memory plus memory_mb."""
        self.timeout, self.memory_mb = timeout, memory_mb
        self.idle_meter, self.idle_out = IdleMeter(self, self.IDLE_AFTER_HIDDEN), False
        self.measuring: IdleMeter | None = None  # idle_measured's meter, while its block runs
        self.started = time.monotonic()
        self.deadline = self.started + timeout * self.WALL_FACTOR + self.WALL_SLACK
        sandbox = self.session.sandbox
        # a shared server's sessions have a group of their own, holding nothing of the server's
        group, baseline = (sandbox.session_group, 0) if sandbox.session_group else (sandbox.group, sandbox.baseline)
        self.group = group
        if self.pidfd is not None:
            self.host_pid = self.host_pid or procfs.host_pid(self.pidfd)
        self.cpu_start = self._cpu()
        self.gauge = death.Gauge.start(group, self.host_pid)  # what its death is compared with
        caps = group.set_memory(baseline + (int(memory_mb) << 20)) if group and not self.died else ""
        if caps and caps not in self.protections:
            self.protections.append(caps)
        if sandbox.device == "cuda" and self.pidfd is not None:  # GPU memory: watched from here
            self.host_pid = self.host_pid or procfs.host_pid(self.pidfd)
            gpu_watch.WATCH.add(self.host_pid, self.pidfd, memory_mb)

    def _cpu(self) -> float | None:
        """CPU seconds so far of the session's control group (the child and everything it started:
        no neighbour's), or else of every process below the session's leader (session_cpu.py: the
        child, its helpers whether reaped or not, orphans); None when neither can be read (then the
        wall clock stands in)."""
        used: float | None = self.group.cpu_seconds() if self.group is not None else None
        if used is not None or self.pidfd is None:
            return used
        if self.clock is None:
            leader = procfs.host_pid(self.session.leader_pidfd) if self.session.leader_pidfd is not None else 0
            self.clock = session_cpu.SessionClock(leader) if leader else None
        return self.clock.seconds() if self.clock is not None else None

    def spent(self) -> float:
        """Seconds the part has used: the child's CPU time (wall time where it cannot be read)."""
        now = self._cpu()
        if now is None or self.cpu_start is None:
            return time.monotonic() - self.started
        return max(0.0, now - self.cpu_start)

    def _hello(self) -> None:
        """The child's first frame, written before any student code ran: the walls that stand."""
        try:
            hello, _ = protocol.receive(self.replies_r, self.deadline, max_payload=0, nonblocking=True)
            if isinstance(hello, dict) and hello.get("gpu_error"):  # written before any student code ran
                self.close()
                raise SandboxUnavailable(f"--device cuda: the GPU cannot be used inside the sandbox "
                                         f"({text.excerpt(hello['gpu_error'], 300)}); nothing was graded")
            walls = hello.get("protections") if isinstance(hello, dict) else None
            self.protections += [text.excerpt(p, 200) for p in walls or []][:20]
        except (protocol.Deadline, protocol.ProtocolError) as e:
            self._fail(e)

    def call(self, header: protocol.Message, buffers: Sequence[bytes] = (),
             limit: float | None = None) -> tuple[protocol.Message, bytes]:
        """Send one request and wait for its reply -> (reply header, payload); SessionDied on trouble.
        limit: seconds of CPU time this call may take at most (within the part's time)."""
        if self.died:
            raise SessionDied(self.died)
        cpu_limit, deadline = self.timeout, self.deadline
        if limit is not None:
            cpu_limit = min(cpu_limit, self.spent() + limit)
            deadline = min(deadline, time.monotonic() + limit * self.WALL_FACTOR + self.WALL_SLACK)
        now = time.monotonic()
        if now >= deadline and self._kept_waiting(now):
            # the wall clock ran out before this request was sent, while the child waited on the grader
            # (answering its stand-ins, judging its replies: slow on a busy machine) or for a CPU: moved
            # on as _await_reply moves it, so the send is not the one wait that never is
            deadline = now + self.WALL_SLACK
        self.session.sandbox.round_trips[str(header.get("op", "?"))] += 1
        try:
            protocol.send(self.requests_w, header, buffers, deadline, nonblocking=True)
            deadline = self._await_reply(cpu_limit, deadline)
            reply, payload = protocol.receive(self.replies_r, deadline, nonblocking=True)
        except (protocol.Deadline, protocol.ProtocolError, RecursionError) as e:  # JSON nested too deep
            self._fail(e)
            raise SessionDied(self.died) from None
        if "error" in reply:  # student code can write its own frames: never trust their sizes or types
            # (a plan's earlier steps come along: Student.plan reads them as it reads any answer)
            reply = {"error": _plain_error(reply["error"]),
                     **{key: reply[key] for key in ("steps", "changed", "skipped") if key in reply}}
        return reply, payload

    def _await_reply(self, cpu_limit: float, deadline: float) -> float:
        """Wait until the reply begins: Deadline once the child has used cpu_limit seconds of CPU time
        in this part, or at the wall-clock deadline. A neighbour's load slows the wait, never ends it.
        After a hidden input, also once the child has been idle (neither on the CPU nor waiting for
        it) for IDLE_AFTER_HIDDEN seconds in this part (_IdleMeter): how long it sleeps is then the
        child's only choice, and the time a step takes is shown in a CI job log.

        A wall clock that runs out while the child was mostly running or runnable (its schedstat:
        the machine kept it waiting for a CPU) or waiting on the grader (the grading thread's own CPU
        time and run delay: death.Gauge.asleep) is moved on, up to FAR_WALL times the part's: load
        makes grading slower, never cheaper. -> the deadline, as moved."""
        meter = self.idle_meter if self.saw_hidden else self.measuring
        idle = meter.call_begins() if meter is not None else None
        try:
            while True:  # one select per tick: a reply already there ends the first at once
                now = time.monotonic()
                if now < deadline:
                    if select.select([self.replies_r], [], [], min(self.TICK, deadline - now))[0]:
                        break
                elif select.select([self.replies_r], [], [], 0)[0]:
                    break  # a reply that is there is taken, whatever the clock says
                elif self._kept_waiting(now):
                    deadline = now + self.WALL_SLACK
                    continue
                else:
                    raise protocol.Deadline()
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
        """At a wall-clock deadline: the child was measured mostly on a CPU, waiting for one or waiting
        on the grader (not asleep by its own doing), and the far wall clock (FAR_WALL x the part's) has
        not run out."""
        far = self.started + self.FAR_WALL * (self.deadline - self.started)
        return now < far and self.gauge.asleep(self.host_pid, now - self.started) is False

    @contextmanager
    def metered_as_hidden(self) -> Iterator[None]:
        """The calls made in this block metered for idleness as after a hidden input (IDLE_AFTER_HIDDEN,
        _await_reply), where this part has not had one yet: a dependency's probe (suites/dependencies.py),
        so a module that sleeps or waits that long ends the child there, before any hidden check."""
        if self.saw_hidden:
            yield
            return
        meter, self.saw_hidden, self.idle_meter = self.idle_meter, True, IdleMeter(self, self.IDLE_AFTER_HIDDEN)
        try:
            yield
        finally:
            self.saw_hidden, self.idle_meter = False, meter

    @contextmanager
    def idle_measured(self) -> Iterator[IdleMeter]:
        """The calls made in this block metered for idleness where the child has seen no hidden input,
        never ended for it: the meter says how long the child was idle by its own choice in them
        (IdleMeter.idle; the grader's evidence that an import sleeps or waits, runner/attempts.py)."""
        meter = self.measuring = IdleMeter(self, float("inf"))
        try:
            yield meter
        finally:
            self.measuring = None

    def running(self) -> tuple[int, tuple[int, ...]] | None:
        """(the child's threads, its children's pids), read by the grader from /proc (None where it cannot
        be): what a dependency's probe compares before and after it ran another part's module here."""
        self.host_pid = self.host_pid or (procfs.host_pid(self.pidfd) if self.pidfd is not None else 0)
        return procfs.threads_and_children(self.host_pid) if self.host_pid else None

    def finish(self) -> dict[str, Any]:
        """End the current part -> {'output', 'output_bytes', 'reusable'}: what the part printed, and
        whether the child forgot it cleanly and may take the next part (else it is ended now)."""
        reusable = False
        if not self.died:
            try:
                deadline = time.monotonic() + self.RESET_SECONDS
                self.session.sandbox.round_trips["end_part"] += 1
                protocol.send(self.requests_w, {"op": "end_part", "memory_mb": self.memory_mb}, (), deadline,
                              nonblocking=True)
                reply, _ = protocol.receive(self.replies_r, deadline, max_payload=0, nonblocking=True)
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

    def _fail(self, error: BaseException) -> None:
        """Why the child ended before answering -> self.died and self.machine (death.judge)."""
        death.judge(self, error)

    def _deadline_cause(self) -> str:
        return death.deadline_cause(self)

    def kill(self) -> None:
        procfs.kill(self.pidfd)

    def _collect_end(self) -> dict[str, Any]:
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

    def close(self) -> dict[str, Any]:
        """End the child (whatever it is doing) -> {'exitcode', 'output', 'output_bytes'}: the output
        of its current part."""
        self.kill()
        end = self._collect_end()
        self.elapsed = time.monotonic() - self.started
        if self.own_session is not None:
            self.own_session.close()
        return end


def _read_output(fd: int, start: int = 0) -> tuple[str, int]:
    """What the part's code printed since `start`: the first OUTPUT_CAP bytes, cleaned, and the full size."""
    size = max(0, os.fstat(fd).st_size - start)
    data = os.pread(fd, OUTPUT_CAP, start) if size else b""
    return text.clean(data.decode("utf-8", "replace"), text.OUTPUT, newlines=True), size


def _plain_error(error: Any) -> dict[str, Any]:
    """An error reply as the grader may use it: short plain strings and a bool, whatever was sent."""
    error = error if isinstance(error, dict) else {}
    return {"type": text.identifier(error.get("type", "")) if error.get("type") else "Exception",
            "message": text.clean(error.get("message", ""), text.MESSAGE),
            "where": text.excerpt(error.get("where", ""), 200), "not_implemented": error.get("not_implemented") is True}
