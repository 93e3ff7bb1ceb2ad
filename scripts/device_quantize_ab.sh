#!/usr/bin/env bash
# Quantizer A/B on the lent GPU machine: the quantize GPU tests of the carried
# build, then the `quantize` suite of every binary packed in
# .carry/qv.tar.xz, in turns (ROUNDS, default 3). SKIP_TESTS=1 skips the tests. Logs and a tarball under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
tar xJf .carry/qv.tar.xz -C .carry
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  timeout 120 build/tests/fp4moe_gpu_tests --gtest_filter="${GTEST_FILTER:-*Quantize*:*Dequantize*}" > "$OUT/gpu_tests.log" 2>&1
  echo "gpu tests rc=$?"; grep -E "^\[  (PASSED|FAILED) |tests ran|Failure" "$OUT/gpu_tests.log" | head -20
fi
VARIANTS=.carry/qv ROUNDS=${ROUNDS:-3} scripts/device_ab.sh quantize ${BENCH_ARGS:-}
