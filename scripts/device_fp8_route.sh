#!/usr/bin/env bash
# The FP8 route's first check on the lent GPU machine: the kernel-level and
# MXFP4 GPU tests, then the MXFP4 prefill and dense rows (both routes, with
# the cuBLASLt peers). Binaries carried in .carry (tests/, var/fp8).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export FP4MOE_COMMIT=${FP4MOE_COMMIT:-$(cat .fp4moe_commit 2>/dev/null || echo unknown)}
T=${TESTS:-.carry/tests/fp4moe_gpu_tests}
timeout ${TEST_TIMEOUT:-240} $T --gtest_filter="${GTEST_FILTER:-WgmmaFragments.*:Dequant*:*mxfp4*:GemmStructure.*:GemmSplitKDeterminism.*:GemmUnalignedOutput.*:GemmLargeM.*}" \
  > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests rc=$?"
grep -E "^\[  (PASSED|FAILED) |tests ran|Failure|Which is|rel_error|describe|fp8" "$OUT/gpu_tests.log" | head -40
timeout ${BENCH_TIMEOUT:-200} ${TOOL:-.carry/var/fp8} prefill dense --filter mxfp4 --json "$OUT/bench.json" > "$OUT/bench.log" 2>&1
echo "bench rc=$?"
cat "$OUT/bench.log" | cut -c1-200 | head -60
