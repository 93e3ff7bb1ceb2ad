#!/usr/bin/env bash
# Runs SuiteRowsEveryTactic on the rows matching ROWS (FP4MOE_SUITE_ROWS) with
# every test binary in DIR (default .carry/dbg), ROUNDS times (binaries
# alternate within a round): which build a failure started in, and whether a
# clean result repeats. Logs under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
for r in $(seq 1 "${ROUNDS:-1}"); do
  for t in "${DIR:-.carry/dbg}"/*; do
    log="$OUT/$(basename "$t").r$r.log"
    FP4MOE_SUITE_ROWS="${ROWS:-}" timeout 300 "$t" --gtest_filter='SuiteRowsEveryTactic*' > "$log" 2>&1
    echo "round $r $(basename "$t"): rc=$? $(grep -c 'Failure' "$log") failures"
  done
done
