#!/usr/bin/env bash
# Warp stall reasons (cycles per issued instruction, by reason) of one
# benchmark row per binary, on the lent GPU machine: JOBS is a ';'-separated
# list of "BINARY|SUITE|FILTER". Logs under $OUT as stalls_<n>.txt.
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
    --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,smsp__warps_active.avg.per_cycle_active' \
    "$bin" "$suite" --no-ceilings --filter "$filter" > "$OUT/stalls_$n.txt" 2>&1
  echo "== $n: $job (rc=$?)"
  grep -E "stalled|inst_executed|issue_active|duration|warps_active" "$OUT/stalls_$n.txt" | awk '$NF+0 >= 0.05 || /inst|issue|duration|warps_active/' | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | head -24
done
