#!/usr/bin/env bash
# PROBE run (not a product script): the cluster-pair build's dense GEMM tests,
# then the dense suite A/B against the main build. Binaries in .carry.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
timeout ${TEST_TIMEOUT:-150} .carry/probe/fp4moe_gpu_tests \
  --gtest_filter="${GTEST_FILTER:-All/GemmAllTactics.*dense*:GemmStructure.*:GemmLargeM.*:GemmUnalignedOutput.*}" > "$OUT/probe_tests.log" 2>&1
rc=$?
echo "probe tests rc=$rc"
grep -E "^\[  (PASSED|FAILED) |tests ran|Failure|Which is|describe|rel" "$OUT/probe_tests.log" | head -20
[ $rc -eq 0 ] || exit 1
SKIP_TESTS=1 VARIANTS=.carry/var SUITES_AB="${SUITES_AB:-dense}" ROUNDS_AB=2 AB_TIMEOUT=${AB_TIMEOUT:-300} bash scripts/device_gemm_ab_tar.sh
