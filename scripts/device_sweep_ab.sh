#!/usr/bin/env bash
# A/B of chosen tactics on problems of a shape list, on the lent GPU machine:
# every fp4moe binary in VARIANTS (NAME or NAME.xz, unpacked first) runs
# `fp4moe sweep --shapes SHAPES --tactics TACTICS`, taking turns ROUNDS times
# (the order reversed every other round, so clock drift falls on all), and
# the table gives each (problem, tactic) its best time per variant and the
# ratio to the first variant. Needs binaries with `sweep --shapes` (6daa124).
# Usage: VARIANTS=.carry/var [SHAPES=scripts/shapes_decode_few_tokens.txt]
#        [TACTICS=dp4a] [ROUNDS=3] [REPS=30] OUT=$OUT scripts/device_sweep_ab.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
V=${VARIANTS:?VARIANTS=DIR of fp4moe binaries}
SHAPES=${SHAPES:-scripts/shapes_decode_few_tokens.txt}
scripts/device_unpack.sh "$V"
mapfile -t names < <(find "$V" -maxdepth 1 -type f ! -name '*.xz' -printf '%f\n' | sort)
[ ${#names[@]} -ge 1 ] || { echo "no binaries in $V"; exit 1; }
: > "$OUT/sweep_ab.tsv"
for r in $(seq 1 "${ROUNDS:-3}"); do
  order=("${names[@]}")
  [ $((r % 2)) = 0 ] && mapfile -t order < <(printf '%s\n' "${names[@]}" | sort -r)
  for n in "${order[@]}"; do
    "$V/$n" sweep --shapes "$SHAPES" --tactics "${TACTICS:-dp4a}" --reps "${REPS:-30}" > "$OUT/sweep_${r}_$n.log" 2>&1
    echo "round $r $n rc=$?"
    # The sweep's table: "<problem>  <tactic>  <us>", the problem's fields
    # single-spaced, columns two or more spaces apart.
    sed -n '/^row  /,$p' "$OUT/sweep_${r}_$n.log" | tail -n +2 |
      awk -v n="$n" -F'  +' 'NF >= 3 && $NF ~ /^[0-9.]+$/ {print n "\t" $1 "\t" $2 "\t" $NF}' >> "$OUT/sweep_ab.tsv"
  done
done
python3 - "$OUT/sweep_ab.tsv" "${names[@]}" <<'PY'
import sys
from collections import defaultdict
path, names = sys.argv[1], sys.argv[2:]
best = defaultdict(dict)
for line in open(path):
    n, row, tactic, us = line.rstrip("\n").split("\t")
    key = (row.strip(), tactic.strip())
    best[key][n] = min(float(us), best[key].get(n, float("inf")))
print("| problem | tactic | " + " | ".join(f"{n} µs" for n in names) + " | " + " | ".join(f"{n}/{names[0]}" for n in names[1:]) + " |")
print("|---|---|" + "---:|" * (2 * len(names) - 1))
for (row, tactic), t in sorted(best.items()):
    cells = [f"{t[n]:.2f}" if n in t else "-" for n in names]
    ratios = [f"{t[n] / t[names[0]]:.3f}" if n in t and names[0] in t else "-" for n in names[1:]]
    print(f"| {row} | {tactic} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
PY
