#!/usr/bin/env python3
"""Finds stage releases that can overtake their own loads (docs/PERF.md stop 24).

A consumer that releases a ring stage with a plain mbarrier arrive while a
shared load from that stage is still in flight can read the producer's next
TMA fill instead (tests/gpu/kernels/stage_release_test.cu). In SASS that is an
arrive (SYNCS.ARRIVE...A1T0) preceded, in its basic block, by an LDS whose
destination registers are neither read nor overwritten before the arrive,
with no MEMBAR or FENCE.VIEW.ASYNC between them. This script lists every such
arrive per kernel; exit status 1 if there is one.

Usage: scripts/sass_release_audit.py SASS [NAME_FILTER] [--ignore REGEX]
  SASS: `cuobjdump -sass` output of an object, library or binary.
  NAME_FILTER: only kernels whose mangled name contains it.
  --ignore REGEX: loads whose address operand matches are not reported (a
  load whose value the path never uses, such as the gather header's second
  word on the tile-end path).
It reads straight-line code only (back to the block's first instruction, a
branch target), so it can miss a load issued in a predecessor block; it is a
check, not a proof."""
import re
import sys

# A consumer's release: an arrive on its own CTA's barrier, or (.RED) on the
# peer CTA's in a two-CTA cluster.
ARRIVE = re.compile(r"SYNCS\.ARRIVE\.TRANS64(?:\.RED)?\.A1T0\b")
INS = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
LOAD = re.compile(r"(?:@!?U?P\w+\s+)?LDS(\.[\w.]+)?\s+(R\d+),\s*\[(.*?)\]")
BRA = re.compile(r"BRA\s+(?:`\(.*?\)\s*)?0x([0-9a-f]+)")


def registers(dst, opcode_suffix):
    base = int(dst[1:])
    wide = 4 if ".128" in opcode_suffix else 2 if ".64" in opcode_suffix else 1
    return [f"R{base + i}" for i in range(wide)]


def audit(text, name_filter="", ignore=None):
    """The releases that can overtake a load, and how many releases were read."""
    findings = []
    arrives = 0
    for block in re.split(r"\n\s*Function : ", text)[1:]:
        name = block.split("\n", 1)[0].strip()
        if name_filter not in name:
            continue
        ins = [(int(m.group(1), 16), m.group(2)) for m in map(INS.match, block.splitlines()) if m]
        targets = {int(m.group(1), 16) for _, s in ins for m in [BRA.search(s)] if m}
        for i, (addr, s) in enumerate(ins):
            if not ARRIVE.search(s):
                continue
            arrives += 1
            start = i
            while start > 0 and ins[start][0] not in targets and i - start < 120:
                start -= 1
            for k in range(start, i):
                m = LOAD.match(ins[k][1])
                if not m or (ignore and re.search(ignore, m.group(3))):
                    continue
                regs = registers(m.group(2), m.group(1) or "")
                settled = False
                for q in range(k + 1, i):
                    t = ins[q][1]
                    if "MEMBAR" in t or "FENCE.VIEW.ASYNC" in t:
                        settled = True  # a fence waits for the load
                        break
                    if any(re.search(rf"\b{r}\b", t) for r in regs):
                        settled = True  # read (or overwritten): the scoreboard waits for it
                        break
                if not settled:
                    findings.append((name, addr, ins[k][0], ins[k][1]))
    return findings, arrives


def main(argv):
    args = list(argv[1:])
    ignore = None
    if "--ignore" in args:
        j = args.index("--ignore")
        ignore = args[j + 1]
        del args[j : j + 2]
    if not args:
        print(__doc__)
        return 2
    findings, arrives = audit(open(args[0]).read(), args[1] if len(args) > 1 else "", ignore)
    for name, arrive, load, text in findings:
        print(f"{name[:160]}\n  arrive at 0x{arrive:x}: 0x{load:x} {text} still in flight")
    print(f"{arrives} release(s) read, {len(findings)} that can overtake a load")
    if arrives == 0:  # (a changed mnemonic would otherwise pass unread)
        print("no release arrive found: nothing was audited")
        return 1
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
