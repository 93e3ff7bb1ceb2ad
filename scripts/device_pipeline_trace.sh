#!/usr/bin/env bash
# Gather pipeline traces of moe-fc2 rows on the lent GPU machine (a benchmark
# built with -DFP4MOE_PIPELINE_TRACE=ON: src/kernels/sm90/pipeline_trace.cuh).
# BIN: that benchmark; ROWS: the M values (NVFP4, default 32 128 384); FORMAT
# (default nvfp4); EXTRA: more benchmark options (e.g. --moe-width 2048).
# Writes $OUT/trace_<format>_m<M>.bin and the summary of
# scripts/pipeline_trace.py beside it.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
fmt=${FORMAT:-nvfp4}
for m in ${ROWS:-32 128 384}; do
  f="$OUT/trace_${fmt}_m$m"
  FP4MOE_TRACE_FILE="$f.bin" timeout 120 "${BIN:?BIN=the traced benchmark}" moe-fc2 --no-ceilings --reps 5 ${EXTRA:-} \
    --filter "$fmt M=$m N" > "$f.log" 2>&1
  echo "== $fmt M=$m (rc=$?)"
  python3 scripts/pipeline_trace.py "$f.bin" | tee "$f.txt"
done
