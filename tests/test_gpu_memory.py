"""Issue 24 item 3: GPU memory per session, bounded in the child (gpu.claim: the allocator's cap)
and enforced from outside it (gpu_watch: the driver's per-process figures, a kill over the limit).
The logic is tested here on the CPU with a stand-in for the driver's figures; the GPU cases (a
child that lifts its own cap is killed, the next session's fresh memory holds nothing of the
previous one's) are in scripts/gpu-check.sh."""
import os
import signal
import subprocess

import pytest

from autograder.inside import gpu
from autograder.inside.gpu import CONTEXT_MB
from autograder.sandbox import gpu_watch


@pytest.mark.quick
def test_the_allocator_cap_is_the_parts_memory_as_a_share_of_the_card():
    assert gpu.fraction(2048, 80 << 30) == pytest.approx(2048 / (80 * 1024))
    assert gpu.fraction(10 ** 6, 80 << 30) == 1.0  # never more than the card
    assert gpu.fraction(0, 80 << 30) == pytest.approx(1 / (80 * 1024))  # torch refuses a share of 0


def test_nvidia_smi_figures_are_read_per_process_and_summed_over_cards():
    output = "1234, 500\n99, 7\n1234, 300\nNo running processes found\n[N/A], 3\n 5 , 6 \n"
    assert gpu_watch.parse_smi(output) == {1234: 800, 99: 7, 5: 6}
    assert gpu_watch.parse_smi("") == {}


def test_only_a_watched_child_over_its_limit_and_the_context_is_named():
    held = {10: 512 + CONTEXT_MB + 1, 11: 512 + CONTEXT_MB, 12: 10 ** 6}  # 12: not ours (another worker's grader?)
    assert gpu_watch.over_limit(held, {10: 512, 11: 512, 13: 512}) == [(10, 512 + CONTEXT_MB + 1, 512 + CONTEXT_MB)]


def test_the_watch_kills_a_child_over_its_limit_and_says_why():
    """A real process stands for the child; the driver's figures are a stand-in. The kill is seen
    by waiting for the process, never by a clock."""
    child = subprocess.Popen(["sleep", "600"])
    pidfd = os.pidfd_open(child.pid)
    try:
        figures = {child.pid: 100}
        watch = gpu_watch.Watch(look=lambda: dict(figures))
        watch.watched[child.pid] = (pidfd, 512)
        watch.once()
        assert child.poll() is None  # under its limit: left alone
        figures[child.pid] = 512 + CONTEXT_MB + 1
        watch.once()
        assert child.wait() == -signal.SIGKILL
        assert watch.remove(child.pid) == f"held {512 + CONTEXT_MB + 1} MiB of GPU memory, " \
                                          f"more than the part's {512 + CONTEXT_MB} MiB"
        assert watch.watched == {} and watch.remove(child.pid) is None
    finally:
        child.kill()
        child.wait()
        os.close(pidfd)


def test_without_a_driver_the_watch_sees_nothing_and_kills_nothing(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")  # no nvidia-smi; no libnvidia-ml on this machine either
    assert gpu_watch.usage() == {}
