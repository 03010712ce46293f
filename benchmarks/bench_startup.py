"""A batch's CPU, process by process: where its start-up goes (issue 38 item 7).

    .venv/bin/python benchmarks/bench_startup.py [--students 1] [--jobs 2] [--repeats 3] [--fresh-cache]

Runs `python -m autograder batch` over copies of the solutions under the kernel's process accounting
(acct(2), BSD accounting v3: one record per process as it exits, its own user and system CPU, not its
children's; needs root and a kernel built with it) and sums the records of the batch's process tree
by role:

    parent         the `batch` process itself
    workers        the grading workers forked from it (`--jobs`)
    bwrap          the room's processes (bubblewrap's own, before and around each Python it starts)
    fork servers, room probe  the sandbox's fork servers (each a fresh `python -I`: its imports, its
                   warm-up; one per batch, plus one per worker that has no door to the batch's) and the
                   room's probe (`python -I -S -c pass` in bwrap, about 0.02 s)
    sessions       each submission's intermediate, leader and part child, all of them
    env check sessions  the sessions of the environment check's grading of the reference (only where
                   it is not cached: --fresh-cache gives it an empty cache folder), told apart as the
                   sessions opened before the first worker was forked
    other          any other process of the tree (each is listed by its name; where pids wrapped
                   during the run, pid_max being small, a neighbour's process may land here)

The records' resolution is the kernel's accounting tick (10 ms). Medians over the repeats, in CPU
seconds; the load average at the start and the end is printed with them: other work on the machine
slows every process but is not counted in any.
"""
import argparse
import ctypes
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORD = struct.Struct("<BBHIIIIIIf8H16s")  # struct acct_v3 (linux/acct.h), 64 bytes
AFORK = 0x01  # forked, never exec'd
PR_SET_CHILD_SUBREAPER = 36
AHZ = 100  # the accounting tick of acct_v3's comp_t times


def _comp(value: int) -> float:
    """A comp_t (13-bit mantissa, 3-bit base-8 exponent, in AHZ ticks) -> seconds."""
    return ((value & 0x1FFF) << (3 * (value >> 13))) / AHZ


def records(path: Path) -> list[dict]:
    data = path.read_bytes()
    out = []
    for offset in range(0, len(data) - RECORD.size + 1, RECORD.size):
        flag, version, _tty, _exit, _uid, _gid, pid, ppid, btime, _etime, utime, stime, *_rest, comm = \
            RECORD.unpack_from(data, offset)
        if version & 0x7F != 3:
            continue
        out.append({"pid": pid, "ppid": ppid, "forked": bool(flag & AFORK), "btime": btime,
                    "cpu": _comp(utime) + _comp(stime), "comm": comm.rstrip(b"\0").decode(errors="replace")})
    return out


def classify(recs: list[dict], root: int, reaper: int, env_check: bool = False) -> dict:
    """Sum the CPU of root's process tree by role (see the module's docstring). reaper: this process,
    made the subreaper of the batch's tree, so that an orphan (bwrap forks and its first process
    exits) is recorded with this process as its parent instead of init. env_check: the reference was
    graded (no cached verdict), so the sessions opened before the first worker are the env check's."""
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())

    def after_root(pid: int) -> int:
        return (pid - root) % pid_max

    children: dict[int, list[dict]] = {}
    for r in recs:
        children.setdefault(r["ppid"], []).append(r)

    def subtree(pid: int) -> list[dict]:
        found, todo = [], [pid]
        while todo:
            for c in children.get(todo.pop(), []):
                found.append(c)
                todo.append(c["pid"])
        return found

    tops = [r for r in recs if r["pid"] == root] + [r for r in children.get(reaper, []) if r["pid"] != root]
    tree = [t for top in tops for t in [top] + subtree(top["pid"])]  # a pid reused within one run: rare
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}

    def add(role: str, cpu: float) -> None:
        sums[role] = sums.get(role, 0.0) + cpu
        counts[role] = counts.get(role, 0) + 1

    workers = sorted((r for r in children.get(root, []) if r["forked"] and r["comm"] == "python"),
                     key=lambda r: r["pid"])
    first_worker = workers[0]["pid"] if workers else None
    # every exec'd Python but the batch: its fork servers, and the room's probe (a `pass`: ~0.02 s)
    servers = [r for r in tree if r["pid"] != root and not r["forked"] and r["comm"].startswith("python")]
    in_sessions = set()
    for server in servers:
        for session in children.get(server["pid"], []):  # an intermediate: one per session
            inside = [session] + subtree(session["pid"])
            in_sessions |= {r["pid"] for r in inside}
            # the env check's sessions are opened before any worker exists (pids grow within a run, from
            # the batch's own, modulo pid_max: they wrap every few minutes on a busy machine)
            env = env_check and (first_worker is None or after_root(session["pid"]) < after_root(first_worker))
            add("env check sessions" if env else "sessions", sum(r["cpu"] for r in inside))
    for r in tree:
        if r["pid"] in in_sessions:
            continue
        if r["pid"] == root:
            add("parent", r["cpu"])
        elif r in workers:
            add("workers", r["cpu"])
        elif r in servers:
            add("fork servers, room probe", r["cpu"])
        elif r["comm"] == "bwrap":
            add("bwrap", r["cpu"])
        else:
            add(f"other: {r['comm']}", r["cpu"])
    sums["total"] = sum(sums.values())
    return {k: round(v, 2) for k, v in sums.items()} | {"counts": counts}


def one_run(students: int, jobs: int, fresh_cache: bool) -> dict:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # the batch's orphans are recorded as ours
    work = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    log = work / "pacct"
    log.touch()
    env = dict(os.environ)
    if fresh_cache:
        (work / "cache").mkdir(mode=0o700)
        env["CH03_ENVCHECK_CACHE"] = str(work / "cache")
    try:
        for i in range(students):
            shutil.copytree(ROOT / "solutions" / "ch03", work / "class" / f"student{i:03d}")
        if libc.acct(str(log).encode()) != 0:
            raise SystemExit(f"acct(2) refused: {os.strerror(ctypes.get_errno())} (root and CONFIG_BSD_PROCESS_ACCT)")
        try:
            proc = subprocess.Popen([sys.executable, "-m", "autograder", "batch", str(work / "class"),
                                     "--out", str(work / "out"), "--jobs", str(jobs), "--force"],
                                    cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            _, err = proc.communicate()
        finally:
            libc.acct(None)
        if proc.returncode != 0:
            raise SystemExit(f"batch failed ({proc.returncode}): {err[-2000:]}")
        return classify(records(log), proc.pid, os.getpid(), env_check=fresh_cache)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--fresh-cache", action="store_true", help="grade the reference (an empty env-check cache)")
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    runs = [one_run(args.students, args.jobs, args.fresh_cache) for _ in range(args.repeats)]
    roles = sorted({k for r in runs for k in r if k != "counts"})
    print(json.dumps({"students": args.students, "jobs": args.jobs, "repeats": args.repeats,
                      "fresh_cache": args.fresh_cache,
                      "load_average_start_end": [round(load_start, 2), round(os.getloadavg()[0], 2)],
                      "processes_per_role": runs[-1]["counts"]}))
    print(f"{'role':<28} {'median':>7}  each run (CPU seconds)")
    for role in roles:
        each = [r.get(role, 0.0) for r in runs]
        print(f"{role:<28} {statistics.median(each):>7.2f}  {' '.join(f'{v:.2f}' for v in each)}")

if __name__ == "__main__":
    main()
