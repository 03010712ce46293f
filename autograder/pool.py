"""Worker processes that share one fork server, for the entry points that grade many submissions at a
time (batch/workers.py, selftest's run_all): the server, started before this process imports torch, with
a door of its own for each worker (start_fork_servers), and the workers forked from this process
(fork_pool), each grading with an engine of its own on its door (Engine.for_worker: the parent's
rubric and suites, inherited, not read again). N workers cost one fork server and one torch import in
the room, and no torch import of their own.

A worker is forked, so this process must run no other thread when it forks (a thread holding a lock
at the fork leaves the child that lock held for ever): one_thread_here() says whether it does; the
slots' queue is written at once (SimpleQueue: no feeder thread left running)."""
from __future__ import annotations

import gc
import multiprocessing
import multiprocessing.util
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from autograder.engine import Engine, one_thread
from autograder.settings import Settings

if TYPE_CHECKING:
    from autograder.sandbox.client import Sandbox


def start_fork_servers(count: int, settings: Settings) -> list[Sandbox]:
    """The run's fork server, started now, before this process imports torch (both start-ups
    overlap), and a door of its own for each of count workers -> [door per slot] (slot 0: the
    server's owner): torch is imported once in the room for the whole run. Where it cannot start:
    [] (each worker starts, and reports, its own)."""
    from autograder.sandbox.client import Sandbox

    doors: list[Sandbox] = []
    if count < 1:
        return doors
    try:
        doors.append(Sandbox(slot=0, settings=settings.sandbox))
        for slot in range(1, count):
            doors.append(doors[0].attach(slot))
    except Exception:  # the workers will try again and say why
        stop_fork_servers(doors)
    return doors


def stop_fork_servers(doors: list[Sandbox]) -> None:
    while doors:  # the attached doors first, the server's owner (slot 0) last
        doors.pop().close()


def one_thread_here() -> bool:
    """This process runs no Python thread but this one (a pytest plugin's, a queue's feeder, a thread
    pool's): a worker may be forked from it."""
    return threading.active_count() == 1


_worker_engine: Engine | None = None  # in a worker process: its engine (made by _init_worker)


def worker_engine() -> Engine:
    """In a worker of fork_pool: its engine."""
    assert _worker_engine is not None, "_init_worker runs first in every worker"
    return _worker_engine


def _init_worker(slot_queue: Any, doors: list[Any], parent: Engine, parent_pid: int) -> None:
    from autograder.inside import isolation

    isolation.die_with_parent(parent_pid)  # and its fork server with it, and that one's children
    one_thread()  # before anything computes: a forked copy of a parent's thread pool can deadlock
    global _worker_engine
    slot = slot_queue.get()
    engine = parent.for_worker(doors[slot] if slot < len(doors) else None, slot)
    assert engine.sandbox is not None
    multiprocessing.util.Finalize(None, engine.sandbox.close, exitpriority=10)  # run as the worker exits
    _worker_engine = engine


def fork_pool(jobs: int, engine: Engine, doors: list[Sandbox]) -> ProcessPoolExecutor:
    """jobs workers forked from here (the initializer's arguments are inherited, not pickled: the
    doors' sockets and the engine go as they are), each taking a slot and its door (a slot beyond the
    doors: a fork server of its own). Call it from one thread (one_thread_here)."""
    ctx = multiprocessing.get_context("fork")
    slots = ctx.SimpleQueue()  # written at once: no feeder thread left running here when the workers fork
    for slot in range(jobs):
        slots.put(slot)
    return ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init_worker,
                               initargs=(slots, list(doors), engine, os.getpid()))


@contextmanager
def frozen() -> Iterator[None]:
    """Every object this process holds set apart from the garbage collector while workers are forked from
    it and run (a collection in a forked worker would walk, and so copy, every object of the parent's:
    torch's, matplotlib's); put back afterwards, for a caller that goes on (the ci command, tests)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
