#!/usr/bin/env bash
# The GPU test suite (or the tests matching FILTER) as SHARDS gtest shards
# side by side on the one GPU, plain or under a compute-sanitizer tool: the
# suite's time is mostly its CPU references, so four shards on the lent
# machine's 16 cores take ~340 s where one process takes well past a call's
# 600 s (docs/PERF.md stops 66-67). One summary line a shard: tests passed,
# the sanitizer's summary, and the test it was in if the limit stopped it;
# then every sanitizer report line, counted.
# Usage: scripts/device_suite_shards.sh [FILTER ('*')]
# Environment: SHARDS (4), LIMIT (seconds a shard, 380), TOOL (memcheck,
# racecheck, synccheck or initcheck; empty: no sanitizer), TESTS (the test
# binary, .carry/tests/fp4moe_gpu_tests, unpacked from .xz here). Logs:
# $OUT/shard<i>.log. Exit status 1 if a shard failed a test or the tool
# reported an error (under memcheck, SplitKWorkspace.AnAllocationThatFails
# IsReportedOnce makes an allocation fail on purpose: two API errors, listed
# at the end), 2 if a shard ran out of time, else 0.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
FILTER=${1:-*}
SHARDS=${SHARDS:-4}
LIMIT=${LIMIT:-380}
TESTS=${TESTS:-.carry/tests/fp4moe_gpu_tests}
[ -f "$TESTS.xz" ] && scripts/device_unpack.sh "$(dirname "$TESTS")"
tool=()
[ -n "${TOOL:-}" ] && tool=(compute-sanitizer --tool "$TOOL" --error-exitcode 1)
count=$("$TESTS" --gtest_list_tests --gtest_filter="$FILTER" | grep -c '^  ')
echo "$count tests in $SHARDS shards${TOOL:+ under $TOOL}, $LIMIT s each"
start=$(date +%s)
for ((i = 0; i < SHARDS; ++i)); do
  GTEST_TOTAL_SHARDS=$SHARDS GTEST_SHARD_INDEX=$i timeout "$LIMIT" "${tool[@]}" "$TESTS" --gtest_filter="$FILTER" \
    > "$OUT/shard$i.log" 2>&1 &
done
wait
status=0
echo "all shards done after $(( $(date +%s) - start )) s"
for ((i = 0; i < SHARDS; ++i)); do
  log=$OUT/shard$i.log
  ok=$(grep -c '^\[       OK' "$log")
  failed=$(grep -E '^\[  FAILED  \] [^0-9]' "$log" | sed 's/ (.*//' | sort -u | grep -c .)
  skipped=$(grep -c '^\[  SKIPPED \] [^0-9]' "$log")
  line="shard $i: $ok passed, $failed failed, $skipped skipped"
  summary=$(grep -E '(ERROR|RACECHECK) SUMMARY' "$log" | sed 's/^=* *//')
  [ -n "$summary" ] && line="$line; $summary"
  if ! grep -q '^\[==========\] .* ran' "$log"; then
    line="$line; stopped at the limit in $(grep -E '^\[ RUN' "$log" | tail -1 | sed 's/^\[ RUN *\] //')"
    status=$(( status == 1 ? 1 : 2 ))
  fi
  [ "$failed" -gt 0 ] && status=1
  grep -qE 'SUMMARY: [1-9]' <<< "$summary" && status=1
  echo "$line"
  grep -E '^\[  FAILED  \] [^0-9]' "$log" | sed 's/ (.*//' | sort -u | head -10
done
# The sanitizer's reports, counted (a test that makes an allocation fail on
# purpose shows here as cudaErrorMemoryAllocation API results).
cat "$OUT"/shard*.log | grep -E '^========= +(Invalid|Program hit|Uninitialized|Race|Barrier|Error|Leaked)' | sort | uniq -c | head -20
exit $status
