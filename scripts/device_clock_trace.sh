#!/usr/bin/env bash
# The SM clock and board power while benchmark rows run (for whether a row
# is held back by the power cap, e.g. ours against the cuBLAS peers): samples
# nvidia-smi every 20 ms into $OUT/smi.csv while the benchmark runs each row
# REPS times with warm L2 and COOLDOWN ms idle before each (so each timed
# op is one plateau between idle gaps), then prints each plateau's median
# clock and power in run order (scripts/clock_plateaus.py).
# Usage: BIN=.carry/var/fp4moe SUITE=dense FILTER='nvfp4 8192x8192x8192' scripts/device_clock_trace.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
[ -d .carry ] && scripts/device_unpack.sh .carry
BIN=${BIN:-build/tools/fp4moe}
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader,nounits -lms 20 > "$OUT/smi.csv" &
smi=$!
sleep 1
"$BIN" "${SUITE:-dense}" --filter "${FILTER:-nvfp4 8192x8192x8192}" --reps "${REPS:-2500}" --warm-l2 \
  --cooldown-ms "${COOLDOWN:-1500}" --no-ceilings > "$OUT/bench.log" 2>&1
sleep 1
kill "$smi"
grep -E "fp4moe |^\|" "$OUT/bench.log" | head -40
python3 scripts/clock_plateaus.py "$OUT/smi.csv"
