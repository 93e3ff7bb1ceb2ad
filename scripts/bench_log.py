"""The fp4moe rows of a benchmark log (scripts/ab_table.py, scripts/prepacked_table.py):
best(paths) keeps each row's lowest time over the logs given, with the
fraction-of-ceiling, cuBLAS and tactic columns of that run."""
import re

ROW = re.compile(r"(\S.*?)\s+fp4moe\s+([\d.]+)\s+\S+\s+\S+\s+([\d.]+% \w+)\s+(\S+)\s+(\S+)\s+(.*)$")


def best(paths):
    """{row: (µs, (of ceiling, vs BF16, vs FP8, tactic))}, the lowest time per row."""
    out = {}
    for path in paths:
        for line in open(path):
            m = ROW.match(line)
            if not m:
                continue
            row, t = m.group(1).strip(), float(m.group(2))
            if row not in out or t < out[row][0]:
                out[row] = (t, (m.group(3), m.group(4), m.group(5), m.group(6).strip()))
    return out
