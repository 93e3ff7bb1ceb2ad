#!/usr/bin/env bash
# Several filtered A/Bs in one device call (scripts/device_ab.sh each, a
# table per job under $OUT/<n> and on stdout): JOBS is a ';'-separated list
# of "SUITE|FILTER" or "SUITE|FILTER|MORE BENCHMARK ARGUMENTS" (e.g.
# "moe-fc2|M=32 N|--moe-width 2048"). GTEST_FILTER / TESTS run the GPU
# tests once, first.
# VARIANTS, ROUNDS as for device_ab.sh. Unpacks the carried binaries
# (scripts/device_unpack.sh) first and packs every log under $OUT into one
# all.tgz at the end (a call brings back only a few files).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
[ -d .carry ] && scripts/device_unpack.sh .carry
IFS=';' read -ra jobs <<< "${JOBS:?JOBS=\"suite|filter;...\"}"
n=0
for job in "${jobs[@]}"; do
  IFS='|' read -r suite filter extra <<< "$job"
  n=$((n + 1))
  mkdir -p "$OUT/$n"
  if [ $n -eq 1 ]; then
    OUT="$OUT/$n" scripts/device_ab.sh "$suite" --no-ceilings --filter "$filter" $extra > "$OUT/$n/ab.txt" 2>&1
  else
    OUT="$OUT/$n" GTEST_FILTER= scripts/device_ab.sh "$suite" --no-ceilings --filter "$filter" $extra > "$OUT/$n/ab.txt" 2>&1
  fi
  head -3 "$OUT/$n/ab.txt" | grep -E "gpu tests|PASSED|FAILED"
  python3 scripts/ab_table.py "$OUT/$n" > "$OUT/$n/table.md" 2>&1
  cat "$OUT/$n/table.md"
  tar czf "$OUT/$n/logs.tgz" -C "$OUT/$n" $(cd "$OUT/$n" && ls ab_*.log) && rm -f "$OUT/$n"/ab_*.log
done
tar czf /tmp/all.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/all.tgz "$OUT/"
