"""One sandbox session: a leader for one submission (PID 1 of its namespaces), which starts the part
children (part()), says when one has ended (ended()) and is ended with the submission (close())."""
from __future__ import annotations

import os
import shutil
import socket
import time
from typing import Any

from autograder import scratch, text
from autograder.inside import protocol
from autograder.sandbox import container, death, procfs
from autograder.sandbox.errors import SandboxUnavailable
from autograder.sandbox.part_child import PartChild

SERVER_LOST = "could not start: the sandbox's fork server died each time it was started"


def private_scratch(uid: int | None = None) -> str:
    """The session's folder where there is no room (container mode, --unsafe-no-sandbox): the grader's,
    0700; in container mode its group is the submission's uid (which reads its submission there and
    writes nothing: 02750, files 0640). Removed when the session closes."""
    folder = scratch.make("ch03-session")  # named after the grader: swept if it is killed (scratch.sweep)
    if uid is not None:
        os.chown(folder, 0, uid)
        os.chmod(folder, 0o2750)
    return folder


class Session:
    """One leader (one submission): part() until close()."""

    # wall clocks on the grader's own machinery, before any code of the submission runs in what they
    # wait for: the leader's start (START_SECONDS) and a part child's (PART_SECONDS). One that runs out
    # is the machine's slowness, never charged at once: proof where no code of the submission has run
    # in the session yet (its leader's start, its first part child's), unexplained after that (a part of
    # the session ran there before); either way the part runs again in a fresh session
    # (runner/attempts.run_checks), charged only when unexplained every time
    START_SECONDS, PART_SECONDS = 60, 30

    def __init__(self, sandbox: Any, sock: socket.socket | None, uid: int, scratch: str | None = None) -> None:
        self.sandbox, self.sock, self.uid, self.scratch = sandbox, sock, uid, scratch
        self.leader_pidfd, self.died, self.protections = None, "", []
        self.machine = ""  # death.PROOF: it died of the fork server's death (not of anything its submission did)
        self.children = 0  # part children started in it so far
        if sock is None:
            return
        deadline = time.monotonic() + self.START_SECONDS
        try:
            message, fds = protocol.receive_message(sock, deadline, max_fds=1)
            if not message.get("leader") or len(fds) != 1:
                raise protocol.ProtocolError("no leader")
            self.leader_pidfd = fds[0]
            if sandbox.in_room and not message.get("namespaces"):
                raise SandboxUnavailable("the sandbox could not give the child namespaces of its own")
            if sandbox.session_group and not sandbox.session_group.join(procfs.host_pid(self.leader_pidfd)):
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
            # its fork server died meanwhile (out of the submission's reach), or the leader was slower than
            # its wall clock before any code of the submission ran: proof it was the machine's
            timed_out = isinstance(e, protocol.Deadline)
            self.machine = death.PROOF if timed_out or not sandbox.alive() else ""

    @classmethod
    def lost(cls, sandbox: Any, uid: int, last_words: str = "") -> Session:
        """A session that never started: no fork server would (Sandbox.session); last_words: the
        exception the last one died of, where it wrote one (Sandbox.start_error)."""
        session = cls(sandbox, None, uid)
        session.died = SERVER_LOST + (f" (the last one: {last_words})" if last_words else "")
        session.machine = death.PROOF
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
            message, fds = protocol.receive_message(self.sock, time.monotonic() + self.PART_SECONDS, max_fds=3)
            if not message.get("part") or len(fds) != 3:
                for fd in fds:
                    os.close(fd)
                raise protocol.ProtocolError("no part child")
        except (protocol.Deadline, protocol.ProtocolError, OSError) as e:
            os.close(output)
            self.kill()
            self.died = f"the sandbox lost its session ({e})"
            child = PartChild(self, None, timeout, self.died)
            if isinstance(e, protocol.Deadline):
                child.machine = death.SUSPECT if self.children else death.PROOF
            return child
        self.children += 1
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
        procfs.kill(self.leader_pidfd)

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
