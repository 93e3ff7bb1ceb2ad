#!/usr/bin/env bash
# ncu metric groups of one benchmark row per binary, on the lent GPU machine.
# JOBS: a ';'-separated list of "BINARY|SUITE|FILTER". METRICS: stalls (warp
# stall reasons, cycles per issued instruction, with instruction count, issue
# activity and active warps) or pipes (each execution pipe's utilisation, %
# of peak while the SM is active). Logs under $OUT as <METRICS>_<n>.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
IFS=';' read -ra jobs <<< "${JOBS:?JOBS=\"bin|suite|filter;...\"}"
case "${METRICS:-stalls}" in
  stalls)
    metrics='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__warps_active.avg.per_cycle_active'
    show='stalled|inst_executed|issue_active|warps_active' ;;
  pipes)
    metrics='regex:sm__pipe_.*_cycles_active\.avg\.pct_of_peak_sustained_active,regex:sm__inst_executed_pipe_.*\.avg\.pct_of_peak_sustained_active'
    show='sm__' ;;
  *) echo "METRICS must be stalls or pipes" >&2; exit 2 ;;
esac
n=0
for job in "${jobs[@]}"; do
  IFS='|' read -r bin suite filter <<< "$job"
  n=$((n + 1))
  log="$OUT/${METRICS:-stalls}_$n.txt"
  ncu --clock-control none --kernel-name regex:"${NCU_KERNEL:-fp4_gemm}" --launch-skip "${NCU_SKIP:-3}" --launch-count 1 \
    --metrics "$metrics,gpu__time_duration.sum" "$bin" "$suite" --no-ceilings --filter "$filter" > "$log" 2>&1
  echo "== $n: $job (rc=$?)"
  # Small values of the ratio metrics are left out; counts and the duration always shown.
  grep -E "$show|duration" "$log" | awk '$NF+0 >= 0.05 || /inst_executed|issue_active|warps_active|duration/' |
    sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//; s/\.avg\.pct_of_peak_sustained_active//' | head -40
done
