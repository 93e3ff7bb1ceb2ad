#!/usr/bin/env bash
# Per-instruction (SASS) warp-stall samples of one benchmark row's GEMM
# kernel, on the lent GPU machine: ncu's source page as CSV under $OUT
# (source_<n>.csv.gz), one per job. JOBS: "BINARY|SUITE|FILTER;..." as in
# device_ncu_metrics.sh. Read it with scripts/sass_stalls.py.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
IFS=';' read -ra jobs <<< "${JOBS:?JOBS=\"bin|suite|filter;...\"}"
n=0
for job in "${jobs[@]}"; do
  IFS='|' read -r bin suite filter <<< "$job"
  n=$((n + 1))
  rep="$OUT/source_$n"
  ncu --clock-control none --kernel-name regex:"${NCU_KERNEL:-fp4_gemm}" --launch-skip "${NCU_SKIP:-3}" --launch-count 1 \
    --section SourceCounters --section WarpStateStats -f -o "$rep" "$bin" "$suite" --no-ceilings --filter "$filter" \
    > "$OUT/source_$n.log" 2>&1
  echo "== $n: $job (rc=$?)"
  ncu --import "$rep.ncu-rep" --page source --print-source sass --csv 2> "$OUT/source_$n.err" | gzip > "$rep.csv.gz"
  echo "csv: $(zcat "$rep.csv.gz" | wc -l) lines"; head -3 "$OUT/source_$n.err"
  rm -f "$rep.ncu-rep"
done
