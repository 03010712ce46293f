"""The grader's temporary folders outlive no grader (docs/sandbox.md, "The grader's temporary files";
autograder/scratch.py): a grading process killed with SIGKILL leaves its staged folder behind, and
the next Engine removes it; a folder whose owner is alive (another grader) is never touched; a pid
the kernel gave to another process does not keep a dead owner's folder; links, other prefixes,
other PID namespaces and other users' folders are left alone; nobody but the grader's uid reads one.

Each test sweeps a temporary folder of its own (tempfile's, pointed at tmp_path), so graders and
tests running beside it on the machine neither disturb nor are disturbed.
"""
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile

import pytest

from autograder import PROJECT_ROOT, scratch
from autograder import settings as settings_mod
from autograder.engine import Engine

SOLUTIONS = PROJECT_ROOT / "solutions" / "ch03"

# a grading process (grading.grade_submission, the production path) stopped mid-grade: staging is
# done and the runner is entered, which says where the staged modules are and waits for ever, so
# the test kills it on evidence the grader wrote, never after a sleep; no fork server is needed
GRADER = """
import sys
from autograder import grading, runner

def held(sandbox, staged, *args, **kwargs):
    print(staged.folder, flush=True)
    sys.stdin.read()
    raise SystemExit("the test closed stdin instead of killing the grader")

runner.run_submission = held
grading.grade_submission(sys.argv[1], None, {}, None, seed=1)
"""

# another process holding a folder of its own (another instructor's batch, a pytest-xdist worker)
HOLDER = """
import sys
from autograder import scratch
print(scratch.make("staged"), flush=True)
sys.stdin.read()
"""


@pytest.fixture
def tmp(tmp_path, monkeypatch):
    """tempfile's folder, here and in the processes the test starts, is the test's own."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.setenv("TMPDIR", str(folder))
    # torch's cache folder is chosen (scratch.torch_cache): an engine made here makes none in the folder
    monkeypatch.setenv(scratch.TORCH_CACHE_ENV, str(tmp_path / "torch-cache-of-this-test"))
    return folder


def start(script, *args):
    return subprocess.Popen([sys.executable, "-c", script, *map(str, args)], cwd=PROJECT_ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def dead_owner():
    """(pid, start time) of a process that has ended and been reaped."""
    process = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    born = scratch.start_time(process.pid)
    process.stdin.close()
    process.wait()
    return process.pid, born


def name(kind, pid, born, ns=None):
    ns = ns if ns is not None else os.readlink("/proc/self/ns/pid")[5:-1]
    return f"{kind}-{pid}.{born}.{ns}-"


# a grading process that imports torch._dynamo (as the emulated GPU and a stand-in built on the meta
# device do), then says what torch chose and what the temporary folder holds, and waits
TORCH_USER = """
import os, sys, tempfile
from autograder import settings
from autograder.engine import Engine
Engine.open(settings.from_environment(), check=False, sandbox=object()).close()
import torch._dynamo
print(os.environ["TORCHINDUCTOR_CACHE_DIR"], *sorted(os.listdir(tempfile.gettempdir())), flush=True)
sys.stdin.read()
"""


# not in the quick subset: each of its two processes imports torch and torch._dynamo (about 5 s of CPU)
def test_torch_s_cache_folder_is_the_grader_s_own_and_goes_with_it(tmp_path):
    """Expected: a grading process's `import torch._dynamo` makes no torchinductor_<user> folder in the
    temporary folder: torch's cache is a torch-cache-<pid>.... folder of the process's own, mode 0700,
    the only thing there; it is gone when the process exits, and when the process is killed with
    SIGKILL the next engine's sweep removes it. Whatever torch cache the test's own process has."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    env = {k: v for k, v in os.environ.items() if k != scratch.TORCH_CACHE_ENV}
    env["TMPDIR"] = str(folder)
    for ending in ("exit", "SIGKILL"):
        process = subprocess.Popen([sys.executable, "-c", TORCH_USER], cwd=PROJECT_ROOT, env=env,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            said = process.stdout.readline().split()  # the process's own word, once torch._dynamo is imported
            assert len(said) == 2, f"{ending}: the temporary folder holds {said[1:]}, torch's cache is {said[:1]}"
            cache, found = said
            assert cache == str(folder / found) and found.startswith(f"torch-cache-{process.pid}."), said
            assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700
            if ending == "SIGKILL":
                os.kill(process.pid, signal.SIGKILL)
            process.stdin.close()
        finally:
            process.wait(timeout=300)
        if ending == "exit":
            assert process.returncode == 0 and os.listdir(folder) == [], "the exiting process left its cache"
        else:
            assert process.returncode == -signal.SIGKILL and os.listdir(folder) == [found]
            assert scratch.sweep(str(folder)) == [cache] and os.listdir(folder) == []


# not in the quick subset: its grader process imports torch (about 4 s of CPU)
def test_a_grader_killed_mid_grade_leaves_its_staged_folder_and_the_next_engine_removes_it(tmp, tmp_path):
    """Expected: the killed grader's staged folder (with the staged module in it) is there after the
    SIGKILL, named after the grader's pid; Engine.open removes it and nothing else in the folder."""
    submission = tmp_path / "alice"
    submission.mkdir()
    shutil.copy(SOLUTIONS / "simple_attention.py", submission)
    grader = start(GRADER, submission)
    try:
        staged = grader.stdout.readline().strip()  # the grader's own word: staging done, grading begun
        assert staged, "the grader ended before it began grading"
        os.kill(grader.pid, signal.SIGKILL)
    finally:
        grader.kill()
        grader.wait()
    assert grader.returncode == -signal.SIGKILL
    folder = os.path.join(tmp, os.path.relpath(staged, tmp).split(os.sep)[0])
    assert os.path.basename(folder).startswith(f"staged-{grader.pid}."), folder
    assert os.path.isfile(os.path.join(staged, "simple_attention.py")), "the SIGKILL left nothing behind"
    bystander = tmp / "notes"
    bystander.mkdir()

    engine = Engine.open(settings_mod.from_environment(), check=False, sandbox=object())  # a sandbox it does not own
    engine.close()
    assert not os.path.lexists(folder), "the next engine left the killed grader's folder"
    assert sorted(os.listdir(tmp)) == ["notes"]


@pytest.mark.quick  # no grader process: sweeps of folders made here
def test_a_live_owner_s_folder_survives_every_sweep(tmp):
    """Expected: the folders of a live process (another grader) and of this one are kept by a sweep;
    once that process is gone, the next sweep removes its folder, and only its."""
    other = start(HOLDER)
    try:
        theirs = other.stdout.readline().strip()
        with scratch.folder("staged") as mine:
            assert scratch.sweep() == []
            assert os.path.isdir(theirs) and os.path.isdir(mine)
            other.kill()
            other.wait()
            assert scratch.sweep() == [theirs]
            assert os.path.isdir(mine)
        assert not os.path.lexists(mine)  # the block's end removed it
    finally:
        other.kill()
        other.wait()


@pytest.mark.quick  # no grader process: sweeps of folders made here
def test_a_pid_given_to_another_process_does_not_keep_a_dead_owner_s_folder(tmp):
    """Expected: a folder named after this process's pid but another start time (its owner had the
    pid before us) is swept, while this process's own folders stay."""
    born = scratch.start_time(os.getpid())
    earlier = tmp / (name("staged", os.getpid(), born - 1) + "x")
    earlier.mkdir()
    (earlier / "causal.py").write_text("a student's code\n")
    own = scratch.make("unzipped")
    assert scratch.sweep() == [str(earlier)]
    assert os.path.isdir(own)


@pytest.mark.quick  # no grader process: sweeps of folders made here
def test_links_other_prefixes_namespaces_and_users_are_left_alone(tmp, tmp_path):
    """Expected: with a dead owner in every name, only the real folder of ours is removed: a link (and
    what it points to), a prefix of no kind of ours, another PID namespace's folder and, as root,
    another user's folder stay."""
    pid, born = dead_owner()
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "keep").write_text("not the grader's\n")
    link = tmp / (name("staged", pid, born) + "link")
    link.symlink_to(target, target_is_directory=True)
    foreign = tmp / (name("stage", pid, born) + "x")
    other_ns = tmp / (name("staged", pid, born, ns=1) + "x")
    ours = tmp / (name("ch03-session", pid, born) + "x")
    for folder in (foreign, other_ns, ours):
        folder.mkdir()
    kept = [link, foreign, other_ns]
    if os.geteuid() == 0:
        someone = tmp / (name("selftest", pid, born) + "x")
        someone.mkdir()
        os.chown(someone, 65534, 65534)
        kept.append(someone)
    assert scratch.sweep() == [str(ours)]
    assert all(os.path.lexists(path) for path in kept)
    assert (target / "keep").read_text() == "not the grader's\n"


@pytest.mark.quick  # no grader process: sweeps of folders made here
def test_a_folder_keeps_other_users_out(tmp):
    """Expected: mode 0700, owned by the grader; as root, a process of another uid cannot list it or
    read a file in it."""
    with scratch.folder("staged") as folder:
        info = os.stat(folder)
        assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.geteuid()
        assert os.path.basename(folder).startswith(name("staged", os.getpid(), scratch.start_time(os.getpid())))
        with open(os.path.join(folder, "causal.py"), "w") as f:
            f.write("a student's code\n")
        if os.geteuid() != 0:
            return
        probe = subprocess.run([sys.executable, "-c", f"""
import os, sys
os.setgid(65534); os.setuid(65534)
for attempt in (lambda: os.listdir({folder!r}), lambda: open({folder!r} + "/causal.py").read()):
    try:
        attempt()
        sys.exit("read")
    except PermissionError:
        pass
"""], capture_output=True, text=True)
        assert probe.returncode == 0, probe.stderr


# a batch writing an output (outputs.atomic_write: scratch.replaced), stopped half-way through the file
WRITER = """
import sys
from pathlib import Path
from autograder import scratch
with scratch.replaced(Path(sys.argv[1])) as f:
    f.write("half of a student's feedback")
    f.flush()
    print("written", flush=True)
    sys.stdin.read()
"""


@pytest.mark.quick  # one small process, no torch
def test_a_writer_killed_mid_file_leaves_a_partial_the_next_write_there_removes(tmp_path):
    """Expected: the killed writer's partial file (named after its pid, mode 0600) is left and the
    target not written; the next batch's write in that folder (outputs.atomic_write) removes it and
    writes the target whole; a write that raises leaves the target as it was and no partial."""
    from autograder.batch.outputs import atomic_write

    target = tmp_path / "feedback" / "alice.md"
    target.parent.mkdir()
    writer = start(WRITER, target)
    try:
        assert writer.stdout.readline() == "written\n", "the writer ended before it wrote"  # its own word
        os.kill(writer.pid, signal.SIGKILL)
    finally:
        writer.kill()
        writer.wait()
    [partial] = os.listdir(target.parent)
    assert partial.startswith(f"{scratch.PARTIAL}-{writer.pid}.")
    partial = target.parent / partial
    assert partial.read_text() == "half of a student's feedback"
    assert stat.S_IMODE(os.stat(partial).st_mode) == 0o600 and not target.exists()

    atomic_write(target, "all of it\n")
    assert sorted(os.listdir(target.parent)) == ["alice.md"] and target.read_text() == "all of it\n"
    with pytest.raises(RuntimeError, match="a report failed"), scratch.replaced(target) as f:
        f.write("half")
        raise RuntimeError("a report failed half-way")
    assert sorted(os.listdir(target.parent)) == ["alice.md"] and target.read_text() == "all of it\n"
