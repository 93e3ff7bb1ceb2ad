#!/usr/bin/env python3
"""Compares benchmark logs of A/B runs (device_ab.sh): the best (lowest) fp4moe
time of each row per variant across rounds, the ratio of each variant to the
first, and the first variant's fraction-of-ceiling and cuBLAS columns.
Usage: scripts/ab_table.py DIR [DIR...]   (logs named ab_<round>_<variant>.log)"""
import collections, glob, os, re, sys

best = collections.defaultdict(dict)   # row -> variant -> time
extra = {}                             # (row, variant) -> (ceiling, vsBF16, vsFP8, tactic)
variants = []
for d in sys.argv[1:]:
    for f in sorted(glob.glob(os.path.join(d, "ab_*_*.log"))):
        var = re.match(r"ab_\d+_(.+)\.log", os.path.basename(f)).group(1)
        if var not in variants:
            variants.append(var)
        for line in open(f):
            m = re.match(r"(\S.*?)\s+fp4moe\s+([\d.]+)\s+\S+\s+\S+\s+([\d.]+% \w+)\s+(\S+)\s+(\S+)\s+(.*)$", line)
            if not m:
                continue
            row, t = m.group(1).strip(), float(m.group(2))
            if var not in best[row] or t < best[row][var]:
                best[row][var] = t
                extra[(row, var)] = (m.group(3), m.group(4), m.group(5), m.group(6).strip())
print("| row | " + " | ".join(f"{v} µs" for v in variants) + " | " +
      " | ".join(f"{v}/{variants[0]}" for v in variants[1:]) + f" | {variants[-1]}: of ceiling, vs BF16 / FP8, tactic |")
print("|---|" + "---:|" * (2 * len(variants) - 1) + "---|")
for row, ts in best.items():
    if not all(v in ts for v in variants):
        continue
    cols = [f"{ts[v]:.1f}" for v in variants] + [f"{ts[v] / ts[variants[0]]:.3f}" for v in variants[1:]]
    c, b, f8, tac = extra[(row, variants[-1])]
    print(f"| {row} | " + " | ".join(cols) + f" | {c}, {b} / {f8}, {tac} |")
