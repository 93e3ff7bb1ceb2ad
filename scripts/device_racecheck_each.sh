#!/usr/bin/env bash
# compute-sanitizer racecheck of each GPU test matching FILTER in its own
# process, one line a test: its seconds and racecheck's summary, or
# "timeout". One process for all sixteen gather kernels outgrew a 500 s
# device call; alone, most take 1-3 s and the one-CTA 16-token tiles
# anywhere from 4 s to past 24 s (their mbarrier polling under racecheck's
# serialisation; docs/PERF.md stop 66). Exit status: 1 if any test failed
# or racecheck reported a hazard, else 0 (timeouts are listed, not failed).
# Usage: scripts/device_racecheck_each.sh FILTER [SECONDS_A_TEST (60)]
# Host-built binary: .carry/tests/fp4moe_gpu_tests(.xz); carry .carry.
set -uo pipefail
cd "$(dirname "$0")/.."
FILTER=${1:?gtest filter, e.g. 'MoeFc2/GatherMultiStagePassesSmall.*'}
LIMIT=${2:-60}
scripts/device_unpack.sh .carry
T=.carry/tests/fp4moe_gpu_tests
# --gtest_list_tests prints "Suite." lines, then "  test  # GetParam() = ..." lines.
mapfile -t TESTS < <("$T" --gtest_list_tests --gtest_filter="$FILTER" |
  awk '/^[^ ]/ {suite = $1} /^  / {print suite $1}')
bad=0
for t in "${TESTS[@]}"; do
  start=$(date +%s)
  log=$(timeout "$LIMIT" compute-sanitizer --tool racecheck --error-exitcode 1 --kernel-name kns=fp4_gemm_kernel \
    "$T" --gtest_filter="$t" 2>&1)
  rc=$?
  summary=$(grep -E "RACECHECK SUMMARY" <<< "$log" | sed 's/=* *//')
  case $rc in
    0) ;;
    124) summary="timeout after ${LIMIT} s" ;;
    *) bad=1; summary="rc=$rc ${summary:-$(grep -m1 -E 'FAILED|rror' <<< "$log")}" ;;
  esac
  echo "$t  $(( $(date +%s) - start )) s  $summary"
done
exit $bad
