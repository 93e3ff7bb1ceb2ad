#!/usr/bin/env bash
# Pipe utilisation (per execution pipe, % of peak while the SM is active) of
# one benchmark row per binary, on the lent GPU machine: JOBS is a
# ';'-separated list of "BINARY|SUITE|FILTER". Logs under $OUT as pipes_<n>.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
IFS=';' read -ra jobs <<< "${JOBS:?JOBS=\"bin|suite|filter;...\"}"
n=0
for job in "${jobs[@]}"; do
  IFS='|' read -r bin suite filter <<< "$job"
  n=$((n + 1))
  ncu --clock-control none --kernel-name regex:"${NCU_KERNEL:-fp4_gemm}" --launch-skip "${NCU_SKIP:-3}" --launch-count 1 \
    --metrics 'regex:sm__pipe_.*_cycles_active\.avg\.pct_of_peak_sustained_active,regex:sm__inst_executed_pipe_.*\.avg\.pct_of_peak_sustained_active,gpu__time_duration.sum' \
    "$bin" "$suite" --no-ceilings --filter "$filter" > "$OUT/pipes_$n.txt" 2>&1
  echo "== $n: $job (rc=$?)"
  grep -E "sm__|duration" "$OUT/pipes_$n.txt" | awk '$NF+0 >= 3 || /duration/' | sed 's/\.avg\.pct_of_peak_sustained_active//' | head -40
done
