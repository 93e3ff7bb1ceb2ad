#!/usr/bin/env bash
# ncu of several benchmark rows on the lent GPU machine, one report each,
# from a binary built on the host and carried (BIN, default
# .carry/fp4moe_head): ROWS is a ';'-separated list of --filter texts of
# SUITE (default decode). Sections include SourceCounters (stall sampling
# per SASS instruction). Logs under $OUT as ncu_<row>.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
BIN=${BIN:-.carry/fp4moe_head}
IFS=';' read -ra rows <<< "${ROWS:-nvfp4 G32 8x4096x7168;nvfp4 G32 64x4096x7168}"
for f in "${rows[@]}"; do
  tag=$(echo "$f" | tr ' =' '__')
  ncu --clock-control none --kernel-name regex:"${NCU_KERNEL:-fp4_gemm}" --launch-skip "${NCU_SKIP:-3}" --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section InstructionStats \
    --section SchedulerStats --section Occupancy --section LaunchStats --section SourceCounters ${NCU_EXTRA:-} \
    "$BIN" "${SUITE:-decode}" --no-ceilings --filter "$f" > "$OUT/ncu_$tag.txt" 2>&1
  echo "== $f (rc=$?)"
  grep -E "Duration|DRAM Throughput|Issue Slots Busy|Issued Ipc Active|No Eligible|Warp Cycles Per Issued|Registers Per" "$OUT/ncu_$tag.txt" | head -12
done
