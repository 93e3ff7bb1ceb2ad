#!/usr/bin/env python3
"""Pairs every GEMM row with its "prepacked" twin in benchmark logs (the same
run times both, back to back): per row the best time of each over the logs
given, their ratio, and the prepacked row's ceiling and cuBLAS columns.
Usage: scripts/prepacked_table.py LOG [LOG...]"""
import re, sys

best, extra = {}, {}
for f in sys.argv[1:]:
    for line in open(f):
        m = re.match(r"(\S.*?)\s+fp4moe\s+([\d.]+)\s+\S+\s+\S+\s+([\d.]+% \w+)\s+(\S+)\s+(\S+)\s+(.*)$", line)
        if not m:
            continue
        row, t = m.group(1).strip(), float(m.group(2))
        if row not in best or t < best[row]:
            best[row] = t
            extra[row] = (m.group(3), m.group(4), m.group(5), m.group(6).strip())
print("| row | standard µs | prepacked µs | prepacked/standard | prepacked: of ceiling, vs BF16 / FP8, tactic |")
print("|---|---:|---:|---:|---|")
for row, t in best.items():
    twin = row + " prepacked"
    if twin not in best:
        continue
    c, b, f8, tac = extra[twin]
    print(f"| {row} | {t:.1f} | {best[twin]:.1f} | {best[twin] / t:.3f} | {c}, {b} / {f8}, {tac} |")
