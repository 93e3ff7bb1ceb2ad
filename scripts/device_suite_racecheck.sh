#!/usr/bin/env bash
# One device call: the whole GPU test suite and a compute-sanitizer racecheck
# of RACE_FILTER, run side by side on the one GPU (the tests check results,
# not times; the racecheck is ~50x slower than the tests it runs, so the two
# together fit one call where one after the other would not). Host-built
# binaries: .carry/tests/fp4moe_gpu_tests(.xz). Carry .carry .fp4moe_commit.
# Environment: RACE_FILTER (gtest filter), TEST_TIMEOUT (default 560),
# RACE_TIMEOUT (default 540), SKIP_SUITE=1 (the racecheck alone), RACE_TESTS
# (another test binary to racecheck, e.g. a branch's, while the suite runs
# main's; default the suite's). Logs: $OUT/gpu_tests.log, $OUT/racecheck.log.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
scripts/device_unpack.sh .carry
T=.carry/tests/fp4moe_gpu_tests
R=${RACE_TESTS:-$T}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
start=$(date +%s)
timeout "${RACE_TIMEOUT:-540}" compute-sanitizer --tool racecheck --error-exitcode 1 --kernel-name kns=fp4_gemm_kernel \
  "$R" --gtest_filter="${RACE_FILTER:?RACE_FILTER=gtest filter}" > "$OUT/racecheck.log" 2>&1 &
race=$!
if [ "${SKIP_SUITE:-0}" != 1 ]; then
  timeout "${TEST_TIMEOUT:-560}" "$T" > "$OUT/gpu_tests.log" 2>&1
  echo "gpu tests rc=$? after $(( $(date +%s) - start )) s"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure" "$OUT/gpu_tests.log" | head -20
fi
wait $race
echo "racecheck rc=$? after $(( $(date +%s) - start )) s"
grep -E "^\[ +(OK|FAILED) |RACECHECK SUMMARY|hazard" "$OUT/racecheck.log" | sed 's/ (.*//' | head -20
