#!/usr/bin/env python3
"""Where a kernel's warps wait, per SASS instruction, from ncu's source page
(scripts/device_ncu_metrics.sh with METRICS=source). Prints the instructions with the most stall
samples (address, samples, the leading reasons, the instruction) and the
samples summed by opcode and by reason.
Usage: scripts/sass_stalls.py SOURCE.csv[.gz] [TOP]"""
import collections, csv, gzip, io, sys

path = sys.argv[1]
top = int(sys.argv[2]) if len(sys.argv) > 2 else 40
raw = gzip.open(path, "rt") if path.endswith(".gz") else open(path)
lines = raw.read().splitlines()
start = next(i for i, l in enumerate(lines) if l.startswith('"Address"'))
rows = list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))
reasons = [k for k in rows[0] if k.startswith("stall_") and "Not Issued" not in k]
num = lambda v: float(v) if v not in ("", "-") else 0.0
total = sum(num(r["Warp Stall Sampling (All Samples)"]) for r in rows)
by_op, by_reason = collections.Counter(), collections.Counter()
for r in rows:
    s = num(r["Warp Stall Sampling (All Samples)"])
    op = r["Source"].split()
    op = op[1] if op and op[0].startswith("@") and len(op) > 1 else (op[0] if op else "?")
    by_op[op.split(".")[0]] += s
    for k in reasons:
        by_reason[k[6:]] += num(r[k])
print(f"{len(rows)} instructions, {total:.0f} samples")
print("by reason:", ", ".join(f"{k} {100 * v / total:.1f}%" for k, v in by_reason.most_common(10)))
print("by opcode:", ", ".join(f"{k} {100 * v / total:.1f}%" for k, v in by_op.most_common(14)))
print(f"\ntop {top} instructions:")
for i, r in sorted(enumerate(rows), key=lambda x: -num(x[1]["Warp Stall Sampling (All Samples)"]))[:top]:
    s = num(r["Warp Stall Sampling (All Samples)"])
    lead = sorted(((num(r[k]), k[6:]) for k in reasons), reverse=True)[:2]
    why = " ".join(f"{k}:{100 * v / max(s, 1):.0f}%" for v, k in lead if v > 0)
    print(f"{i:5d} {100 * s / total:5.1f}%  {why:28s} {r['Source'].strip()[:70]}")
