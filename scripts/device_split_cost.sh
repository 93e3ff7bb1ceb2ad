#!/usr/bin/env bash
# What a split work item costs: sweeps of one decode row over its split-K
# choices with each carried benchmark binary (VARIANTS dir, names sorted,
# alternating, ROUNDS rounds), then the tile trace of chosen tactics with a
# trace build (TRACE_BIN; scripts/device_tile_trace.sh). Logs under $OUT.
# Environment: ROW (the sweep's row filter), SUITE (default decode),
# TACTICS (the sweep's tactic filter), TRACE_TACTICS (';'-separated tactic
# filters to trace).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
scripts/device_unpack.sh .carry
SUITE=${SUITE:-decode}
ROW=${ROW:-nvfp4 G8 1x7168x2048}
TACTICS=${TACTICS:-bn16 bk256 st4}
for r in $(seq 1 "${ROUNDS:-2}"); do
  for v in $(ls "${VARIANTS:-.carry/var}" | grep -v '\.xz$' | sort); do
    timeout 240 "${VARIANTS:-.carry/var}/$v" sweep "$SUITE" --reps 20 --filter "$ROW" --tactics "$TACTICS" \
      > "$OUT/sweep_${v}_r$r.log" 2>&1
    echo "== round $r $v rc=$?"
    grep -E "sk[0-9]|streamK" "$OUT/sweep_${v}_r$r.log" | head -20
  done
done
if [ -n "${TRACE_BIN:-}" ]; then
  jobs=""
  IFS=';' read -ra tt <<< "${TRACE_TACTICS:-st4 sk1;st4 sk2;st4 sk8}"
  for t in "${tt[@]}"; do jobs+="${jobs:+;}$SUITE|$ROW|$t"; done
  BIN="$TRACE_BIN" JOBS="$jobs" OUT="$OUT" scripts/device_tile_trace.sh
fi
