"""GPU memory of the parts' children, watched from the grader (`--device cuda`).

A child caps its own allocator (gpu.claim), but student code can lift that cap. The memory
control group does not see GPU memory. So the grader asks the driver (NVML, else nvidia-smi)
what each process holds on the GPU and kills a child that holds more than its part's limit plus
the CUDA context's share, as the kernel would kill it for host memory. The child's end then
reads "killed (SIGKILL)"; the part says why.

The driver names processes by their pid in the first PID namespace; the grader knows each
child's through its pidfd (client._host_pid). Where the grader itself runs in a container whose
PID namespace the driver does not see, no pid matches: `scripts/gpu-check.sh` proves a kill on
the machine it runs on.
"""
import ctypes
import os
import subprocess
import threading

from autograder.inside.gpu import CONTEXT_MB
from autograder.sandbox import procfs

PERIOD = 0.25  # seconds between two looks


def usage():
    """{host pid: MiB of GPU memory it holds} for every process on every GPU; {} when unknown."""
    try:
        return _nvml_usage()
    except (OSError, AttributeError, RuntimeError):
        pass
    try:
        done = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return {}
    return parse_smi(done.stdout) if done.returncode == 0 else {}


def parse_smi(output):
    """nvidia-smi's "pid, used_memory" CSV lines -> {pid: MiB}, summed over GPUs; odd lines skipped."""
    held: dict = {}
    for line in output.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) == 2 and fields[0].isdigit() and fields[1].isdigit():
            held[int(fields[0])] = held.get(int(fields[0]), 0) + int(fields[1])
    return held


class _Process(ctypes.Structure):  # nvmlProcessInfo_t (v2/v3)
    _fields_ = [("pid", ctypes.c_uint), ("used", ctypes.c_ulonglong),
                ("gpu_instance", ctypes.c_uint), ("compute_instance", ctypes.c_uint)]


def _nvml_usage():
    nvml = ctypes.CDLL("libnvidia-ml.so.1")
    if nvml.nvmlInit_v2() != 0:
        raise RuntimeError("nvmlInit")
    count = ctypes.c_uint(0)
    held: dict = {}
    if nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
        raise RuntimeError("nvmlDeviceGetCount")
    for index in range(count.value):
        device = ctypes.c_void_p()
        if nvml.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(device)) != 0:
            raise RuntimeError("nvmlDeviceGetHandleByIndex")
        size = ctypes.c_uint(256)
        table = (_Process * size.value)()
        if nvml.nvmlDeviceGetComputeRunningProcesses_v3(device, ctypes.byref(size), table) != 0:
            raise RuntimeError("nvmlDeviceGetComputeRunningProcesses")
        for entry in table[:size.value]:
            held[entry.pid] = held.get(entry.pid, 0) + (entry.used >> 20)
    return held


def over_limit(held, watched):
    """held {pid: MiB}, watched {pid: the part's memory_mb} -> [(pid, MiB held, MiB allowed)] over it."""
    return [(pid, held[pid], limit + CONTEXT_MB) for pid, limit in watched.items()
            if held.get(pid, 0) > limit + CONTEXT_MB]


class Watch:
    """One thread per grader process: every PERIOD, kill the watched children over their limit."""

    def __init__(self, look=usage):
        self.look, self.watched, self.killed = look, {}, {}
        self._fresh()
        os.register_at_fork(after_in_child=self._fresh)  # a forked worker: no thread, no lock held

    def _fresh(self):
        self.lock, self.thread, self.pid = threading.Lock(), None, None
        self.watched, self.killed = {}, {}

    def add(self, pid: int, pidfd: int, memory_mb: int) -> None:
        with self.lock:
            self.watched[pid] = (pidfd, int(memory_mb))
            if self.thread is None or self.pid != os.getpid():  # a forked worker starts its own thread
                self.pid = os.getpid()
                self.thread = threading.Thread(target=self._run, daemon=True, name="gpu-watch")
                self.thread.start()

    def remove(self, pid: int) -> str | None:
        with self.lock:
            self.watched.pop(pid, None)
            return self.killed.pop(pid, None)

    def once(self):
        with self.lock:
            limits = {pid: limit for pid, (_, limit) in self.watched.items()}
        if not limits:
            return
        for pid, held, allowed in over_limit(self.look(), limits):
            with self.lock:
                entry = self.watched.get(pid)
                if entry:
                    self.killed[pid] = f"held {held} MiB of GPU memory, more than the part's {allowed} MiB"
                    procfs.kill(entry[0])

    def _run(self):
        stop = threading.Event()
        while not stop.wait(PERIOD):
            self.once()


WATCH = Watch()
