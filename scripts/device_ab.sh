#!/usr/bin/env bash
# A/B on the lent GPU machine: the benchmark of this tree (build/tools/fp4moe)
# against an earlier build of it (BEFORE, default .carry/fp4moe_before), or
# every binary in the folder VARIANTS against each other, taking turns ROUNDS
# times (default 3, the order reversed every other round) so clock drift falls on all. Carry the binaries and
# .fp4moe_commit; a variant named NAME.xz (xz-compressed, about a tenth of
# the size, so several fit one call) is unpacked beside it to NAME first
# (scripts/device_unpack.sh).
# Logs under $OUT: ab_<round>_<name>.log.
# Usage: scripts/device_ab.sh SUITE [benchmark arguments...]
# Environment: GTEST_FILTER runs those GPU tests of TESTS (default
# build/tests/fp4moe_gpu_tests) first, within TEST_TIMEOUT seconds (300).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export FP4MOE_COMMIT=${FP4MOE_COMMIT:-$(cat .fp4moe_commit 2>/dev/null || echo unknown)}
BEFORE=${BEFORE:-.carry/fp4moe_before}
AFTER=build/tools/fp4moe
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
if [ -n "${GTEST_FILTER:-}" ]; then
  scripts/gtest_filter_check.sh "${TESTS:-build/tests/fp4moe_gpu_tests}" "$GTEST_FILTER"
  timeout "${TEST_TIMEOUT:-300}" "${TESTS:-build/tests/fp4moe_gpu_tests}" --gtest_filter="$GTEST_FILTER" > "$OUT/gpu_tests.log" 2>&1
  echo "gpu tests ($GTEST_FILTER) rc=$?"; grep -E "^\[  (PASSED|FAILED) |tests ran|Failure" "$OUT/gpu_tests.log" | head -20
fi
if [ -n "${VARIANTS:-}" ]; then
  scripts/device_unpack.sh "$VARIANTS"
  bins=()
  for f in "$VARIANTS"/*; do
    [ "${f%.xz}" = "$f" ] && bins+=("$f")
  done
else
  bins=("$BEFORE" "$AFTER")
fi
for n in $(seq 1 "${ROUNDS:-3}"); do
  # Even rounds run the binaries in reverse order, so neither always runs first.
  order=("${bins[@]}")
  if [ $((n % 2)) -eq 0 ]; then order=(); for ((i = ${#bins[@]} - 1; i >= 0; i--)); do order+=("${bins[$i]}"); done; fi
  for bin in "${order[@]}"; do
    name=$(basename "$bin"); [ "$bin" = "$BEFORE" ] && name=before; [ "$bin" = "$AFTER" ] && name=after
    "$bin" "$@" > "$OUT/ab_${n}_$name.log" 2>&1
    echo "== round $n $name (rc=$?)"; grep -E "^ceilings|fp4moe " "$OUT/ab_${n}_$name.log" | sed 's/  */ /g'
  done
done
