#!/usr/bin/env bash
# The CUDA-core route against its probe on the lent GPU machine: the GPU
# tests of GTEST_FILTER (TESTS binary), then ncu's stall and pipe metrics of
# the library's dp4a kernel on one decode row (BIN, ROW) and of the probe's
# one-token G32-shape launch (PROBE: tools/probes/dp4a_decode_probe.cu; its
# 112th gemv launch). Logs under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
scripts/device_unpack.sh .carry
if [ -n "${TESTS:-}" ]; then
  timeout 400 "$TESTS" --gtest_filter="${GTEST_FILTER:-*}" > "$OUT/gpu_tests.log" 2>&1
  echo "gpu tests rc=$?"; grep -E "^\[  (PASSED|FAILED)" "$OUT/gpu_tests.log" | head -12
fi
for m in stalls pipes; do
  METRICS=$m JOBS="${BIN:?}|decode|${ROW:-nvfp4 G32 1x4096x7168}" OUT="$OUT/lib" scripts/device_ncu_metrics.sh
  [ -n "${PROBE:-}" ] && NCU_KERNEL=gemv NCU_SKIP=111 METRICS=$m JOBS="$PROBE|x|x" OUT="$OUT/probe" scripts/device_ncu_metrics.sh
done
