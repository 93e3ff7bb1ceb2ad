#!/usr/bin/env python3
"""Pairs every GEMM row with its "prepacked" twin in benchmark logs (the same
run times both, back to back): per row the best time of each over the logs
given, their ratio, and the prepacked row's ceiling and cuBLAS columns.
Usage: scripts/prepacked_table.py LOG [LOG...]"""
import sys

from bench_log import best

rows = best(sys.argv[1:])
print("| row | standard µs | prepacked µs | prepacked/standard | prepacked: of ceiling, vs BF16 / FP8, tactic |")
print("|---|---:|---:|---:|---|")
for row, (t, _) in rows.items():
    twin = rows.get(row + " prepacked")
    if twin is None:
        continue
    c, b, f8, tac = twin[1]
    print(f"| {row} | {t:.1f} | {twin[0]:.1f} | {twin[0] / t:.3f} | {c}, {b} / {f8}, {tac} |")
