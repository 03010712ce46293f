"""The sandbox's exceptions (client.py re-exports them)."""
from __future__ import annotations


class SessionDied(Exception):
    """The child ended (or was ended) before answering; str() says how, in a student's terms."""


class SandboxUnavailable(RuntimeError):
    """Student code cannot be isolated here; str() says why and how to fix it."""


class ServerLost(RuntimeError):
    """The fork server died before it answered (Sandbox.ready); str() says how. Sandbox.session
    replaces such a server itself, SERVER_STARTS times in a row at most."""
