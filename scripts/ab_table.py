#!/usr/bin/env python3
"""Compares benchmark logs of A/B runs (device_ab.sh): the best (lowest) fp4moe
time of each row per variant across rounds, the ratio of each variant to the
first, and the last variant's fraction-of-ceiling and cuBLAS columns.
Usage: scripts/ab_table.py DIR [DIR...]   (logs named ab_<round>_<variant>.log)"""
import collections, glob, os, re, sys

from bench_log import best

logs = collections.defaultdict(list)  # variant -> its logs, in first-seen order
for d in sys.argv[1:]:
    for f in sorted(glob.glob(os.path.join(d, "ab_*_*.log"))):
        logs[re.match(r"ab_\d+_(.+)\.log", os.path.basename(f)).group(1)].append(f)
variants = list(logs)
per_variant = {v: best(fs) for v, fs in logs.items()}
print("| row | " + " | ".join(f"{v} µs" for v in variants) + " | " +
      " | ".join(f"{v}/{variants[0]}" for v in variants[1:]) + f" | {variants[-1]}: of ceiling, vs BF16 / FP8, tactic |")
print("|---|" + "---:|" * (2 * len(variants) - 1) + "---|")
for row in per_variant[variants[0]]:
    if not all(row in per_variant[v] for v in variants):
        continue
    ts = {v: per_variant[v][row][0] for v in variants}
    cols = [f"{ts[v]:.1f}" for v in variants] + [f"{ts[v] / ts[variants[0]]:.3f}" for v in variants[1:]]
    c, b, f8, tac = per_variant[variants[-1]][row][1]
    print(f"| {row} | " + " | ".join(cols) + f" | {c}, {b} / {f8}, {tac} |")
