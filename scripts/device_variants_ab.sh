#!/usr/bin/env bash
# A/B of benchmark binaries built on the host and carried xz-compressed in
# .carry/var/NAME.xz (about a tenth of their size, so several fit one call):
# unpacks them, then ROUNDS (default 2) rounds, each running every variant in
# turn (order reversed every other round). Logs and JSON under $OUT as
# ab_<round>_<name>.{log,json} (scripts/ab_table.py reads them).
# Usage: scripts/device_variants_ab.sh [benchmark arguments...]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/variants
export FP4MOE_COMMIT=${FP4MOE_COMMIT:-$(cat .fp4moe_commit 2>/dev/null || echo unknown)}
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
names=()
for f in .carry/var/*.xz; do
  n=$(basename "$f" .xz)
  python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" "$f" "/tmp/variants/$n"
  chmod +x "/tmp/variants/$n"
  names+=("$n")
done
for r in $(seq 1 "${ROUNDS:-2}"); do
  order=("${names[@]}")
  if [ $((r % 2)) -eq 0 ]; then order=(); for ((i = ${#names[@]} - 1; i >= 0; i--)); do order+=("${names[$i]}"); done; fi
  for n in "${order[@]}"; do
    timeout ${BENCH_TIMEOUT:-200} "/tmp/variants/$n" "$@" > "$OUT/ab_${r}_$n.log" 2>&1
    echo "round $r $n rc=$?"
  done
done
