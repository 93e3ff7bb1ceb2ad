#!/usr/bin/env bash
# Runs SuiteRowsEveryTactic on the rows matching ROWS (FP4MOE_SUITE_ROWS) with
# every test binary in DIR (default .carry/dbg): which build a failure
# started in. Logs under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
for t in "${DIR:-.carry/dbg}"/*; do
  FP4MOE_SUITE_ROWS="${ROWS:-}" timeout 300 "$t" --gtest_filter='SuiteRowsEveryTactic*' > "$OUT/$(basename "$t").log" 2>&1
  echo "$(basename "$t"): rc=$? $(grep -c 'Failure' "$OUT/$(basename "$t").log") failures"
done
