"""Issue 24 item 2: with --device cuda the room shows the NVIDIA device nodes and the driver's
user-space libraries where this host's loader finds them, and nothing more (sandbox/nvidia.py).

No GPU here: a fake driver layout in a temporary folder (a loader cache pointing into it, a link
from a shown system folder into a driver folder outside it, a folder on LD_LIBRARY_PATH, and
names that must be left out) stands in for the host.
"""
import os

import pytest

from autograder.inside import syscalls
from autograder.sandbox import nvidia, room

V = "550.54.15"


def _layout(tmp_path):
    dev, system, driver, extra = (tmp_path / n for n in ("dev", "syslib", "nvidia/lib64", "ldpath"))
    for folder in (dev, system, driver, extra, dev / "nvidia-caps"):
        folder.mkdir(parents=True)
    for name in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset",
                 "nvidia-nvswitchctl", "nvram", "null", "nvidia0-extra"):
        (dev / name).write_text("")
    for stem in ("libcuda.so", "libnvidia-ml.so", "libnvidia-ptxjitcompiler.so", "libnvidia-eglcore.so"):
        (driver / f"{stem}.{V}").write_text("")
        os.symlink(f"{stem}.{V}", driver / f"{stem}.1")
    os.symlink(driver / "libcuda.so.1", system / "libcuda.so.1")  # /lib/libcuda.so.1 -> /usr/local/nvidia/lib64
    (system / "libz.so.1").write_text("")
    (driver / f"libnvidia-gpucomp.so.{V}").write_text("")  # in no cache: loaded by libcuda from beside it
    (extra / f"libnvidia-nvvm.so.{V}").write_text("")
    os.symlink(f"libnvidia-nvvm.so.{V}", extra / "libnvidia-nvvm.so.4")
    (extra / "libfoo.so.1").write_text("")
    cache = "\n".join([
        "40 libs found in cache `/etc/ld.so.cache'",
        f"\tlibz.so.1 (libc6,x86-64) => {system}/libz.so.1",
        f"\tlibcuda.so.1 (libc6,x86-64) => {system}/libcuda.so.1",
        f"\tlibcuda.so (libc6,x86-64) => {driver}/libcuda.so",  # listed but gone: left out
        f"\tlibnvidia-ml.so.1 (libc6,x86-64) => {driver}/libnvidia-ml.so.1",
        f"\tlibnvidia-ptxjitcompiler.so.1 (libc6,x86-64) => {driver}/libnvidia-ptxjitcompiler.so.1",
        f"\tlibnvidia-eglcore.so.1 (libc6,x86-64) => {driver}/libnvidia-eglcore.so.1"])
    os.symlink(extra, tmp_path / "ldlink")  # LD_LIBRARY_PATH names it through a linked folder
    library_path = f"{tmp_path}/missing::{tmp_path}/ldlink:{system}"
    return dev, system, driver, extra, cache, library_path


@pytest.mark.quick
def test_the_device_nodes_are_the_ones_cuda_opens(tmp_path):
    dev = _layout(tmp_path)[0]
    assert nvidia.device_nodes(str(dev)) == [str(dev / n) for n in (
        "nvidia-caps", "nvidia-modeset", "nvidia-uvm", "nvidia-uvm-tools", "nvidia0", "nvidia1", "nvidiactl")]
    assert nvidia.device_nodes(str(tmp_path / "none")) == []


def test_the_driver_libraries_are_found_as_the_loader_finds_them_links_and_all(tmp_path):
    dev, system, driver, extra, cache, library_path = _layout(tmp_path)
    args, room_path = nvidia.library_args([str(system)], cache, library_path)
    triples = [tuple(args[i:i + 3]) for i in range(0, len(args), 3)]
    assert triples == [
        ("--symlink", f"libcuda.so.{V}", f"{driver}/libcuda.so.1"), ("--ro-bind", f"{driver}/libcuda.so.{V}",
                                                                     f"{driver}/libcuda.so.{V}"),
        ("--symlink", f"libnvidia-ml.so.{V}", f"{driver}/libnvidia-ml.so.1"),
        ("--ro-bind", f"{driver}/libnvidia-ml.so.{V}", f"{driver}/libnvidia-ml.so.{V}"),
        ("--symlink", f"libnvidia-ptxjitcompiler.so.{V}", f"{driver}/libnvidia-ptxjitcompiler.so.1"),
        ("--ro-bind", f"{driver}/libnvidia-ptxjitcompiler.so.{V}", f"{driver}/libnvidia-ptxjitcompiler.so.{V}"),
        ("--symlink", f"libnvidia-nvvm.so.{V}", f"{tmp_path}/ldlink/libnvidia-nvvm.so.4"),
        ("--ro-bind", f"{extra}/libnvidia-nvvm.so.{V}", f"{tmp_path}/ldlink/libnvidia-nvvm.so.{V}"),
        ("--ro-bind", f"{driver}/libnvidia-gpucomp.so.{V}", f"{driver}/libnvidia-gpucomp.so.{V}")]
    # the link in the shown system folder is there already; the room's LD_LIBRARY_PATH keeps the
    # grader's folders that hold a driver library, in its order (not the missing or empty ones)
    assert room_path == f"{tmp_path}/ldlink:{system}"
    assert nvidia.library_args([str(system)], "", "") == ([], None)


def test_the_room_adds_exactly_the_driver_only_for_cuda(tmp_path, monkeypatch):
    dev, system, driver, extra, cache, library_path = _layout(tmp_path)
    monkeypatch.setattr(room, "gpu_nodes", lambda: nvidia.device_nodes(str(dev)))
    monkeypatch.setattr(nvidia, "loader_cache", lambda: cache)
    monkeypatch.setenv("LD_LIBRARY_PATH", library_path)
    monkeypatch.setattr(room, "SYSTEM_LIBS", room.SYSTEM_LIBS + (str(system),))

    def mounts(argv):
        end = argv.index("--")
        return {tuple(argv[i:i + 3]) for i, a in enumerate(argv[:end])
                if a in ("--dev-bind", "--ro-bind", "--symlink", "--setenv")}

    on_cpu = room.command(["-c", "pass"], user_namespace=False)
    added = mounts(room.command(["-c", "pass"], user_namespace=True, device="cuda")) - mounts(on_cpu)
    nodes = {("--dev-bind", n, n) for n in nvidia.device_nodes(str(dev))}
    libraries, _ = nvidia.library_args([str(system)], cache, library_path)
    assert added == nodes | {tuple(libraries[i:i + 3]) for i in range(0, len(libraries), 3)} | {
        ("--setenv", "LD_LIBRARY_PATH", f"{tmp_path}/ldlink:{system}")}
    assert not any("nvidia" in " ".join(m) or "libcuda" in " ".join(m) for m in mounts(on_cpu))


def test_the_syscall_allow_list_keeps_what_the_cuda_driver_calls():
    """The driver talks to its device files by ioctl and maps their memory: the allow-list keeps
    each call it needs (another branch restricts the list; this says which ones must stay)."""
    assert set(syscalls.CUDA_DRIVER) <= set(syscalls.ALLOWED)


def test_bubblewrap_builds_the_room_with_a_fake_driver_and_the_loader_path(tmp_path, monkeypatch):
    """The arguments are ones bubblewrap takes: in the room the driver's link, its file and the
    loader path are there as on the host (a fake driver: bwrap itself, no GPU needed)."""
    import subprocess

    import pytest

    from autograder.sandbox import client

    if not client.plan()["room"]:
        pytest.skip(f"no room on this machine: {client.plan()['why']}")
    driver = tmp_path / "nvidia" / "lib64"
    driver.mkdir(parents=True)
    (driver / f"libcuda.so.{V}").write_text("driver")
    os.symlink(f"libcuda.so.{V}", driver / "libcuda.so.1")
    monkeypatch.setattr(nvidia, "loader_cache", lambda: "")
    monkeypatch.setenv("LD_LIBRARY_PATH", str(driver))
    look = (f"import os; print(os.environ['LD_LIBRARY_PATH'], os.readlink('{driver}/libcuda.so.1'), "
            f"open('{driver}/libcuda.so.1').read(), sorted(os.listdir('{driver}')))")
    argv = room.command(["-I", "-S", "-c", look], user_namespace=os.geteuid() != 0, device="cuda")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(driver), f"libcuda.so.{V}", "driver", "['libcuda.so.1',", f"'libcuda.so.{V}']"]


def test_a_non_root_room_opens_the_bound_device_nodes(monkeypatch):
    """Without root the nodes are bound, not made, so the uid opens them wherever their permissions
    allow. A character device made here (as root: /dev/null's numbers) stands in for /dev/nvidia0;
    bubblewrap runs as uid 65534 in a user namespace with the room's GPU arguments."""
    import shutil
    import stat
    import subprocess

    import pytest

    binary, setpriv = room.bwrap_binary(), shutil.which("setpriv")
    if os.geteuid() != 0 or not binary or not setpriv:
        pytest.skip("needs root (to make a device node), bubblewrap and setpriv")
    import tempfile
    from pathlib import Path

    folder = tempfile.TemporaryDirectory(prefix="fake-gpu-")  # pytest's own folder is closed to other uids
    dev = Path(folder.name) / "dev"
    dev.mkdir()
    os.chmod(folder.name, 0o755)
    os.mknod(dev / "nvidia0", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.chmod(dev / "nvidia0", 0o666)
    monkeypatch.setattr(room, "gpu_nodes", lambda: nvidia.device_nodes(str(dev)))
    monkeypatch.setattr(nvidia, "loader_cache", lambda: "")
    monkeypatch.setenv("LD_LIBRARY_PATH", "")
    gpu = room.gpu_args()
    assert gpu == ["--dev-bind", str(dev / "nvidia0"), str(dev / "nvidia0")]
    argv = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", binary, "--unshare-user", "--unshare-pid",
            "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
            "--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", *gpu,
            "--", "/bin/sh", "-c", f"echo data > {dev}/nvidia0 && echo opened"]
    with folder:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "opened", done.stderr
