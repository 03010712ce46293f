"""Issue 38 item 7: the clocks a part is judged on are read after every request, so their files are
opened once and read again from their start (a control group's CPU counter, the grader thread's
schedstat), not opened per read. These tests hold that the kept file still says what a fresh
open says: it grows with the work done, it is found again in a forked process (whose copy is its
own), a removed group reads as "cannot be read", and nothing stays open after a thread ends."""
import os
import threading
import time

import pytest

from autograder.sandbox import cgroup, procfs

pytestmark = pytest.mark.quick


def _burn(seconds: float) -> None:
    """At least `seconds` of this thread's CPU time (measured by the kernel, not by a wall clock)."""
    start = time.thread_time()
    while time.thread_time() - start < seconds:
        sum(range(20_000))


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def opens(monkeypatch):
    """The paths os.open is called with from here on."""
    seen: list[str] = []
    real = os.open

    def counting(path, *args, **kwargs):
        seen.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting)
    return seen


@pytest.fixture
def group():
    made = cgroup.accounting(f"{cgroup.PREFIX}{os.getpid()}-kept-open")
    if made is None:
        pytest.skip("no control group can be made here (needs root and a writable cgroup mount): "
                    "the grader then reads the session's processes' /proc/<pid>/stat instead")
    yield made
    made.close_counter()
    cgroup.remove(made.folders)


def test_the_group_counter_is_opened_once_and_counts_what_its_processes_use(group, opens):
    """A process moved into the group burns 0.2 s of CPU: the kept counter says at least that much
    more, read through one open file, and the same as a counter opened afresh."""
    before = group.cpu_seconds()
    assert before is not None
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        code = 0 if group.join(os.getpid()) else 3
        _burn(0.2)
        os._exit(code)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    os.close(read)
    assert os.waitstatus_to_exitcode(status) == 0, "the child could not join the accounting group"
    after = [group.cpu_seconds() for _ in range(50)]
    counters = [p for p in opens if os.path.basename(p) in cgroup.CPU_COUNTERS]
    assert len(counters) <= 1, f"the counter was opened {len(counters)} times for 51 reads: {counters}"
    assert after[0] is not None and after[0] - before >= 0.19, (before, after[0])
    fresh = cgroup.Group(group.folders, 0)
    assert abs(fresh.cpu_seconds() - after[-1]) < 0.05, "the kept counter and a fresh one disagree"
    fresh.close_counter()


def test_a_forked_process_reads_its_own_copy_and_a_removed_group_reads_as_unknown(group):
    """A batch's workers are forked after the counter was opened: there it is opened again (the
    parent's is untouched); once the group is removed, reading says None, as a fresh open would."""
    assert group.cpu_seconds() is not None
    parent = group._counter
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        ok = group.cpu_seconds() is not None and group._counter is not None and group._counter.pid == os.getpid()
        group.close_counter()
        os.write(write, b"1" if ok else b"0")
        os._exit(0)
    os.close(write)
    said = os.read(read, 1)
    os.waitpid(pid, 0)
    os.close(read)
    assert said == b"1", "the forked process did not read the group through a file of its own"
    assert group._counter is parent and parent.pid == os.getpid() and group.cpu_seconds() is not None, \
        "the parent's counter was closed by the child"
    cgroup.remove(group.folders)
    assert group.cpu_seconds() is None, "a removed group's counter still read as a number"
    assert group._counter is None


def test_the_thread_schedstat_is_opened_once_per_thread_and_closed_with_it(opens):
    """The grader thread's CPU + run delay (idle.py) grows with its work, read through one file per
    thread; a thread that ends leaves no file open; a thread's reading is its own."""
    procfs.own_schedule()  # opened here if this thread had not read it yet
    opened, fds = len(opens), _open_fds()
    first = procfs.own_schedule()
    _burn(0.1)
    second = procfs.own_schedule()
    assert first is not None and second is not None and second - first >= 0.09, (first, second)
    assert len(opens) == opened, f"reopened in the same thread: {opens[opened:]}"

    in_thread: list[float | None] = []
    workers = [threading.Thread(target=lambda: in_thread.append(procfs.own_schedule())) for _ in range(20)]
    for worker in workers:
        worker.start()
        worker.join()
    assert len([p for p in opens[opened:] if p.endswith("schedstat")]) == 20, "one open per new thread expected"
    assert all(value is not None and value < second for value in in_thread), \
        "a new thread read another thread's schedstat"
    assert _open_fds() == fds, "ended threads left their schedstat files open"
