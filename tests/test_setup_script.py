"""scripts/setup.sh (issue 14 item 5): torch from PyTorch's CPU index where it answers, from pip's
default index otherwise, saying which. The choice is tested on its own (the script's
choose_torch_index, sourced), against a local HTTP server standing in for the index."""
import http.server
import json
import os
import re
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


@pytest.mark.quick
def test_the_cpu_index_is_used_where_it_answers(index):
    chosen, said = choose(TORCH_INDEX=index)
    assert chosen == index
    assert "torch from PyTorch's CPU index" in said


@pytest.mark.quick
def test_an_unreachable_index_falls_back_to_the_default_and_says_so():
    chosen, said = choose(TORCH_INDEX=f"http://127.0.0.1:{closed_port()}/whl/cpu", TORCH_INDEX_TIMEOUT="2")
    assert chosen == ""
    assert "cannot be reached" in said and "pip's default index" in said


@pytest.mark.quick
def test_a_given_pip_index_or_an_empty_torch_index_skips_the_probe():
    chosen, said = choose(PIP_INDEX_URL="http://127.0.0.1:9/simple")
    assert (chosen, "as given" in said) == ("", True)
    chosen, said = choose(TORCH_INDEX="")
    assert (chosen, "TORCH_INDEX is empty" in said) == ("", True)


@pytest.mark.quick
def test_the_default_is_pytorchs_cpu_index():
    # reachable or not from here, the probe is of PyTorch's CPU index, and the answer says so
    chosen, said = choose(TORCH_INDEX_TIMEOUT="2")
    assert chosen in ("", "https://download.pytorch.org/whl/cpu")
    assert "PyTorch's CPU index (https://download.pytorch.org/whl/cpu)" in said


@pytest.mark.quick
def test_the_fallback_says_what_it_costs():
    _, said = choose(TORCH_INDEX=f"http://127.0.0.1:{closed_port()}/whl/cpu", TORCH_INDEX_TIMEOUT="1")
    assert "CUDA build" in said and "gigabytes more" in said and "the size is printed once installed" in said


# not quick: a new interpreter importing torch (issue 38 item 6)
def test_setup_reports_the_torch_build_it_installed():
    """Printed after the install: the build this interpreter really has, not the one asked for."""
    import torch

    done = subprocess.run(["bash", "-c", f'source "{SCRIPT}"; report_torch "{sys.executable}"'],
                          capture_output=True, text=True, timeout=120)
    # a CUDA build also says what it costs on disk (measured: torch and NVIDIA's libraries)
    build = "CPU build" if torch.version.cuda is None else rf"CUDA {re.escape(torch.version.cuda)} build, \d+\.\d GB with its libraries"
    assert re.fullmatch(rf"setup: installed torch {re.escape(torch.__version__)} \({build}\)", done.stdout.strip()), \
        (done.stdout, done.stderr)
    script = SCRIPT.read_text()
    torch_install = [line for line in script.splitlines() if "torch_pip=(" in line][0]
    assert "--progress-bar on" in torch_install and "--quiet" not in torch_install  # pip's progress shows


# ---------------------------------------------------------------- the Gradescope bundle's setup.sh (issue 31)

def bundle_setup(tmp_path):
    """The bundle's setup.sh as the bundle holds it (its tested torch filled in)."""
    from autograder.commands import gradescope

    [(_, text, _)] = [f for f in gradescope.bundle_files(ROOT / "grading.yml") if f[0] == "setup.sh"]
    path = tmp_path / "setup.sh"
    path.write_bytes(text)
    return path


ROOT = SCRIPT.parents[1]


@pytest.mark.quick
def test_both_setups_install_the_tested_torch_from_one_place(tmp_path):
    from autograder.commands import gradescope

    assert re.fullmatch(r"\d+\.\d+\.\d+", gradescope.TESTED_TORCH)
    assert f"spec=${{TORCH_SPEC:-torch=={gradescope.TESTED_TORCH}}}" in SCRIPT.read_text()
    setup = bundle_setup(tmp_path).read_text()
    assert "@TESTED_TORCH@" not in setup and f'TESTED_TORCH="{gradescope.TESTED_TORCH}"' in setup
    assert 'install_torch "$python" "${TORCH_SPEC:-torch==$TESTED_TORCH}"' in setup


@pytest.mark.quick
def test_numpy_is_installed_before_torch_in_both(tmp_path):
    """torch warns "Failed to initialize NumPy" when it is imported without NumPy."""
    ours = SCRIPT.read_text()
    assert ours.index('"${pip[@]}" "numpy>=1.24"') < ours.index('"${torch_pip[@]}"')
    setup = bundle_setup(tmp_path).read_text()
    main = setup[setup.index("main() {"):]
    assert main.index("grep -m1 '^numpy'") < main.index("install_torch ")


def sourced(setup, script, env=None):
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("TORCH_", "PIP_INDEX"))}
    environment.update(env or {})
    return subprocess.run(["bash", "-c", f'source "{setup}"; {script}'], env=environment, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.quick
@pytest.mark.parametrize("installs, verdict", [
    ([("torch", "2.13.0+cpu"), ("numpy", "2.1.0")], "cpu"),
    ([("torch", "2.13.0")], "cpu"),  # macOS and aarch64 wheels: no local version, no CUDA libraries
    ([("torch", "2.13.0+cu128")], "cuda"),
    ([("torch", "2.13.0"), ("nvidia-cublas-cu12", "12.8.4.1"), ("triton", "3.5.0")], "cuda"),
])
def test_pips_report_tells_a_cuda_build(tmp_path, installs, verdict):
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"install": [{"metadata": {"name": n, "version": v}} for n, v in installs]}))
    done = sourced(bundle_setup(tmp_path), f'judge_report "{sys.executable}" < "{report}"')
    assert done.stdout.strip() == verdict, done.stderr


@pytest.mark.quick
def test_a_cuda_build_is_refused_before_it_is_downloaded(tmp_path):
    """Where PyTorch's CPU index cannot be reached and pip's own index would give the CUDA build, the
    build stops, saying why and what to do; nothing is installed."""
    setup = bundle_setup(tmp_path)
    closed = f"http://127.0.0.1:{closed_port()}/whl/cpu"
    script = f'torch_plan() {{ echo cuda; }}; install_torch "{sys.executable}" torch==2.13.0'
    done = sourced(setup, script, {"TORCH_INDEX": closed, "TORCH_INDEX_TIMEOUT": "1"})
    assert done.returncode == 1
    assert "cannot be reached" in done.stderr and "would install the cuda build of torch==2.13.0" in done.stdout
    assert "refused: a CUDA build brings NVIDIA's libraries" in done.stderr and "TORCH_ALLOW_CUDA=1" in done.stderr


def fake_python(tmp_path, cuda):
    """A python3 that installs nothing and reports a torch with CUDA `cuda` ('' for the CPU build)."""
    path = tmp_path / "python"
    path.write_text(f"""#!/bin/bash
if [[ "$1" == -m ]]; then echo "pip $*" >> "{tmp_path}/pip.log"; exit 0; fi
case "$2" in
  *torch.version.cuda*) echo "{cuda}" ;;
  *find_spec*) echo "5.6 GB" ;;
esac
""")
    path.chmod(0o755)
    return str(path)


@pytest.mark.quick
def test_a_cuda_build_that_got_installed_stops_the_build_or_says_its_size(tmp_path):
    setup = bundle_setup(tmp_path)
    python = fake_python(tmp_path, "12.8")
    done = sourced(setup, f'torch_plan() {{ echo unknown; }}; install_torch "{python}" torch==2.13.0',
                   {"TORCH_INDEX": ""})
    assert done.returncode == 1 and "refused: pip installed a CUDA 12.8 build of torch (5.6 GB" in done.stderr
    done = sourced(setup, f'torch_plan() {{ echo unknown; }}; install_torch "{python}" torch==2.13.0',
                   {"TORCH_INDEX": "", "TORCH_ALLOW_CUDA": "1"})
    assert done.returncode == 0, done.stderr
    assert "a CUDA 12.8 build of torch, as TORCH_ALLOW_CUDA=1 allows: 5.6 GB of the image" in done.stdout
    done = sourced(setup, f'install_torch "{fake_python(tmp_path, "")}" torch==2.13.0',
                   {"TORCH_INDEX": f"http://127.0.0.1:{closed_port()}/whl/cpu", "TORCH_INDEX_TIMEOUT": "1"})
    assert done.returncode == 0 and "refused" not in done.stderr + done.stdout


@pytest.mark.quick
def test_a_python_older_than_the_course_tools_is_refused_before_the_venv(tmp_path):
    """Python 3.10 (Gradescope's image) runs the grader, but not the course's test tools: setup.sh says so
    and exits 2 before it creates .venv, instead of failing halfway through pip (the py310 lane's finding)."""
    import shutil

    (tmp_path / "scripts").mkdir()
    shutil.copy(SCRIPT, tmp_path / "scripts" / "setup.sh")
    old = tmp_path / "python3.10"
    old.write_text('#!/bin/sh\n[ "$1" = "-V" ] && { echo "Python 3.10.13"; exit 0; }\n'
                   '[ "$1" = "-c" ] && exit 1\necho "created a venv" > "$(dirname "$0")/venv-made"\n')
    old.chmod(0o755)
    for python, said in ((old, "setup: Python 3.10.13 is too old for the course's tools (nbgrader, check-jsonschema "
                                "and zizmor need Python 3.11 or newer): run with PYTHON=python3.11 (or newer)"),
                         (tmp_path / "missing", f"setup: no {tmp_path / 'missing'} here: install Python 3.11 or newer, "
                                                f"or name one with PYTHON=/path/to/python3")):
        done = subprocess.run(["bash", str(tmp_path / "scripts" / "setup.sh")], env={**os.environ, "PYTHON": str(python)},
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and done.stderr.strip() == said, done.stderr
    assert not (tmp_path / ".venv").exists() and not (tmp_path / "venv-made").exists()
