"""selftest --jobs N: its workers share one fork server, as a batch's do (autograder/pool.py), where the
process runs one thread; else (a caller running threads of its own) they are spawned, each with a
fork server of its own. Fork servers are counted as the grader starts them (Sandbox._start, the one
place one is started), in every process of the run."""
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from autograder import pool, selftest

ROOT = Path(__file__).resolve().parents[1]
ENTRIES = ("simple-softmax-without-exp", "simple-vectorized-and-exp-method")

# the run, as `python -m autograder selftest` makes it, with every fork server start and every entry's
# grading noted (pid, parent pid, torch imported yet) in LOG. A spawned worker runs this file's top
# level again (multiprocessing's __mp_main__), so its starts are noted too; a forked one inherits it.
SCRIPT = '''
import json, os, sys, threading
from autograder import selftest
from autograder.sandbox import client

LOG = os.environ["SELFTEST_STARTS_LOG"]


def note(what):
    with open(LOG, "a") as f:
        f.write(json.dumps({"what": what, "pid": os.getpid(), "ppid": os.getppid(),
                            "torch": "torch" in sys.modules}) + "\\n")


real_start, real_run_entry = client.Sandbox._start, selftest.run_entry


def _start(self):
    note("fork server")
    return real_start(self)


def run_entry(entry, engine, all_parts=False):
    note(entry.id)
    return real_run_entry(entry, engine, all_parts)


client.Sandbox._start, selftest.run_entry = _start, run_entry

if __name__ == "__main__":
    if sys.argv[1] == "thread":  # a thread of the caller's, running while selftest starts its workers
        threading.Thread(target=threading.Event().wait, daemon=True).start()
    from autograder.cli import main
    note("main")
    code = main(sys.argv[2:])
    sys.stdout.flush()
    os._exit(code or 0)
'''


def run_selftest(tmp_path, caller):
    script, log = tmp_path / "run_selftest.py", tmp_path / "starts.jsonl"
    script.write_text(SCRIPT)
    args = [caller, "selftest", "--jobs", "2", "--seed", "5"] + [a for e in ENTRIES for a in ("--only", e)]
    done = subprocess.run([sys.executable, str(script), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=900, env={**__import__("os").environ, "SELFTEST_STARTS_LOG": str(log)})
    notes = [json.loads(line) for line in log.read_text().splitlines()]
    return done, notes


def test_selftest_jobs_2_starts_one_fork_server_before_torch(tmp_path):
    """Expected: `selftest --jobs 2` from a process that runs one thread starts exactly one fork server,
    in its own process, before that process imports torch; the entries are graded in its forked
    workers (children of it), with the usual verdicts (the mutant killed, the variant at full marks).
    Before: two fork servers, one in each spawned worker."""
    done, notes = run_selftest(tmp_path, "one-thread")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "kill rate: 1/1" in done.stdout and "variants: 1/1 kept full marks" in done.stdout, done.stdout
    main = next(n["pid"] for n in notes if n["what"] == "main")
    starts = [n for n in notes if n["what"] == "fork server"]
    assert [(n["pid"], n["torch"]) for n in starts] == [(main, False)], notes
    graded = [n for n in notes if n["what"] in ENTRIES]
    assert sorted(n["what"] for n in graded) == sorted(ENTRIES), notes
    assert all(n["pid"] != main and n["ppid"] == main for n in graded), notes


def test_selftest_jobs_2_spawns_its_workers_where_another_thread_runs(tmp_path):
    """Expected: where the caller runs a thread of its own, the workers are spawned (no fork with a
    thread that may hold a lock), each starting its own fork server: two, none in the caller; the
    verdicts are the same."""
    done, notes = run_selftest(tmp_path, "thread")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "kill rate: 1/1" in done.stdout and "variants: 1/1 kept full marks" in done.stdout, done.stdout
    main = next(n["pid"] for n in notes if n["what"] == "main")
    starts = [n for n in notes if n["what"] == "fork server"]
    assert len(starts) == 2 and len({n["pid"] for n in starts}) == 2 and main not in {n["pid"] for n in starts}, notes


@pytest.mark.quick
@pytest.mark.parametrize("other_thread", [False, True])
def test_run_all_forks_only_from_one_thread(monkeypatch, other_thread):
    """Expected: run_all with jobs > 1 takes the forked path (pool.fork_pool: one fork server) exactly
    when no other Python thread runs here (pool.one_thread_here), else the spawn path; nothing is
    started (both are stopped at their entry)."""
    taken = []

    class Stop(Exception):
        pass

    def forked(*args):
        taken.append("fork")
        raise Stop

    class Spawned:
        def __init__(self, max_workers, mp_context, **kwargs):
            taken.append(mp_context.get_start_method())
            raise Stop

    monkeypatch.setattr(selftest, "_run_forked_pool", forked)
    monkeypatch.setattr(selftest, "ProcessPoolExecutor", Spawned)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, daemon=True)
    if other_thread:
        thread.start()
    else:
        monkeypatch.setattr(threading, "active_count", lambda: 1)  # pytest's own threads, if any, set aside
    try:
        assert pool.one_thread_here() is not other_thread
        with pytest.raises(Stop):
            selftest.run_all(selftest.corpus()[:1], jobs=2)
    finally:
        stop.set()
    assert taken == (["spawn"] if other_thread else ["fork"])
