#!/usr/bin/env bash
# The test command: checks dependencies, builds, runs every test: the C++
# suites (ctest) then the Python package's (pytest, scripts/test_python.sh).
# GPU tests (label/marker gpu) skip with a message where no sm_90 GPU is
# present; pass cpu or gpu to run one suite only.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/setup_python.sh
scripts/build.sh
label=${1:-}
(
  cd "${BUILD_DIR:-build}"
  if [ -n "$label" ]; then
    ctest -L "$label" --output-on-failure -j "${JOBS:-$(nproc)}"
  else
    ctest --output-on-failure -j "${JOBS:-$(nproc)}"
  fi
)
scripts/test_python.sh "$label"
