#!/usr/bin/env bash
# One device call for a kernel experiment on host-built binaries: the GPU
# tests GTEST_FILTER selects, then `fp4moe sweep SUITE --quick` (every
# tactic of each row) once per row filter in SWEEP_FILTERS (';'-separated,
# e.g. "M=96 N;M=384 N"). Every log goes into $OUT/logs.tar.gz (a call
# brings back at most 8 files); the sweep tables are also printed.
# Carry: .carry (scripts/device_unpack.sh) and .fp4moe_commit.
# Usage: GTEST_FILTER=... SWEEP_FILTERS=... scripts/device_tests_sweeps.sh SUITE
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
logs=$(mktemp -d)
scripts/device_unpack.sh .carry
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$logs/gpu.txt"
if [ -n "${GTEST_FILTER:-}" ]; then
  start=$(date +%s)
  timeout "${TEST_TIMEOUT:-300}" .carry/tests/fp4moe_gpu_tests --gtest_filter="$GTEST_FILTER" > "$logs/gpu_tests.log" 2>&1
  echo "gpu tests ($GTEST_FILTER) rc=$? $(( $(date +%s) - start )) s"
  grep -E "^\[  (PASSED|FAILED) |tests ran|Failure" "$logs/gpu_tests.log" | head -20
fi
IFS=';' read -r -a filters <<< "${SWEEP_FILTERS:-}"
n=0
for f in "${filters[@]}"; do
  n=$((n + 1))
  OUT="$logs" PREBUILT=.carry SWEEP_TAG="_$n" SWEEP_FILTER="$f" SWEEP_TIMEOUT=${SWEEP_TIMEOUT:-240} scripts/device_sweep.sh "$1"
done
[ -f "$logs/sweep.md" ] && cat "$logs/sweep.md"
tar -czf "$OUT/logs.tar.gz" -C "$logs" .
