#!/usr/bin/env bash
# The sweep benchmark on the lent GPU machine, one process per suite so a
# device fault in one suite cannot take the others down. Writes
# $OUT/sweep_<suite>.log and $OUT/sweep.md (every suite's Markdown table).
# Usage: scripts/device_sweep.sh [SUITE ...]   (default: every suite with GEMM rows)
# Environment: PREBUILT=DIR (default build), SWEEP_ARGS (default --quick),
# SWEEP_TAG (a suffix for the log names; with it sweep.md is appended to),
# SWEEP_FILTER (only the rows whose name contains it; may hold spaces),
# SWEEP_TIMEOUT seconds per suite (default 240).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export FP4MOE_COMMIT=${FP4MOE_COMMIT:-$(cat .fp4moe_commit 2>/dev/null || git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
B=${PREBUILT:-build}
suites=("$@")
[ ${#suites[@]} -eq 0 ] && suites=(decode prefill dense seed-fc2 moe-fc2)
[ -n "${SWEEP_TAG:-}" ] || : > "$OUT/sweep.md"
for s in "${suites[@]}"; do
  timeout "${SWEEP_TIMEOUT:-240}" "$B/tools/fp4moe" sweep "$s" ${SWEEP_ARGS:---quick} ${SWEEP_FILTER:+--filter "$SWEEP_FILTER"} --markdown "$OUT/sweep_$s${SWEEP_TAG:-}.md" \
    > "$OUT/sweep_$s${SWEEP_TAG:-}.log" 2>&1
  echo "sweep $s rc=$?"
  grep -E "failed|stopped|^[a-z-]+ +[0-9]+ +[0-9]+ " "$OUT/sweep_$s${SWEEP_TAG:-}.log" | tail -6
  [ -f "$OUT/sweep_$s${SWEEP_TAG:-}.md" ] && { cat "$OUT/sweep_$s${SWEEP_TAG:-}.md"; echo; } >> "$OUT/sweep.md"
done
