#!/usr/bin/env bash
# One GEMM A/B call on the lent GPU machine: the whole GPU suite of the carried
# build (unless SKIP_TESTS=1), then the benchmark binaries in VARIANTS
# (default .carry/var) taking turns on the suites in SUITES_AB (ROUNDS_AB
# rounds, default 2) and SUITES_ONCE (one round). Logs under $OUT.
# TESTS: the folder of the carried test binaries (default build/tests).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  timeout ${TEST_TIMEOUT:-400} ${TESTS:-build/tests}/fp4moe_gpu_tests ${GTEST_FILTER:+--gtest_filter=$GTEST_FILTER} > "$OUT/gpu_tests.log" 2>&1
  echo "gpu tests rc=$?"; grep -E "^\[  (PASSED|FAILED) |tests ran|Failure" "$OUT/gpu_tests.log" | head -20
fi
# SM clock, power and throttle reasons every 200 ms while the variants run:
# the board power-caps under these kernels (docs/PERF.md stop 19), so a
# row's time depends on what ran before it.
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv \
  -lms 200 > "$OUT/clocks.csv" 2>&1 &
smi=$!
VARIANTS=${VARIANTS:-.carry/var} ROUNDS=${ROUNDS_AB:-2} OUT="$OUT/ab" scripts/device_ab.sh ${SUITES_AB:-decode moe-fc2} > /dev/null 2>&1
[ -n "${SUITES_ONCE:-}" ] && VARIANTS=${VARIANTS:-.carry/var} ROUNDS=1 OUT="$OUT/once" scripts/device_ab.sh $SUITES_ONCE > /dev/null 2>&1
kill "$smi" 2>/dev/null
ls -R "$OUT" | head -40
