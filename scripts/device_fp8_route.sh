#!/usr/bin/env bash
# The FP8 route on the lent GPU machine: builds this tree (-j16) unless
# PREBUILT=DIR holds its binaries (DIR/tests, DIR/tools), runs the GPU tests
# that cover every FP8-route kernel (MXFP4, every layout, split-K, repeats),
# then ROUNDS (default 2) A/B rounds, order alternating, of the MXFP4
# prefill, dense and seed-fc2 rows against BEFORE (default
# .carry/fp4moe_before), and one unfiltered seed-fc2 run of this tree's
# binary (its cuBLASLt peers). Carry BEFORE and .fp4moe_commit. Logs under
# $OUT. Environment: GTEST_FILTER, SUITES (default "prefill dense seed-fc2").
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export FP4MOE_COMMIT=${FP4MOE_COMMIT:-$(cat .fp4moe_commit 2>/dev/null || echo unknown)}
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
B=${PREBUILT:-build}
if [ -z "${PREBUILT:-}" ]; then
  start=$(date +%s)
  JOBS=16 BUILD_DIR=build scripts/build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
  echo "build: $(( $(date +%s) - start )) s"
fi
FILTER=${GTEST_FILTER:-'All/GemmAllTactics.*/mxfp4_*:All/GemmSplitK.MatchesReference/mxfp4_*:All/MoeFc2AllTactics.MatchesReference/mxfp4:GemmSplitKDeterminism.*:MoeFc2.WeightedStreamK*'}
start=$(date +%s)
timeout ${TEST_TIMEOUT:-300} $B/tests/fp4moe_gpu_tests --gtest_filter="$FILTER" > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests rc=$? ($(( $(date +%s) - start )) s)"
grep -E "^\[  (PASSED|FAILED) |tests ran|Failure" "$OUT/gpu_tests.log" | head -20
BEFORE=${BEFORE:-.carry/fp4moe_before}
for n in $(seq 1 "${ROUNDS:-2}"); do
  order=("$BEFORE" "$B/tools/fp4moe")
  [ $((n % 2)) -eq 0 ] && order=("$B/tools/fp4moe" "$BEFORE")
  for bin in "${order[@]}"; do
    name=after; [ "$bin" = "$BEFORE" ] && name=before
    timeout ${BENCH_TIMEOUT:-150} "$bin" ${SUITES:-prefill dense seed-fc2} --filter mxfp4 --json "$OUT/ab_${n}_$name.json" > "$OUT/ab_${n}_$name.log" 2>&1
    echo "round $n $name rc=$?"
  done
done
timeout ${BENCH_TIMEOUT:-150} "$B/tools/fp4moe" seed-fc2 --json "$OUT/seed_fc2.json" > "$OUT/seed_fc2.log" 2>&1
echo "seed-fc2 rc=$?"
python3 scripts/ab_table.py "$OUT" | grep -E "fp8-route" | cut -c1-160
