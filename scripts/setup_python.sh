#!/usr/bin/env bash
# Checks (and installs from PyPI where missing) what the Python tests need:
# pytest, and PyTorch for every test that handles tensors (PyPI's torch
# wheel, CUDA build, runs on a CPU-only machine too; about 3.5 GB to download
# the first time). FP4MOE_NO_TORCH=1 skips torch: its tests then skip.
set -euo pipefail
say() { printf 'setup_python: %s\n' "$*"; }
PY=${PYTHON:-python3}
importable() { "$PY" -c "import $1" >/dev/null 2>&1; }

importable pytest || { say "installing pytest"; "$PY" -m pip install -q pytest; }
if importable torch; then
  say "ok: torch $("$PY" -c 'import torch; print(torch.__version__)'), pytest $("$PY" -m pytest --version 2>&1 | awk '{print $2}')"
elif [ "${FP4MOE_NO_TORCH:-0}" = 1 ]; then
  say "FP4MOE_NO_TORCH=1: not installing torch; the tests that need it will skip"
else
  say "installing torch from PyPI (large download, first time only)"
  if ! "$PY" -m pip install -q torch; then
    say "WARNING: torch could not be installed; the Python tests that need it will skip" >&2
  fi
fi
