#!/usr/bin/env bash
# One call on the lent GPU machine (run scripts/device_commit.sh first and carry
# .fp4moe_commit): build (-j16), the whole test suite, the
# benchmark, with logs under $OUT. Usage: scripts/device_run.sh [SUITE ...]
# Environment: SKIP_TESTS=1, SKIP_BENCH=1, SANITIZE=1 (compute-sanitizer on
# the GPU tests named by SANITIZE_FILTER, default the subset below, each tool
# within SANITIZE_TIMEOUT s; SANITIZE_TOOLS picks the tools, SANITIZE_ARGS adds
# compute-sanitizer options, e.g. --print-limit 4), GTEST_FILTER for the GPU tests, PREBUILT=DIR to
# run binaries built on the host and carried (DIR/tests/*, DIR/tools/fp4moe) instead of building.
set -uo pipefail
cd "$(dirname "$0")/.."
export FP4MOE_TEST_REQUIRE_GPU=1  # (GPU tests fail, not skip, where CUDA does not start)
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
# The device copy has no .git: scripts/device_commit.sh writes the commit (and
# whether the tree was clean) to .fp4moe_commit, carried with the call.
export FP4MOE_COMMIT=${FP4MOE_COMMIT:-$(cat .fp4moe_commit 2>/dev/null || git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"
B=${PREBUILT:-build-device}
if [ -z "${PREBUILT:-}" ]; then
  start=$(date +%s)
  JOBS=16 BUILD_DIR=build-device scripts/build.sh > "$OUT/build.log" 2>&1 || { tail -50 "$OUT/build.log"; exit 1; }
  echo "build: $(( $(date +%s) - start )) s"
fi
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  [ -n "${GTEST_FILTER:-}" ] && scripts/gtest_filter_check.sh $B/tests/fp4moe_gpu_tests "$GTEST_FILTER"
  timeout ${TEST_TIMEOUT:-300} $B/tests/fp4moe_gpu_tests ${GTEST_FILTER:+--gtest_filter=$GTEST_FILTER} > "$OUT/gpu_tests.log" 2>&1
  echo "gpu tests rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure|Which is|rel_error|describe" "$OUT/gpu_tests.log" | head -40
  env -u GTEST_FILTER $B/tests/fp4moe_cpu_tests > "$OUT/cpu_tests.log" 2>&1  # gtest reads GTEST_FILTER too
  echo "cpu tests rc=$?"; grep -E "tests ran|PASSED|FAILED" "$OUT/cpu_tests.log" | tail -3
fi
# The representative subset (racecheck 0 hazards at c7a357bd84f8, ~3 min):
# split-K (dense, deterministic), both MoE kernels on every FC2 tactic, the
# FC1 outputs, the FC1 → FC2 chain, a swap-AB decode tile.
# Every gather kernel's small test (MoeFc2/GatherMultiStagePassesSmall.*)
# too, except under racecheck: all sixteen in one racecheck process outgrew
# a 500 s call (docs/PERF.md stop 66); scripts/device_racecheck_each.sh
# racechecks them one process each.
SANITIZE_SUBSET='GemmSplitKDeterminism.*:MoeFc2.*:MoeFc2/GatherMultiStagePassesSmall.*:MoeFc1.*:MoeChain.*:All/GemmSplitK.MatchesReference/nvfp4_dense:All/MoeFc2AllTactics.MatchesReference/nvfp4:GemmStructure.OneHotRowsGiveTheIdentityPattern'
if [ "${SANITIZE:-0}" = 1 ]; then
  for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck}; do
    filter=${SANITIZE_FILTER:-$SANITIZE_SUBSET}
    [ $tool = racecheck ] && [ -z "${SANITIZE_FILTER:-}" ] && filter="$filter-MoeFc2/GatherMultiStagePassesSmall.*"
    timeout ${SANITIZE_TIMEOUT:-400} compute-sanitizer --tool $tool --error-exitcode 1 ${SANITIZE_ARGS:-} $B/tests/fp4moe_gpu_tests \
      --gtest_filter="$filter" > "$OUT/sanitize_$tool.log" 2>&1
    echo "compute-sanitizer $tool rc=$?"; tail -3 "$OUT/sanitize_$tool.log"
  done
fi
if [ -n "${NCU_FILTER:-}" ]; then
  # Profile the kernels of the rows whose name contains NCU_FILTER.
  ncu --clock-control none --kernel-name regex:"${NCU_KERNEL:-.}" --launch-skip "${NCU_SKIP:-3}" --launch-count 1 \
      --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
      --section WarpStateStats --section Occupancy --section InstructionStats --section SchedulerStats \
      ${NCU_EXTRA:-} \
      $B/tools/fp4moe "$@" --no-ceilings --filter "$NCU_FILTER" > "$OUT/ncu.txt" 2>&1
  echo "ncu rc=$?"; grep -E "Duration|Throughput|Issue|Pipe|Stall|Occupancy|Registers|Executed Ipc|Warp Cycles" "$OUT/ncu.txt" | head -60
fi
if [ "${SKIP_BENCH:-0}" != 1 ]; then
  timeout ${BENCH_TIMEOUT:-400} $B/tools/fp4moe "$@" --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log"
fi
