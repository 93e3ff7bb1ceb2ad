#!/usr/bin/env bash
# The contiguous-layout cluster tiles on the lent GPU machine: their GPU tests,
# then an A/B of two carried binaries that differ only in the heuristic
# (.carry/var/A_*, .carry/var/B_*), ROUNDS rounds alternating which runs
# first; prints each binary's picked rows (the first row of every shape).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
[ "${SKIP_TESTS:-0}" = 1 ] || timeout 200 .carry/tests/fp4moe_gpu_tests \
  --gtest_filter='All/GemmAllTactics.*contiguous*:GemmLargeM.*:GemmUnalignedOutput.*:GemmStructure.*:All/GemmAllTactics.*dense*' \
  > "$OUT/tests.log" 2>&1
echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED)|Failure|describe" "$OUT/tests.log" | head -10
A=$(ls .carry/var/A_*); B=$(ls .carry/var/B_*)
for r in $(seq 1 "${ROUNDS:-4}"); do
  if [ $((r % 2)) -eq 1 ]; then order="$A $B"; else order="$B $A"; fi
  for v in $order; do
    timeout 60 "$v" prefill --no-ceilings 2>/dev/null | grep -E "^prefill [a-z0-9]+ G[0-9]+ [0-9x]+ +fp4moe" |
      awk -v r="$r" -v v="$(basename "$v")" '{print r, v, $2, $3, $4, $6, $(NF-4)}'
  done
done
