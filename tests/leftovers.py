"""What a submission's uid can still find of the grader's after grading (issue 28): a search run as
that uid, over every file it may read and every process it may see, for strings of the run's own
(a token only the submission wrote, the metadata's e-mail address, the reference's text).

The submission this module writes (leaking_causal) copies every input its CausalAttention is given,
with the run's token, into /tmp, /var/tmp and /dev/shm, and leaves a detached process behind that
keeps writing the token: none of it may outlive the part.
"""
import json
import os
import stat

# the test machine's own folders, which a grading container does not have (the project's checkouts,
# the interpreter and its packages): searched nowhere, since they are not the grader's leftovers
NOT_SEARCHED = ("/proc", "/sys", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/boot", "/work",
                "/opt", "/snap", "/var/lib", "/var/cache/apt", "/root")
REFERENCE_TEXT = "Single-head causal self-attention"  # a line of the reference the submission does not have
MAX_FILE = 1 << 20

LEAK = '''
import os as _os
import time as _time

_TOKEN = {reversed_token!r}[::-1]
_SPAWNED = []


def _leak(x):
    values = " ".join("%.6f" % v for v in x.detach().flatten()[:6].tolist())
    for folder in ("/tmp", "/var/tmp", "/dev/shm"):
        try:
            with open("%s/seen-%d" % (folder, _os.getpid()), "a") as f:
                f.write("INPUT-" + _TOKEN + " " + values + "\\n")
        except OSError:
            pass
    if not _SPAWNED:
        _SPAWNED.append(1)
        _spawn()


def _spawn():
    try:
        if _os.fork() == 0:
            _os.setsid()
            if _os.fork() == 0:
                while True:
                    _time.sleep(0.05)
                    try:
                        with open("/tmp/daemon-%d" % _os.getpid(), "w") as f:
                            f.write("INPUT-" + _TOKEN)
                    except OSError:
                        pass
            _os._exit(0)
    except OSError:
        pass

'''


def leaking_causal(solution, token):
    """The reference causal.py without REFERENCE_TEXT, copying each input it is given (with token) and
    leaving a process behind."""
    source = solution.replace(REFERENCE_TEXT, "One causal head")
    source = source.replace("import torch.nn as nn\n", "import torch.nn as nn\n" + LEAK.format(reversed_token=token[::-1]), 1)
    marker = "        b, num_tokens, d_in = x.shape\n"
    assert marker in source
    return source.replace(marker, "        _leak(x)\n" + marker, 1)


def search_as(uid, needles, reference_folders=(), since=None):
    """Fork, become uid (no groups, no capabilities) and look: every file it may read outside
    NOT_SEARCHED, every process's command line and environment it may read, for each needle; the
    files under reference_folders also for REFERENCE_TEXT -> {'hits': [...], 'files': count of the
    files it may read, 'read': count of those read}. since (a time stamp of the files' clock, taken
    before the run made its needles; None: every file is read): a file whose inode has not changed
    since then (st_ctime, which every write, rename, link or chmod moves and no process can set back)
    cannot hold a needle of the run and is not read (issue 38 item 6: on a shared test machine the
    search read 4 GB of other checkouts' environments in /tmp and /home, 7.6 s of CPU)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            found = _search([n.encode() for n in needles], [str(f) for f in reference_folders], since)
            os.write(write_end, json.dumps(found).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    return json.loads(data)


def _search(needles, reference_folders, since=None):
    hits, files, read = [], 0, 0
    for top, dirs, names in os.walk("/"):
        dirs[:] = [d for d in dirs if os.path.join(top, d) not in NOT_SEARCHED]
        for name in names:
            path = os.path.join(top, name)
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE or not os.access(path, os.R_OK):
                continue
            files += 1
            if since is not None and info.st_ctime < since:
                continue  # unchanged since before the run: nothing of the run's in it
            data = _read(path)
            if data is None:
                continue
            read += 1
            wanted = needles + ([REFERENCE_TEXT.encode()] if any(path.startswith(f) for f in reference_folders) else [])
            hits += [f"{path}: {n.decode()}" for n in wanted if n in data]
    for name in os.listdir("/proc"):
        if name.isdigit():
            for what in ("cmdline", "environ"):
                data = _read(f"/proc/{name}/{what}", proc=True)
                hits += [f"/proc/{name}/{what}: {n.decode()}" for n in needles if data and n in data]
    return {"hits": hits, "files": files, "read": read}


def _read(path, proc=False):
    try:
        info = os.lstat(path)
        if not proc and (not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE):
            return None
        with open(path, "rb") as f:
            return f.read(MAX_FILE)
    except OSError:
        return None


def processes_of(uids):
    """Every process (zombies too) whose real or effective uid is one of uids."""
    from autograder.sandbox import container

    return sorted(pid for uid in uids for pid in container.processes_of(uid))
