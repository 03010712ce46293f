"""Attack: memory spread over processes, each under the per-process limit, together over the part's.

At the first import, 5 forked processes each fill 150 MiB and wait (750 MiB in all; the test
lets the part use 512); every import raises with how many filled their share and how many were killed.
(The import fails, so each check imports again: the result is kept on the os module.)"""
import os
import select
import time

SHARE, COUNT = 150 << 20, 5


def flood():
    ready_r, ready_w = os.pipe()
    kids = []
    for _ in range(COUNT):
        pid = os.fork()
        if pid == 0:
            block = b"\1" * SHARE  # written, so every page is really used
            os.write(ready_w, b"x")
            time.sleep(60)
            os._exit(0)
        kids.append(pid)
    filled, killed, gone = 0, 0, set()
    deadline = time.monotonic() + 2.5
    while filled + len(gone) < COUNT and time.monotonic() < deadline:
        if select.select([ready_r], [], [], 0.05)[0]:
            filled += len(os.read(ready_r, 64))
        for pid in kids:
            if pid not in gone and os.waitpid(pid, os.WNOHANG)[0]:
                gone.add(pid)
                killed += 1  # nothing here exits on its own before 60 s
    return f"FILLED {filled} of {COUNT}, KILLED {killed}"


if not hasattr(os, "ch03_flood"):
    os.ch03_flood = flood()
raise RuntimeError(os.ch03_flood)
