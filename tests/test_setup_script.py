"""scripts/setup.sh (issue 14 item 5): torch from PyTorch's CPU index where it answers, from pip's
default index otherwise, saying which. The choice is tested on its own (the script's
choose_torch_index, sourced), against a local HTTP server standing in for the index."""
import http.server
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "setup.sh"


def choose(**env):
    """-> (the index it prints, what it says on stderr)."""
    environment = {k: v for k, v in os.environ.items() if k not in ("PIP_INDEX_URL", "TORCH_INDEX")}
    environment.update(env)
    done = subprocess.run(["bash", "-c", f'source "{SCRIPT}"; choose_torch_index "{sys.executable}"'],
                          env=environment, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip(), done.stderr.strip()


@pytest.fixture()
def index(tmp_path):
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "index.html").write_text("<a href='torch-2.13.0+cpu.whl'>torch</a>")
    handler = lambda *a: http.server.SimpleHTTPRequestHandler(*a, directory=str(tmp_path))  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.RequestHandlerClass.log_message = lambda *a: None
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_cpu_index_is_used_where_it_answers(index):
    chosen, said = choose(TORCH_INDEX=index)
    assert chosen == index
    assert "torch from PyTorch's CPU index" in said


def test_an_unreachable_index_falls_back_to_the_default_and_says_so():
    chosen, said = choose(TORCH_INDEX=f"http://127.0.0.1:{closed_port()}/whl/cpu", TORCH_INDEX_TIMEOUT="2")
    assert chosen == ""
    assert "cannot be reached" in said and "pip's default index" in said


def test_a_given_pip_index_or_an_empty_torch_index_skips_the_probe():
    chosen, said = choose(PIP_INDEX_URL="http://127.0.0.1:9/simple")
    assert (chosen, "as given" in said) == ("", True)
    chosen, said = choose(TORCH_INDEX="")
    assert (chosen, "TORCH_INDEX is empty" in said) == ("", True)


def test_the_default_is_pytorchs_cpu_index():
    # reachable or not from here, the probe is of PyTorch's CPU index, and the answer says so
    chosen, said = choose(TORCH_INDEX_TIMEOUT="2")
    assert chosen in ("", "https://download.pytorch.org/whl/cpu")
    assert "PyTorch's CPU index (https://download.pytorch.org/whl/cpu)" in said


def test_the_fallback_says_what_it_costs():
    _, said = choose(TORCH_INDEX=f"http://127.0.0.1:{closed_port()}/whl/cpu", TORCH_INDEX_TIMEOUT="1")
    assert "CUDA build" in said and "4.7 GB" in said


def test_setup_reports_the_torch_build_it_installed():
    """Printed after the install: the build this interpreter really has, not the one asked for."""
    import torch

    done = subprocess.run(["bash", "-c", f'source "{SCRIPT}"; report_torch "{sys.executable}"'],
                          capture_output=True, text=True, timeout=120)
    build = "CPU build" if torch.version.cuda is None else f"CUDA {torch.version.cuda} build"
    assert done.stdout.strip() == f"setup: installed torch {torch.__version__} ({build})", done.stderr
    script = SCRIPT.read_text()
    torch_install = [line for line in script.splitlines() if "torch_pip=(" in line][0]
    assert "--progress-bar on" in torch_install and "--quiet" not in torch_install  # pip's progress shows
