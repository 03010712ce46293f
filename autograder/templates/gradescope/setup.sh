#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder image (Ubuntu).
# It installs Python 3 with the CPU build of torch and the grader's requirements into the system
# python3 (run_autograder uses python3; set AUTOGRADER_PYTHON to use another interpreter), then
# makes the grader's files readable by root only.
set -euo pipefail
source_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export DEBIAN_FRONTEND=noninteractive
export PIP_DISABLE_PIP_VERSION_CHECK=1
export PIP_BREAK_SYSTEM_PACKAGES=1   # Ubuntu 24.04 images mark the system Python as externally managed

if ! command -v python3 >/dev/null || ! python3 -m pip --version >/dev/null 2>&1; then
  apt-get update
  apt-get install -y --no-install-recommends python3 python3-pip
fi
# the CPU wheel from PyTorch's own index: no CUDA libraries in the image
python3 -m pip install "torch>=2.2,<3" --index-url https://download.pytorch.org/whl/cpu
python3 -m pip install -r "$source_dir/requirements.txt"

# The hidden suites and the rubric live here. Student code never runs as root (the sandbox gives
# it uid 61000+), and with namespaces it does not even see this folder; without them (some
# container runtimes refuse namespaces) these permissions are what keeps it out.
chmod -R go-rwx "$source_dir"
python3 -c "import torch, numpy, yaml; print(f'setup: torch {torch.__version__}, numpy {numpy.__version__}: ready')"
