#!/usr/bin/env bash
# The FP8 route on the lent GPU machine: builds this tree (-j16), runs the GPU tests
# that cover every FP8-route kernel (MXFP4, every layout, split-K, repeats),
# then ROUNDS (default 2) A/B rounds, order alternating, of the MXFP4
# prefill, dense and seed-fc2 rows against BEFORE (default
# .carry/fp4moe_before), and one unfiltered seed-fc2 run of this tree's
# binary (its cuBLASLt peers). Carry BEFORE and .fp4moe_commit. Logs under
# $OUT (the rounds by scripts/device_ab.sh). Environment: GTEST_FILTER,
# SUITES (default "prefill dense seed-fc2").
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export FP4MOE_COMMIT=${FP4MOE_COMMIT:-$(cat .fp4moe_commit 2>/dev/null || echo unknown)}
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
B=build
start=$(date +%s)
JOBS=16 BUILD_DIR=$B scripts/build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - start )) s"
FILTER=${GTEST_FILTER:-'All/GemmAllTactics.*/mxfp4_*:All/GemmSplitK.MatchesReference/mxfp4_*:All/MoeFc2AllTactics.MatchesReference/mxfp4:GemmSplitKDeterminism.*:MoeFc2.WeightedStreamK*'}
start=$(date +%s)
timeout ${TEST_TIMEOUT:-300} $B/tests/fp4moe_gpu_tests --gtest_filter="$FILTER" > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests rc=$? ($(( $(date +%s) - start )) s)"
grep -E "^\[  (PASSED|FAILED) |tests ran|Failure" "$OUT/gpu_tests.log" | head -20
BEFORE=${BEFORE:-.carry/fp4moe_before} ROUNDS=${ROUNDS:-2} env -u GTEST_FILTER scripts/device_ab.sh \
  ${SUITES:-prefill dense seed-fc2} --filter mxfp4 > /dev/null 2>&1
timeout ${BENCH_TIMEOUT:-150} "$B/tools/fp4moe" seed-fc2 --json "$OUT/seed_fc2.json" > "$OUT/seed_fc2.log" 2>&1
echo "seed-fc2 rc=$?"
python3 scripts/ab_table.py "$OUT" | grep -E "fp8-route" | cut -c1-160
