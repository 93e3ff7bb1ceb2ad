#!/usr/bin/env bash
# Programmatic dependent launch on the lent GPU machine (docs/PERF.md stop
# 41): the Pdl.* GPU tests with the carried test binary and with a build
# whose wait was compiled out (NOWAIT, expected to fail: the tests see a
# missing wait), the chain probe before and after (.carry/chain/*), and A/Bs
# of the suites whose operations launch two kernels (JOBS, as
# scripts/device_ab_multi.sh; variants in .carry/var). Logs under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
scripts/device_unpack.sh .carry
T=.carry/tests/fp4moe_gpu_tests
echo "== GPU tests ${GTEST_FILTER:-Pdl.* and graph capture} (this build)"
timeout "${TEST_TIMEOUT:-300}" "$T" --gtest_filter="${GTEST_FILTER:-Pdl.*:SplitKGraph.*:TunerGpu.GraphCaptureWithTheCache}" > "$OUT/tests.log" 2>&1
echo "rc=$?"; grep -E "^\[  (PASSED|FAILED) |tests ran|Failure|FAILED  \]" "$OUT/tests.log" | head -20
if [ -x "${NOWAIT:-.carry/nowait/fp4moe_gpu_tests}" ]; then
  echo "== Pdl.* with the wait compiled out (expected to fail)"
  timeout 120 "${NOWAIT:-.carry/nowait/fp4moe_gpu_tests}" --gtest_filter='Pdl.*' > "$OUT/nowait.log" 2>&1
  echo "rc=$?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|rel_error|relative" "$OUT/nowait.log" | head -12
fi
for round in 1 2; do
  for v in base pdl; do
    [ -x ".carry/chain/$v" ] || continue
    echo "== chain probe, $v, round $round"
    timeout 120 ".carry/chain/$v" 2>&1 | tee "$OUT/chain_${v}_$round.txt"
  done
done
if [ -n "${JOBS:-}" ]; then
  VARIANTS=.carry/var ROUNDS=${ROUNDS:-2} OUT="$OUT/ab" JOBS="$JOBS" scripts/device_ab_multi.sh
fi
