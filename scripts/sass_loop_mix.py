#!/usr/bin/env python3
"""The instruction mix of each GEMM kernel's stage loop, from SASS.

The stage loop is taken as the span from the target of the first backward
branch after a kernel's last HGMMA (when that target lies before its first
HGMMA) to that branch: the loop a consumer runs once per ring stage. Counts
are static (instructions in the span, every path included, so a rarely
taken branch inside the loop, such as the codes-past-K clear, counts too);
compare two builds of one kernel rather than reading them as executed
counts. Used for the stage-loop figures in docs/PERF.md (loads, stores,
local loads, multiplies a stage).

Usage:
  scripts/sass_loop_mix.py SASS [NAME_FILTER]          one build
  scripts/sass_loop_mix.py SASS_A SASS_B [NAME_FILTER]  two builds, side by side
SASS: `cuobjdump -sass` output (of an object, library or binary). Kernels
are named by their GemmConfig arguments (format, layout, swap, BN, BK,
stages, CTAs an SM, FP8 route, cluster, prepacked weights, consumers)."""
import os
import re
import sys

INS = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
BRA = re.compile(r"BRA\s+(?:`\(.*?\)\s*)?0x([0-9a-f]+)")
# Opcode classes worth a column, by opcode prefix.
COLUMNS = [("LDS", "LDS"), ("STS", "STS"), ("LDL", "LDL"), ("STL", "STL"), ("HMUL2", "HMUL2"),
           ("IMAD", "IMAD"), ("LOP3", "LOP3"), ("HGMMA", "HGMMA"), ("BAR", "BAR")]
LAYOUTS = {"0": "dense", "1": "contiguous", "2": "masked", "3": "moe-dense", "4": "fc1", "5": "gather"}
FIELDS = ["nvfp4", "layout", "swap", "BN", "BK", "stages", "ctas", "fp8", "cluster", "prepacked", "consumers"]


def config_name(mangled):
    """GemmConfig<...>'s arguments as 'nvfp4 masked swap bn32 bk256 st4 ...', or the name itself."""
    m = re.search(r"GemmConfigI(.*?)EEE", mangled)
    if not m:
        return mangled
    args = re.findall(r"L(?:b|i|NS0_6LayoutE)(\d+)E", m.group(1) + "E")
    if len(args) < len(FIELDS):
        return mangled
    v = dict(zip(FIELDS, args))
    parts = ["nvfp4" if v["nvfp4"] == "1" else "mxfp4", LAYOUTS.get(v["layout"], v["layout"])]
    parts += ["swapAB"] if v["swap"] == "1" else []
    parts += [f"bn{v['BN']}", f"bk{v['BK']}", f"st{v['stages']}", f"ctas{v['ctas']}"]
    parts += ["fp8"] if v["fp8"] == "1" else []
    parts += [f"cluster{v['cluster']}"] if v["cluster"] != "1" else []
    parts += ["prepacked"] if v["prepacked"] == "1" else []
    parts += [f"wg{v['consumers']}"] if v["consumers"] != "0" else []
    return " ".join(parts)


def stage_loop(instructions):
    """(start, end) indices of the stage loop in [(address, text)], or None."""
    mma = [i for i, (_, t) in enumerate(instructions) if "HGMMA" in t]
    if not mma:
        return None
    first_addr = instructions[mma[0]][0]
    for i in range(mma[-1], len(instructions)):
        b = BRA.search(instructions[i][1])
        if b and int(b.group(1), 16) < instructions[i][0]:
            target = int(b.group(1), 16)
            if target > first_addr:
                continue  # an inner loop after the MMAs
            start = next(k for k, (a, _) in enumerate(instructions) if a >= target)
            return start, i
    return None


def loop_mixes(text, name_filter=""):
    """{kernel name: {column: count, 'total': n}} for each kernel with a stage loop."""
    out = {}
    for block in re.split(r"\n\s*Function : ", text)[1:]:
        mangled = block.split("\n", 1)[0].strip()
        if name_filter not in mangled:
            continue
        ins = []
        for line in block.splitlines():
            m = INS.match(line)
            if m:
                text_ = re.sub(r"^@!?U?P\w+\s+", "", m.group(2))
                ins.append((int(m.group(1), 16), text_))
        span = stage_loop(ins)
        if span is None:
            continue
        body = [t for _, t in ins[span[0] : span[1] + 1]]
        mix = {"total": len(body)}
        for col, prefix in COLUMNS:
            mix[col] = sum(1 for t in body if t.split()[0].startswith(prefix))
        out[config_name(mangled)] = mix
    return out


def row(mix):
    return " ".join(f"{mix[c]:>5}" for c in ["total"] + [c for c, _ in COLUMNS])


def main(argv):
    files = [a for a in argv if os.path.isfile(a)]
    rest = [a for a in argv if not os.path.isfile(a)]
    if not files or len(files) > 2 or len(rest) > 1:
        sys.exit(__doc__)
    name_filter = rest[0] if rest else ""
    mixes = [loop_mixes(open(f).read(), name_filter) for f in files]
    head = " ".join(f"{c:>5}" for c in ["total"] + [c for c, _ in COLUMNS])
    width = max([len(k) for m in mixes for k in m] + [6])
    print(f"{'kernel':<{width}}  {head}" + (f"   |  {head}" if len(files) == 2 else ""))
    for name in sorted(set().union(*mixes)):
        cells = [row(m[name]) if name in m else " " * len(head) for m in mixes]
        print(f"{name:<{width}}  " + "   |  ".join(cells))


if __name__ == "__main__":
    main(sys.argv[1:])
