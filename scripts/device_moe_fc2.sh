#!/usr/bin/env bash
# MoE FC2 work on the lent GPU machine, from binaries built on the host and
# carried: the GPU tests (TESTS folder, default .carry/tests; SKIP_TESTS=1
# skips), the exhaustive sweep of the moe-fc2 suite with the newest binary
# (every tactic's time per row: what the heuristic is fitted to; SWEEP=0
# skips, SWEEP_ALL=1 sweeps every binary), then an A/B of the binaries in .carry/var on SUITES_AB (default
# moe-fc2, ROUNDS_AB rounds). Every log is packed into $OUT/logs.tgz.
set -uo pipefail
cd "$(dirname "$0")/.."
FINAL=${OUT:-/tmp/out}
mkdir -p "$FINAL"
work=$(mktemp -d)
export FP4MOE_COMMIT=${FP4MOE_COMMIT:-$(cat .fp4moe_commit 2>/dev/null || echo unknown)}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$work/gpu.txt"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  timeout ${TEST_TIMEOUT:-300} ${TESTS:-.carry/tests}/fp4moe_gpu_tests ${GTEST_FILTER:+--gtest_filter=$GTEST_FILTER} > "$work/gpu_tests.log" 2>&1
  echo "gpu tests rc=$?"; grep -E "^\[  (PASSED|FAILED) |tests ran|Failure" "$work/gpu_tests.log" | head -20
fi
# The sweep: of the newest binary, or of every one with SWEEP_ALL=1.
if [ "${SWEEP:-1}" != 0 ]; then
  bins=$(ls .carry/var/* | tail -1)
  [ "${SWEEP_ALL:-0}" = 1 ] && bins=$(ls .carry/var/*)
  for bin in $bins; do
    name=$(basename "$bin")
    timeout ${SWEEP_TIMEOUT:-200} "$bin" sweep ${SWEEP_SUITES:-moe-fc2} --quick > "$work/sweep_$name.log" 2> "$work/sweep_progress_$name.log"
    echo "sweep $name rc=$?"; tail -6 "$work/sweep_$name.log"
  done
fi
VARIANTS=.carry/var ROUNDS=${ROUNDS_AB:-2} OUT="$work/ab" timeout ${AB_TIMEOUT:-240} scripts/device_ab.sh ${SUITES_AB:-moe-fc2} > /dev/null 2>&1
echo "ab rc=$?"
tar czf "$FINAL/logs.tgz" -C "$work" .
