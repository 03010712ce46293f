"""What of the NVIDIA driver the room shows with `grade --device cuda` (room.py), and nothing more.

  - the device nodes CUDA opens: /dev/nvidiactl, /dev/nvidia0..N, /dev/nvidia-uvm,
    /dev/nvidia-uvm-tools, /dev/nvidia-modeset and the folder /dev/nvidia-caps (MIG), where present;
  - the driver's user-space libraries (libcuda, NVML, the PTX JIT compiler, NVVM, gpucomp, the
    debugger's), found the way the dynamic loader finds them on this host: its cache
    (`ldconfig -p`) and the grader's LD_LIBRARY_PATH. Each one is shown at the path the loader
    gives and at every path its chain of symbolic links passes through, down to the file (a
    host may keep them in /usr/local/nvidia/lib64, with /lib/libcuda.so.1 a link into it);
    the folders that came from LD_LIBRARY_PATH are the room's LD_LIBRARY_PATH.

/proc/driver/nvidia needs no bind: every fresh /proc (the room's, each leader's) shows it.
CUDA's libraries that come with torch (cudart, cuBLAS, ...) live in site-packages, which the
room already shows; so do /usr/lib and the /lib links.
"""
import os
import re
import shutil
import subprocess

NODE = re.compile(r"nvidia(\d+|ctl|-uvm|-uvm-tools|-modeset|-caps)")
LIBRARY = re.compile(r"lib(cuda|cudadebugger|nvidia-(ml|ptxjitcompiler|nvvm|gpucomp))\.so(\.[0-9.]+)?")


def device_nodes(dev="/dev"):
    """The NVIDIA device nodes (and the nvidia-caps folder) under dev, sorted."""
    try:
        names = os.listdir(dev)
    except OSError:
        return []
    return sorted(os.path.join(dev, n) for n in names if NODE.fullmatch(n))


def loader_cache():
    """`ldconfig -p`'s text ('' where there is no ldconfig)."""
    binary = shutil.which("ldconfig") or next((p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig")
                                               if os.access(p, os.X_OK)), None)
    if not binary:
        return ""
    try:
        return subprocess.run([binary, "-p"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def driver_libraries(cache_text, library_path):
    """The driver libraries the loader would find -> (paths, folders of LD_LIBRARY_PATH that hold
    one). cache_text: `ldconfig -p`'s output; library_path: LD_LIBRARY_PATH's value. The other
    driver libraries beside each one found are taken too (libcuda loads its helpers by name)."""
    found, folders = [], []
    for line in cache_text.splitlines():
        name, arrow, path = line.strip().partition(" => ")
        if arrow and LIBRARY.fullmatch(name.split()[0]) and os.path.exists(path):
            found.append(path)
    for folder in filter(None, (library_path or "").split(":")):
        hits = _driver_files(folder)
        found += hits
        if hits and folder not in folders:
            folders.append(folder)
    reached = {os.path.realpath(p) for p in found}
    for folder in dict.fromkeys(os.path.dirname(os.path.realpath(p)) for p in list(found)):
        found += [p for p in _driver_files(folder) if os.path.realpath(p) not in reached]
    return list(dict.fromkeys(found)), folders


def _driver_files(folder):
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [os.path.join(folder, n) for n in names if LIBRARY.fullmatch(n)]


def chain(path):
    """Every path a library's symbolic links pass through -> [(path, link target or None)]; the
    last entry is where the file is reached (its folders may be links: the file is shown there)."""
    steps, seen = [], set()
    while os.path.islink(path) and path not in seen:
        seen.add(path)
        target = os.readlink(path)
        steps.append((path, target))
        path = os.path.normpath(os.path.join(os.path.dirname(path), target))
    return steps + [(path, None)]


def bind_args(paths, shown):
    """bwrap arguments that show each library's chain in the room, except where a folder the room
    already shows (shown: host folders) holds that entry."""
    shown = [os.path.realpath(f) for f in shown]
    args, done = [], set()
    for path in paths:
        for where, target in chain(path):
            folder = os.path.realpath(os.path.dirname(where))
            if where in done or any(os.path.commonpath([folder, s]) == s for s in shown):
                continue
            done.add(where)
            if target is not None:
                args += ["--symlink", target, where]
            else:
                args += ["--ro-bind", os.path.realpath(where), where]
    return args


def library_args(shown, cache_text=None, library_path=None):
    """The driver's libraries for the room -> (bwrap arguments, LD_LIBRARY_PATH for the room or None).
    Defaults: this host's loader cache and LD_LIBRARY_PATH."""
    cache_text = loader_cache() if cache_text is None else cache_text
    library_path = os.environ.get("LD_LIBRARY_PATH", "") if library_path is None else library_path
    paths, folders = driver_libraries(cache_text, library_path)
    return bind_args(paths, shown), ":".join(folders) or None
