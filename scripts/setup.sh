#!/usr/bin/env bash
# Create .venv and install the project with everything its tests use.
# NumPy first, then torch: the CPU build. TORCH_SPEC picks the requirement (default torch==2.13.0, the
# version the tests ran with: TESTED_TORCH in autograder/commands/gradescope.py, which the Gradescope
# bundle's setup.sh installs too; a test keeps the two equal). It comes from PyTorch's CPU index
# (TORCH_INDEX, default https://download.pytorch.org/whl/cpu) when that index answers within
# TORCH_INDEX_TIMEOUT seconds (default 5); otherwise from pip's default index and configuration (this
# course's machines hold a local CPU wheel there; elsewhere on Linux the default index gives the CUDA
# build). The script says which it used. TORCH_INDEX= (empty) or a
# PIP_INDEX_URL of your own skips the probe, e.g.
#   TORCH_SPEC=torch PIP_INDEX_URL=https://download.pytorch.org/whl/cpu bash scripts/setup.sh
set -euo pipefail

TORCH_CPU_INDEX=https://download.pytorch.org/whl/cpu

# Print the index URL to install torch from ("" for pip's default) and say why on stderr.
choose_torch_index() {
  local index=${TORCH_INDEX-$TORCH_CPU_INDEX} wait=${TORCH_INDEX_TIMEOUT:-5} python=${1:-python3}
  if [[ -n "${PIP_INDEX_URL:-}" ]]; then
    echo "setup: torch from PIP_INDEX_URL ($PIP_INDEX_URL), as given" >&2
    return 0
  fi
  if [[ -z "$index" ]]; then
    echo "setup: torch from pip's default index (TORCH_INDEX is empty)" >&2
    return 0
  fi
  local limit=()
  if command -v timeout >/dev/null 2>&1; then
    limit=(timeout "$((wait + 2))")  # name resolution is not covered by urlopen's own timeout
  fi
  if ${limit[@]+"${limit[@]}"} "$python" - "$index" "$wait" >/dev/null 2>&1 <<'PY'
import sys, urllib.request
url, wait = sys.argv[1].rstrip("/") + "/torch/", float(sys.argv[2])
urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=wait).close()
PY
  then
    echo "setup: torch from PyTorch's CPU index ($index)" >&2
    echo "$index"
  else
    echo "setup: PyTorch's CPU index ($index) cannot be reached (tried for up to ${wait}s): torch from pip's" \
         "default index and configuration. Without a local CPU wheel, Linux gets the CUDA build there:" \
         "NVIDIA's libraries too, gigabytes more to download and store (the size is printed once installed)," \
         "and nothing gained for grading on the CPU (TORCH_INDEX=URL names a CPU index that does answer)" >&2
  fi
}

# Print the torch this interpreter actually has: its version and whether it is the CPU or a CUDA build
# (with the space torch and NVIDIA's libraries take).
report_torch() {
  "${1:-python3}" -c "import pathlib, torch
build = 'CPU build' if torch.version.cuda is None else f'CUDA {torch.version.cuda} build'
if torch.version.cuda is not None:
    site = pathlib.Path(torch.__file__).parent.parent
    size = sum(f.stat().st_size for d in [site / 'torch', *site.glob('nvidia*'), *site.glob('triton')]
               for f in d.rglob('*') if f.is_file() and not f.is_symlink())
    build += f', {size / 1e9:.1f} GB with its libraries'
print(f'setup: installed torch {torch.__version__} ({build})')"
}

# Compile every module of the environment's site-packages to bytecode, as pip does when it installs
# (compileall: the same .pyc files, checked by the source's time stamp), with one process per core. The
# sandbox's processes import torch and the grader without writing bytecode (PYTHONDONTWRITEBYTECODE=1
# in the room): without these files each of them would compile what it imports. A module this Python
# cannot compile (torch ships test helpers written for newer Pythons) is left as pip leaves it: its
# error is not shown and does not stop the setup.
compile_installed() {
  local python=${1:-python3} folders
  # site-packages (purelib and platlib: one folder in a virtual environment)
  mapfile -t folders < <("$python" -c 'import sysconfig; p = sysconfig.get_paths()
print(*dict.fromkeys([p["purelib"], p["platlib"]]), sep="\n")')
  echo "setup: compiling the installed modules to bytecode"
  "$python" -m compileall -q -j 0 "${folders[@]}" >/dev/null 2>&1 || true
}

main() {
  cd "$(dirname "$0")/.."
  local python=${PYTHON:-python3} fresh=""
  if [[ ! -x .venv/bin/python ]]; then
    # the course's test tools need 3.11 (nbgrader 0.9.6, check-jsonschema 0.39.0, zizmor 1.32.0); the
    # grader alone runs on 3.10 too (Gradescope's image: docs/ci-and-gradescope.md)
    if ! command -v "$python" >/dev/null 2>&1; then
      echo "setup: no $python here: install Python 3.11 or newer, or name one with PYTHON=/path/to/python3" >&2
      exit 2
    fi
    if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
      echo "setup: $("$python" -V 2>&1) is too old for the course's tools (nbgrader, check-jsonschema and" \
           "zizmor need Python 3.11 or newer): run with PYTHON=python3.11 (or newer)" >&2
      exit 2
    fi
    "$python" -m venv .venv
    fresh=1
  fi
  # A fresh environment: pip installs without compiling the modules to bytecode (pip compiles them one
  # file after another, a third of the install's time), and compile_installed compiles them all once
  # installed, on every core. An environment that existed: pip compiles what it installs, as before.
  local no_compile=()
  [[ -n "$fresh" ]] && no_compile=(--no-compile)
  local pip=(.venv/bin/python -m pip install --quiet --disable-pip-version-check ${no_compile[@]+"${no_compile[@]}"})
  # NumPy before torch: torch looks for it when it is imported (and warns when it is missing)
  "${pip[@]}" "numpy>=1.24"
  if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
    local spec=${TORCH_SPEC:-torch==2.13.0} index
    index=$(choose_torch_index .venv/bin/python)
    # pip's own progress for the torch download (hundreds of MB): no --quiet here
    local torch_pip=(.venv/bin/python -m pip install --disable-pip-version-check --progress-bar on
                     ${no_compile[@]+"${no_compile[@]}"})
    if [[ -n "$index" ]]; then
      echo "setup: installing $spec (CPU build)"
      "${torch_pip[@]}" --index-url "$index" "$spec"
    else
      echo "setup: installing $spec (the build pip's index and configuration give)"
      "${torch_pip[@]}" "$spec"
    fi
  fi
  report_torch .venv/bin/python
  echo "setup: installing the course package with its test tools (nbgrader, check-jsonschema, zizmor)"
  "${pip[@]}" -e ".[notebooks,dev]"
  # rfc3987-syntax comes with jupyter-events (jsonschema[format-nongpl]) and only adds jsonschema's checks of
  # the "iri" formats, which no schema validated here uses (nbformat's, jupyter-events', GitHub's workflow
  # schema in check-jsonschema). jsonschema imports it whenever it is installed, and that import builds an
  # Earley parser from its grammar: about 2 s of CPU in every process that imports nbformat or jsonschema (each
  # nbgrader command: `import nbgrader.apps, nbformat` 2.9-3.4 s of CPU with it, 1.1-1.2 s without, this
  # 2-core machine, 2026-11-29; issue 38 item 6). Removed after the install, which brings it back on a rerun.
  .venv/bin/python -m pip uninstall --yes --quiet rfc3987-syntax
  if [[ -n "$fresh" ]]; then
    compile_installed .venv/bin/python
  fi
  .venv/bin/python -c "import torch, numpy, yaml, pytest; print(f'setup: torch {torch.__version__}, numpy {numpy.__version__}: ready')"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
