#!/usr/bin/env bash
# ncu metric groups of one benchmark row per binary, on the lent GPU machine.
# JOBS: a ';'-separated list of "BINARY|SUITE|FILTER" (the benchmark's row,
# its chosen tactic) or "BINARY|SUITE|FILTER|TACTICS" (the sweep of the
# tactics whose name contains TACTICS, e.g. "st5 sk8": NCU_SKIP counts its
# launches, warm-up included). METRICS: stalls (warp
# stall reasons, cycles per issued instruction, with instruction count, issue
# activity and active warps), pipes (each execution pipe's utilisation, %
# of peak while the SM is active), memory (DRAM and L2 traffic of the
# global loads, stores and atomics), shared (shared-memory instructions,
# wavefronts and bank conflicts, the LSU data pipe's use, SM cycles for the
# clock) or source (warp-stall samples and
# shared-memory wavefronts per SASS instruction: ncu's source page as CSV,
# source_<n>.csv.gz, read with scripts/sass_stalls.py). Logs under $OUT as
# <METRICS>_<n>.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
# The benchmark's header names this commit (the device copy has no .git).
export FP4MOE_COMMIT=${FP4MOE_COMMIT:-$(cat .fp4moe_commit 2>/dev/null || echo unknown)}
IFS=';' read -ra jobs <<< "${JOBS:?JOBS=\"bin|suite|filter;...\"}"
mode=${METRICS:-stalls}
case "$mode" in
  stalls)
    what=(--metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__warps_active.avg.per_cycle_active,gpu__time_duration.sum')
    show='stalled|inst_executed|issue_active|warps_active' ;;
  pipes)
    what=(--metrics 'regex:sm__pipe_.*_cycles_active\.avg\.pct_of_peak_sustained_active,regex:sm__inst_executed_pipe_.*\.avg\.pct_of_peak_sustained_active,gpu__time_duration.sum')
    show='sm__' ;;
  memory)
    what=(--metrics 'dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum,lts__t_sectors_srcunit_tex_op_write_lookup_miss.sum,lts__t_requests_srcunit_tex_op_write.sum,lts__t_sectors_srcunit_tex_op_atom.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,sm__cycles_active.avg,gpu__time_duration.sum')
    show='dram__|lts__|l1tex__|sm__cycles' ;;
  shared)
    what=(--metrics 'l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_active,l1tex__throughput.avg.pct_of_peak_sustained_active,sm__cycles_active.avg,sm__cycles_elapsed.avg,gpu__time_duration.sum')
    show='l1tex__|smsp__inst|sm__cycles' ;;
  source)
    what=(--section SourceCounters --section WarpStateStats) ;;
  *) echo "METRICS must be stalls, pipes, memory, shared or source" >&2; exit 2 ;;
esac
n=0
for job in "${jobs[@]}"; do
  IFS='|' read -r bin suite filter tactics <<< "$job"
  args=("$suite" --no-ceilings --filter "$filter")
  [ -n "${tactics:-}" ] && args=(sweep "$suite" --reps 3 --warmup 1 --filter "$filter" --tactics "$tactics")
  n=$((n + 1))
  log="$OUT/${mode}_$n.txt"
  report=()
  [ "$mode" = source ] && report=(-f -o "$OUT/source_$n")
  ncu --clock-control none --kernel-name regex:"${NCU_KERNEL:-fp4_gemm}" --launch-skip "${NCU_SKIP:-3}" --launch-count 1 \
    "${what[@]}" "${report[@]}" "$bin" "${args[@]}" > "$log" 2>&1
  echo "== $n: $job (rc=$?)"
  if [ "$mode" = source ]; then
    ncu --import "$OUT/source_$n.ncu-rep" --page source --print-source sass --csv 2>> "$log" | gzip > "$OUT/source_$n.csv.gz"
    rm -f "$OUT/source_$n.ncu-rep"
    echo "csv: $(zcat "$OUT/source_$n.csv.gz" | wc -l) lines"
    continue
  fi
  # Small values of the ratio metrics are left out; counts and the duration always shown.
  grep -E "$show|duration" "$log" | awk '$NF+0 >= 0.05 || /inst_executed|issue_active|warps_active|duration/' |
    sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//; s/\.avg\.pct_of_peak_sustained_active//' | head -40
done
