#!/usr/bin/env bash
# The GPU test suite (or the tests matching FILTER) as SHARDS gtest shards
# side by side on the one GPU, plain or under a compute-sanitizer tool. The
# suite's time is mostly its CPU references: one process took 488-533 s
# for 102-104 tests (docs/PERF.md stops 41-48), near a call's 600 s; four
# shards on the lent machine's 16 cores ran 132 tests in ~340 s (stop 67).
# One summary line a shard: tests passed, failed and skipped, the
# sanitizer's summary, and the test it was in if it stopped early (the
# limit or a crash); then the sanitizer's reports, counted.
# Usage: scripts/device_suite_shards.sh [FILTER ('*')]
# Environment: SHARDS (4), LIMIT (seconds a shard, 380), TOOL (memcheck,
# racecheck, synccheck or initcheck; empty: no sanitizer), TESTS (the test
# binary, .carry/tests/fp4moe_gpu_tests, unpacked from .xz here). Logs:
# $OUT/shard<i>.log. Exit status 1 if a shard failed a test, exited
# non-zero or the tool reported an error (racecheck's warnings do not
# count), 2 if a shard stopped early, else 0. Under memcheck the test
# SplitKWorkspace.AnAllocationThatFailsIsReportedOnce makes an allocation
# fail on purpose: the tool counts two API errors there, so a run that
# includes it exits 1; leave it out of FILTER to check the rest.
set -uo pipefail
cd "$(dirname "$0")/.."
export FP4MOE_TEST_REQUIRE_GPU=1  # (GPU tests fail, not skip, where CUDA does not start)
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
FILTER=${1:-*}
SHARDS=${SHARDS:-4}
LIMIT=${LIMIT:-380}
TESTS=${TESTS:-.carry/tests/fp4moe_gpu_tests}
[ -f "$TESTS.xz" ] && scripts/device_unpack.sh "$(dirname "$TESTS")"
tool=()
# (FP4MOE_TEST_UNDER_SANITIZER: tests that repeat a launch run it once,
# tests that race on purpose skip that part; tests/support/test_support.hpp.)
[ -n "${TOOL:-}" ] && tool=(compute-sanitizer --tool "$TOOL" --error-exitcode 1) && export FP4MOE_TEST_UNDER_SANITIZER=1
count=$("$TESTS" --gtest_list_tests --gtest_filter="$FILTER" | grep -c '^  ')
echo "$count tests in $SHARDS shards${TOOL:+ under $TOOL}, $LIMIT s each"
start=$(date +%s)
for ((i = 0; i < SHARDS; ++i)); do
  (GTEST_TOTAL_SHARDS=$SHARDS GTEST_SHARD_INDEX=$i timeout -k 10 "$LIMIT" "${tool[@]}" "$TESTS" --gtest_filter="$FILTER" \
     > "$OUT/shard$i.log" 2>&1
   echo $? > "$OUT/shard$i.rc") &
done
wait
status=0
echo "all shards done after $(( $(date +%s) - start )) s"
for ((i = 0; i < SHARDS; ++i)); do
  log=$OUT/shard$i.log
  ok=$(grep -c '^\[       OK' "$log")
  failed=$(grep -E '^\[  FAILED  \] [^0-9]' "$log" | sed 's/ (.*//' | sort -u | grep -c .)
  skipped=$(grep -E '^\[  SKIPPED \] [^0-9]' "$log" | sed 's/ (.*//' | sort -u | grep -c .)
  rc=$(cat "$OUT/shard$i.rc" 2>/dev/null || echo 1)
  line="shard $i: $ok passed, $failed failed, $skipped skipped"
  summary=$(grep -E '(ERROR|RACECHECK) SUMMARY' "$log" | sed 's/^=* *//')
  [ -n "$summary" ] && line="$line; $summary"
  if ! grep -q '^\[==========\] .* ran' "$log"; then
    line="$line; stopped early (exit $rc) in $(grep -E '^\[ RUN' "$log" | tail -1 | sed 's/^\[ RUN *\] //')"
    status=$(( status == 1 ? 1 : 2 ))
  elif [ "$rc" != 0 ]; then
    line="$line; exit $rc"
    status=1
  fi
  [ "$failed" -gt 0 ] && status=1
  # Errors, not racecheck's warnings: "ERROR SUMMARY: n errors", "(n errors, m warnings)".
  grep -qE 'ERROR SUMMARY: [1-9]|\([1-9][0-9]* errors?' <<< "$summary" && status=1
  echo "$line"
  grep -E '^\[  FAILED  \] [^0-9]' "$log" | sed 's/ (.*//' | sort -u | head -10
done
# The sanitizer's reports, counted.
for ((i = 0; i < SHARDS; ++i)); do cat "$OUT/shard$i.log"; done | grep -E '^========= +(Invalid|Program hit|Uninitialized|Race|Barrier|Error|Leaked)' | sort | uniq -c | head -20
exit $status
