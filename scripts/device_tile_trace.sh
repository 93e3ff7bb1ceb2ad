#!/usr/bin/env bash
# Pipeline traces of register-tile rows on the lent GPU machine (a benchmark
# built with -DFP4MOE_PIPELINE_TRACE=ON: src/kernels/sm90/pipeline_trace.cuh).
# BIN: that benchmark. JOBS: a ';'-separated list of "SUITE|FILTER" (the
# benchmark's row and tactic) or "SUITE|FILTER|TACTICS" (the sweep of the
# tactics whose name contains TACTICS). Writes the summary of
# scripts/tile_trace.py for each under $OUT/trace_<n>.txt (the traces
# themselves, ~90 MB each, stay on the machine). PER_CTA=1 adds the per-CTA
# lines and their grouping (tile_trace.py --per-cta). WARM=1 times with a
# warm L2 (--warm-l2: the operands and the code stay in L2 between launches).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
IFS=';' read -ra jobs <<< "${JOBS:?JOBS=\"suite|filter[|tactics];...\"}"
n=0
for job in "${jobs[@]}"; do
  IFS='|' read -r suite filter tactics <<< "$job"
  n=$((n + 1))
  args=("$suite" --no-ceilings --reps 8 --filter "$filter" ${WARM:+--warm-l2})
  [ -n "${tactics:-}" ] && args=(sweep "$suite" --reps 8 --warmup 1 --filter "$filter" --tactics "$tactics")
  f="/tmp/trace_$n.bin"
  FP4MOE_TRACE_FILE="$f" timeout 120 "${BIN:?BIN=the traced benchmark}" "${args[@]}" > "$OUT/trace_$n.log" 2>&1
  echo "== $n: $job (rc=$?)" | tee "$OUT/trace_$n.txt"
  python3 scripts/tile_trace.py "$f" ${PER_CTA:+--per-cta} 2>&1 | tee -a "$OUT/trace_$n.txt"
done
