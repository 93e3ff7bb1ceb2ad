#!/usr/bin/env python3
"""Reads a pipeline trace of a register-tile GEMM (every layout but gather;
src/kernels/sm90/pipeline_trace.cuh, a build with -DFP4MOE_PIPELINE_TRACE=ON,
FP4MOE_TRACE_FILE set) and prints where the launch's time goes:

  start skew    each CTA's first instruction against the earliest CTA's
                (the global nanosecond timer);
  prologue      from a CTA's first instruction to past its prologue barrier
                (barriers, the masked prefix, the scale table);
  first data    from there to its first work item's first full stage (the
                producer's first loads: tensor-map fetch, DRAM latency),
                and its parts: the consumer's set-up (to its role's start,
                to its first item, to its first wait) and the producer's
                (to its role, to the scheduler's first answer, to its
                first stage's wait); for every later item, when the
                producer issued its first stage against the consumer's
                wait on it;
  per work item (consumer warpgroup 0):
    wait        item start to its first stage full (split: its set-up,
                then the wait on the stage),
    loop        to its MMAs landed,
    arrive      to the split-K / stream-K arrival's answer (the partial's
                stores, the fence and the count),
    reduce      to the partials added (the last contributor only),
    epilogue    to the next item's start (or the CTA's end); in the
                TMA-store tile split into: to the slab free for part 0,
                part 0 packed and its stores issued, to the slab free for
                part 1, part 1, to the scheduler's call;
  tail          each CTA's end against the latest CTA's end.

Clocks convert to microseconds per CTA from the two global-timer samples
(kernel start and end). With --per-cta it also prints one line per CTA
(its SM, start and end against the first start, stages loaded, time in
its items' loops and per stage) and what the end times go with: the
stage counts, the CTAs an SM holds, which of them started first, the
loop rate per stage, and the SM's other CTA.
Usage: scripts/tile_trace.py TRACE.bin [--per-cta]
"""
import sys
from collections import defaultdict

from pipeline_trace import read  # (the trace file's reader, shared)

ITEM_START, FIRST_FULL, MMA_DONE, STORED, ARRIVED, REDUCED = 11, 12, 3, 7, 13, 14
FIRST_WAIT = 1  # (kTrPassWait: a work item's consumer reaches its first stage's wait)
KERNEL_START, PROLOGUE_DONE, GLOBAL_TIME = 15, 16, 17
ROLE_START, FIRST_WORK = 18, 19  # (traces before stop 41 have neither)
WATCH_FULL = 20  # (a watcher thread on the last actor row: each stage's first fill; stop 42 on)
ASK_WORK = 21  # (a consumer asks the scheduler for its next item; stop 42 on)
SLAB_FREE, PART_ISSUED = 22, 23  # (the TMA-store epilogue's parts: slab free, stores issued; stop 49 on)
EMPTY_WAIT, EMPTY_GOT, ISSUED = 8, 9, 10


def stats(values):
    if not values:
        return "-"
    v = sorted(values)
    mean = sum(v) / len(v)
    return "mean %7.2f  p50 %7.2f  max %7.2f  (n %d)" % (mean, v[len(v) // 2], v[-1], len(v))


def main():
    ctas, actors, rows = read(sys.argv[1])
    starts, ends, prologue, first_data, tail_items = {}, {}, [], [], defaultdict(int)
    sm_of, loop_us = {}, defaultdict(float)
    phases = defaultdict(list)
    rate = {}
    items_of = {}  # CTA -> its first consumer warpgroup's items (for the producer's side below)
    for (c, a), ev in rows.items():
        if a != 1:
            continue
        by = defaultdict(list)
        for k, arg, v in ev:
            by[k].append((arg, v))
        if not by[KERNEL_START] or len(by[GLOBAL_TIME]) < 2:
            continue
        clk0 = by[KERNEL_START][0][1]
        ns0 = next(v for arg, v in by[GLOBAL_TIME] if arg == 0)
        ns1 = next(v for arg, v in by[GLOBAL_TIME] if arg == 1)
        clk1 = by[STORED][-1][1] if by[STORED] else ev[-1][2]
        ghz = (clk1 - clk0) / max(1, ns1 - ns0)
        rate[c] = ghz
        us = lambda d: d / ghz / 1000.0
        starts[c], ends[c] = ns0, ns1
        sm_of[c] = by[KERNEL_START][0][0]
        prologue.append(us(by[PROLOGUE_DONE][0][1] - clk0))
        # The items, in order: (start, first_full, mma_done, arrived, reduced).
        items, cur = [], None
        for k, arg, v in ev:
            if k == ITEM_START:
                cur = {"start": v, "slot": arg}
                items.append(cur)
            elif cur is not None and k == FIRST_WAIT and "ready" not in cur:
                cur["ready"], cur["stage"] = v, arg
            elif cur is not None and k in (SLAB_FREE, PART_ISSUED):
                cur.setdefault("parts", []).append((k, arg, v))
            elif cur is not None and k == FIRST_FULL and "full" not in cur:
                cur["full"] = v
            elif cur is not None and k == MMA_DONE:
                cur["mma"] = v
            elif cur is not None and k == ARRIVED:
                cur["arrived"], cur["last"] = v, arg
            elif cur is not None and k == REDUCED:
                cur["reduced"] = v
            elif cur is not None and k == ASK_WORK and "asked" not in cur:
                cur["asked"] = v  # the next item asked for: this one's epilogue stored
        if items and "full" in items[0]:
            first_data.append(us(items[0]["full"] - by[PROLOGUE_DONE][0][1]))
            if "ready" in items[0]:  # the consumer's own setup, and then its wait for the data
                phases["first: setup"].append(us(items[0]["ready"] - by[PROLOGUE_DONE][0][1]))
                phases["first: waited"].append(us(items[0]["full"] - items[0]["ready"]))
                if by[ROLE_START]:  # the setup split: to its role's start, to its first item, to the wait
                    role = by[ROLE_START][0][1]
                    phases["setup: role"].append(us(role - by[PROLOGUE_DONE][0][1]))
                    phases["setup: to item"].append(us(items[0]["start"] - role))
                    phases["setup: to wait"].append(us(items[0]["ready"] - items[0]["start"]))
        tail_items[len(items)] += 1
        items_of[c] = items
        for i, it in enumerate(items):
            nxt = items[i + 1]["start"] if i + 1 < len(items) else clk1
            if "full" in it:
                phases["wait"].append(us(it["full"] - it["start"]))
                if "ready" in it:  # its split: the item's set-up, then the wait on its first stage
                    phases["wait: set-up"].append(us(it["ready"] - it["start"]))
                    phases["wait: stage"].append(us(it["full"] - it["ready"]))
            # The TMA-store epilogue's parts, in order from the MMAs landed:
            # slab free (part 0: the previous tile's stores had read it), part
            # issued, slab free (part 1: part 0's stores have read it), ...
            if "mma" in it and "parts" in it:
                prev = it["mma"]
                for k, arg, v in it["parts"]:
                    phases["epi: %s %d" % ("to slab" if k == SLAB_FREE else "part", arg)].append(us(v - prev))
                    prev = v
                if "asked" in it:
                    phases["epi: to ask"].append(us(it["asked"] - prev))
            if "mma" in it and "full" in it:
                phases["loop"].append(us(it["mma"] - it["full"]))
                loop_us[c] += us(it["mma"] - it["full"])
            after = it.get("mma", it["start"])
            if "arrived" in it:
                phases["arrive"].append(us(it["arrived"] - it["mma"]))
                after = it["arrived"]
                if "reduced" in it:
                    phases["reduce"].append(us(it["reduced"] - it["arrived"]))
                    after = it["reduced"]
            if it.get("last", 1):
                phases["epilogue"].append(us(nxt - after))
                if "asked" in it and it["asked"] >= after:  # its split: the stores, then the scheduler's answer
                    phases["epi: stores"].append(us(it["asked"] - after))
                    phases["epi: next item"].append(us(nxt - it["asked"]))
            else:
                phases["to next item"].append(us(nxt - after))
    # The producer (actor 0): prologue end to its first stage's wait, that
    # wait, the first stage's issue, and from the issue to the consumer's
    # first full stage (the loads' latency), in the same CTA's clock.
    prod = defaultdict(list)
    stages = {}
    first_lat = {}  # CTA -> its first stage's issue to full (watched where a watcher ran), µs
    for (c, a), ev in rows.items():
        if a != 0 or c not in rate:
            continue
        by = defaultdict(list)
        for k, arg, v in ev:
            by[k].append(v)
        cons = rows.get((c, 1), [])
        full = next((v for k, arg, v in cons if k == FIRST_FULL), None)
        if not (by[PROLOGUE_DONE] and by[EMPTY_WAIT] and by[ISSUED]):
            continue
        stages[c] = len(by[ISSUED])
        us = lambda d: d / rate[c] / 1000.0
        prod["to first stage"].append(us(by[EMPTY_WAIT][0] - by[PROLOGUE_DONE][0]))
        if by[ROLE_START] and by[FIRST_WORK]:  # that split: to its role, to the scheduler's answer, to the wait
            prod["to role"].append(us(by[ROLE_START][0] - by[PROLOGUE_DONE][0]))
            prod["role to work"].append(us(by[FIRST_WORK][0] - by[ROLE_START][0]))
            prod["work to stage"].append(us(by[EMPTY_WAIT][0] - by[FIRST_WORK][0]))
        prod["first issue"].append(us(by[ISSUED][0] - by[EMPTY_WAIT][0]))
        if full is not None:
            prod["issue to full"].append(us(full - by[ISSUED][0]))
            first_lat[c] = us(full - by[ISSUED][0])
        # The watcher (a thread doing nothing else) saw stage s fill: the
        # latency of the loads themselves, apart from the consumers' wait.
        watch = {arg: v for k, arg, v in rows.get((c, actors - 1), []) if k == WATCH_FULL}
        if 0 in watch:
            prod["issue to watched full"].append(us(watch[0] - by[ISSUED][0]))
            first_lat[c] = us(watch[0] - by[ISSUED][0])
            if full is not None:
                prod["watched full to consumer's"].append(us(full - watch[0]))
            for s, v in sorted(watch.items()):
                if 0 < s < len(by[ISSUED]):
                    prod["watched: stage s issue to full"].append(us(v - by[ISSUED][s]))
        # Each item's first stage: when the producer issued its loads against
        # the consumer's wait on it (the last issue into that slot before the
        # stage was seen full).
        issued = [(arg, v) for k, arg, v in rows[(c, a)] if k == ISSUED]
        for it in items_of.get(c, [])[1:]:
            if "ready" not in it or "full" not in it:
                continue
            v = max((v for arg, v in issued if arg == it["stage"] and v <= it["full"]), default=None)
            if v is not None:
                prod["item: issued before its wait"].append(us(it["ready"] - v))
                prod["item: issue to full"].append(us(it["full"] - v))
        if len(by[ISSUED]) > 1:
            prod["issue gaps"].extend(us(b - a) for a, b in zip(by[ISSUED][:4], by[ISSUED][1:5]))
    if not starts:
        print("no register-tile CTA in the trace (a gather trace? scripts/pipeline_trace.py reads those)")
        return
    t0, t1 = min(starts.values()), max(ends.values())
    print("CTAs traced: %d (of up to %d); SM clock %.2f GHz (from the global timer)" %
          (len(starts), ctas, sum(rate.values()) / len(rate)))
    print("kernel span (first CTA start to last CTA end): %.2f us" % ((t1 - t0) / 1000.0))
    print("work items per CTA: " + ", ".join("%d items: %d CTAs" % (k, v) for k, v in sorted(tail_items.items())))
    print("start skew         " + stats([(s - t0) / 1000.0 for s in starts.values()]))
    print("prologue           " + stats(prologue))
    print("first data         " + stats(first_data))
    for name in ("first: setup", "setup: role", "setup: to item", "setup: to wait", "first: waited", "wait", "loop",
                 "wait: set-up", "wait: stage", "arrive", "reduce", "epilogue", "epi: stores", "epi: next item",
                 "epi: to slab 0", "epi: part 0", "epi: to slab 1", "epi: part 1", "epi: to ask", "to next item"):
        if phases[name]:
            print("item %-13s " % name + stats(phases[name]))
    for name in ("to first stage", "to role", "role to work", "work to stage", "first issue", "issue to full", "issue gaps",
                 "issue to watched full", "watched full to consumer's", "watched: stage s issue to full",
                 "item: issued before its wait", "item: issue to full"):
        if prod[name]:
            print("producer %-9s " % name[:9] + stats(prod[name]) + ("  (%s)" % name if len(name) > 9 else ""))
    print("tail (idle at end) " + stats([(t1 - e) / 1000.0 for e in ends.values()]))
    busy = sum(e - s for s, e in ((starts[c], ends[c]) for c in starts)) / len(starts) / 1000.0
    print("CTA lifetime       mean %.2f us of the %.2f us span" % (busy, (t1 - t0) / 1000.0))
    if "--per-cta" in sys.argv[2:]:
        per_cta(starts, ends, sm_of, stages, loop_us, t0, first_lat)


def per_cta(starts, ends, sm_of, stages, loop_us, t0, first_lat):
    """One line per CTA, then the end times grouped by what may explain them."""
    ctas_on = defaultdict(list)
    for c in starts:
        ctas_on[sm_of[c]].append(c)
    print("\nper CTA: cta sm | start end (us from the first start) | stages | loop us | loop us/stage | SM's CTAs")
    for c in sorted(starts, key=lambda c: ends[c]):
        n = stages.get(c, 0)
        print("%4d %3d | %7.2f %7.2f | %4d | %8.2f | %6.3f | %d" %
              (c, sm_of[c], (starts[c] - t0) / 1e3, (ends[c] - t0) / 1e3, n, loop_us[c],
               loop_us[c] / n if n else 0.0, len(ctas_on[sm_of[c]])))
    def group(name, key):
        g = defaultdict(list)
        for c in starts:
            g[key(c)].append((ends[c] - t0) / 1e3)
        print("end by %s:" % name)
        for k in sorted(g):
            print("  %-10s %s" % (k, stats(g[k])))
    group("stages loaded", lambda c: stages.get(c, 0))
    group("CTAs on its SM", lambda c: len(ctas_on[sm_of[c]]))
    # Which of an SM's CTAs started first (the global timer; ties by CTA id)
    # and whether its CTA id is in the grid's first half: with two CTAs an
    # SM the first-placed one's warps win the issue arbitration, and the
    # hardware does not place ids 0 .. G/2 - 1 first on every SM.
    placed = {c: sorted(ctas_on[sm_of[c]], key=lambda x: (starts[x], x)).index(c) for c in starts}
    group("start order on its SM", lambda c: placed[c])
    group("id in the first half", lambda c: c < len(starts) // 2)
    # The first stage's latency (issue to full) by the same keys: whether
    # the SM's second CTA, or a block of CTA ids, gets its first data later.
    def group_first(name, key):
        g = defaultdict(list)
        for c in first_lat:
            g[key(c)].append(first_lat[c])
        print("first stage, issue to full, by %s:" % name)
        for k in sorted(g):
            print("  %-10s %s" % (k, stats(g[k])))
    if first_lat:
        group_first("start order on its SM", lambda c: placed.get(c, -1))
        group_first("CTA id / 32", lambda c: c // 32)
    rates = sorted(loop_us[c] / stages[c] for c in starts if stages.get(c))
    if rates:
        print("loop us per stage across CTAs: " + stats(rates))
    # The SM's two CTAs: does one SM's pair end together (the SM is slow) or apart?
    pair_gap = [abs(ends[a] - ends[b]) / 1e3 for cs in ctas_on.values() if len(cs) == 2 for a, b in [cs]]
    if pair_gap:
        print("end gap between an SM's two CTAs: " + stats(pair_gap))
    sm_end = sorted(max(ends[c] for c in cs) for cs in ctas_on.values())
    print("SMs: %d; SM end (its last CTA) %s" % (len(sm_end), stats([(e - t0) / 1e3 for e in sm_end])))


if __name__ == "__main__":
    main()
