#!/usr/bin/env bash
# One device call that checks a commit end to end with host-built binaries:
# the GPU test suite (.carry/tests/fp4moe_gpu_tests), then the Python
# package's tests against the carried libfp4moe_c.so (scripts/device_python.sh).
# Carry: .carry .fp4moe_commit build/src/capi/libfp4moe_c.so
# (scripts/device_python_prepare.sh installs .carry/pydeps).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
start=$(date +%s)
PREBUILT=.carry SKIP_BENCH=1 TEST_TIMEOUT=${TEST_TIMEOUT:-480} scripts/device_run.sh 2>&1 | grep -v "^cpu tests"
echo "gpu suite: $(( $(date +%s) - start )) s"
start=$(date +%s)
timeout ${PYTHON_TIMEOUT:-200} scripts/device_python.sh
echo "python: rc=$? $(( $(date +%s) - start )) s"
