#!/usr/bin/env bash
# Create .venv and install the project with everything its tests use.
# torch: the CPU build. TORCH_SPEC picks the requirement (default torch==2.13.0, which this
# course's machines hold locally); elsewhere e.g.
#   TORCH_SPEC=torch PIP_INDEX_URL=https://download.pytorch.org/whl/cpu bash scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
if [[ ! -x .venv/bin/python ]]; then
  "$python" -m venv .venv
fi
pip=(.venv/bin/python -m pip install --quiet --disable-pip-version-check)
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
  echo "setup: installing ${TORCH_SPEC:-torch==2.13.0} (CPU build)"
  "${pip[@]}" "${TORCH_SPEC:-torch==2.13.0}"
fi
echo "setup: installing the course package with its test tools (nbgrader, check-jsonschema, zizmor)"
"${pip[@]}" -e ".[notebooks,dev]"
.venv/bin/python -c "import torch, numpy, yaml, pytest; print(f'setup: torch {torch.__version__}, numpy {numpy.__version__}: ready')"
