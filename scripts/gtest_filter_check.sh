#!/usr/bin/env bash
# Warns about every positive pattern of a GoogleTest filter that names no
# test of BINARY (a pattern that matches nothing runs nothing, silently:
# stop 51's A/B calls named `GemmAllTactics*`, whose tests are
# `All/GemmAllTactics.*`). Lists tests only; needs no GPU.
# Usage: scripts/gtest_filter_check.sh BINARY FILTER
set -uo pipefail
bin=$1
positive=${2%%-*}  # the patterns before the first '-' (the negative part)
IFS=':' read -ra patterns <<< "$positive"
for pat in "${patterns[@]}"; do
  [ -z "$pat" ] && continue
  n=$("$bin" --gtest_list_tests --gtest_filter="$pat" 2>/dev/null | grep -c '^  ')
  [ "$n" -eq 0 ] && echo "warning: GTEST_FILTER pattern '$pat' matches no test of $(basename "$bin")"
done
exit 0
