"""Attack: memory spread over processes, each under the per-process limit, together over the part's.

At the first import, 5 forked processes each fill 150 MiB and wait (750 MiB in all; the test
lets the part use 512); every import raises with how many filled their share, how many were killed
and how many still hold their share at the end. A process may fill and be killed afterwards, so
"holding" (filled and still alive) is what the part's limit bounds. The count waits for every
process to have filled or died, with no deadline of its own: the part's limit decides, never the
machine's load (a loaded machine only makes the wait longer; the test gives the part the time).
(The import fails, so each check imports again: the result is kept on the os module.)"""
import os
import select
import struct
import time

SHARE, COUNT = 150 << 20, 5


def reap(kids, gone):
    for pid in kids:
        if pid not in gone and os.waitpid(pid, os.WNOHANG)[0]:
            gone.add(pid)  # nothing here exits on its own before 60 s: it was killed


def flood():
    ready_r, ready_w = os.pipe()
    kids = []
    for _ in range(COUNT):
        pid = os.fork()
        if pid == 0:
            block = b"\1" * SHARE  # written, so every page is really used
            os.write(ready_w, struct.pack("i", os.getpid()))
            time.sleep(60)
            os._exit(0)
        kids.append(pid)
    filled, gone = set(), set()
    while len(filled | gone) < COUNT:
        if select.select([ready_r], [], [], 0.05)[0]:
            data = os.read(ready_r, 4 * COUNT)
            filled.update(struct.unpack(f"{len(data) // 4}i", data))
        reap(kids, gone)
    time.sleep(0.3)  # a process the kernel is killing right now is gone, not holding
    reap(kids, gone)
    holding = len(filled - gone)
    return f"FILLED {len(filled)} of {COUNT}, KILLED {len(gone)}, HOLDING {holding}"


if not hasattr(os, "ch03_flood"):
    os.ch03_flood = flood()
raise RuntimeError(os.ch03_flood)
