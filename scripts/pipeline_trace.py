#!/usr/bin/env python3
"""Reads a gather pipeline trace (src/kernels/sm90/pipeline_trace.cuh, a build
with -DFP4MOE_PIPELINE_TRACE=ON, FP4MOE_TRACE_FILE set) and prints where each
CTA's actors spend their time, and each stage's load time.

Consumer warpgroup states, between its events:
  top-own / top-foreign: waiting for a pass's first stage to be full (the pass
      is its own / another warpgroup's);
  mma: from its own pass's first stage full to its MMAs landed (conversion,
      MMA issue, the pass's other stages);
  order: waiting for the previous pass's addition (the hand-over token);
  add: its addition into the shared accumulator;
  walk: from an addition (or a foreign pass's header) to the next pass top;
  epilogue: from the tile-end header to the tile's stores done.
Producer: empty-wait (a free stage), issue (header, loads), other; in traces
that mark each copy's issue (since stop 55), a stage's issue time and each
copy's share of it, and the gap between successive issued stages.
Stage load time: from the producer's issue to the first consumer that was
already waiting seeing it full (stages no one waited on are not counted).
The load times are valid for one stage a pass (W = BK), the moe-fc2
benchmark's default shape. Only the first producer warp is traced: with two
(stage n: warp n % 2) its k-th stage is stage 2k. In the direct handout (no
warpgroup reads another's pass, every W since stop 39; traces before it,
of W > BK, walked) stage n is warpgroup n % kConsumers's n // kConsumers-th;
a padding pass (W > BK, a tile's last round) counts as mma.
"""
import struct
import sys
from collections import defaultdict

kWaited = 400  # cycles: a pass-top wait longer than this saw its stage land

NAMES = {1: "pass_wait", 2: "pass_got", 3: "mma_done", 4: "order_got", 5: "added", 6: "tile_end", 7: "stored",
         8: "empty_wait", 9: "empty_got", 10: "issued", 18: "role_start", 19: "first_work", 24: "copy_issued",
         26: "regs_released", 27: "share", 13: "arrived", 14: "reduced", 28: "epi_lapped", 29: "partial_stored"}
COPIES = ("weights TMA", "tokens TMA", "weight scales", "token scales")


def read(path):
    """(ctas, actors, rows): rows[(cta, actor)] is that actor's events as
    (kind, arg, value), for the actors that recorded any (scripts/tile_trace.py
    reads its traces with this too). Row by row: a 264-CTA trace is ~90 MB."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"FP4TRACE", "not a pipeline trace"
    ctas, actors, cap = struct.unpack_from("<HHI", data, 8)
    rows = {}
    off = 16
    for c in range(ctas):
        for a in range(actors):
            words = struct.unpack_from("<%dQ" % cap, data, off)
            off += 8 * cap
            events = []
            for w in words:
                if w == 0:
                    break
                events.append((w >> 56, (w >> 48) & 0xFF, w & 0xFFFFFFFFFFFF))
            if events:
                rows[(c, a)] = events
    return ctas, actors, rows


def pct(x, total):
    return 100.0 * x / total if total else 0.0


def quantiles(v):
    if not v:
        return "-"
    v = sorted(v)
    q = lambda f: v[min(len(v) - 1, int(f * len(v)))]
    return "median %d, p10 %d, p90 %d, max %d (n %d)" % (q(0.5), q(0.1), q(0.9), v[-1], len(v))


def consumer_states(ev):
    acc = defaultdict(int)
    passes = 0
    ev = [e for e in ev if e[0] != 18]  # (the role's start: on the timeline)
    for (k0, a0, t0), (k1, a1, t1) in zip(ev, ev[1:]):
        d = t1 - t0
        if k0 == 1 and k1 == 2:
            acc["top-own" if a1 else "top-foreign"] += d
        elif k0 == 1 and k1 == 6:
            acc["top-foreign"] += d
        elif k0 == 2 and a0 != 0:
            acc["mma"] += d
            passes += 1
        elif k0 == 3:
            acc["order"] += d
        elif k0 == 4:
            acc["add"] += d
        elif k0 in (6, 13, 14, 28, 29):  # (the epilogue's own marks since stop 61: 28, 29, 13, 14)
            acc["epilogue"] += d
        else:
            acc["walk"] += d
    return acc, passes, (ev[-1][2] - ev[0][2]) if ev else 0


def main():
    ctas, actors, rows = read(sys.argv[1])
    total = defaultdict(int)
    span_all = 0
    prod = defaultdict(int)
    prod_span = 0
    loads = []
    copy_times = defaultdict(list)  # copy index: cycles from the previous mark to its issue
    stage_issue = []  # cycles from a free stage to its last copy issued
    stage_gaps = []  # cycles between the first producer warp's successive issued stages
    own_waits = []
    mma_times = []
    for c in range(ctas):
        # (the kernel's start and prologue, marked on this row since stop 57: on the timeline)
        pev = [e for e in rows.get((c, 0), []) if e[0] not in (15, 16, 17, 18, 26)]
        if not pev:
            continue
        for (k0, _, t0), (k1, a1, t1) in zip(pev, pev[1:]):
            # (traces since stop 55 mark each copy's issue, event 24: the
            # stage's issue runs from empty_got to issued across them)
            prod["empty-wait" if k0 == 8 else "issue" if k0 in (9, 24) else "other"] += t1 - t0
            if k1 == 24 and k0 in (9, 24):
                copy_times[a1].append(t1 - t0)
            if k0 == 9 and k1 in (10, 24):
                start = t0
            if k1 == 10 and k0 in (9, 24):
                stage_issue.append(t1 - start)
        prod_span += pev[-1][2] - pev[0][2]
        issued = [t for k, _, t in pev if k == 10]
        stage_gaps.extend(b - a for a, b in zip(issued, issued[1:]))
        cons = [rows.get((c, a), []) for a in range(1, actors)]
        cons = [e for e in cons if e and not is_watcher(e)]
        for e in cons:
            acc, passes, span = consumer_states(e)
            for k, v in acc.items():
                total[k] += v
            span_all += span
            for (k0, a0, t0), (k1, a1, t1) in zip(e, e[1:]):
                if k0 == 1 and k1 == 2 and a1 != 0:
                    own_waits.append(t1 - t0)
                if k0 == 2 and a0 != 0 and k1 == 3:
                    mma_times.append(t1 - t0)
        # Stage n's land time: the earliest 'got' of a warpgroup that waited
        # (its wait began after the issue).
        tops = []
        for e in cons:
            seq = []
            for (k0, a0, t0), (k1, a1, t1) in zip(e, e[1:]):
                if k0 == 1 and k1 in (2, 6):
                    seq.append((t0, t1))
            tops.append(seq)
        stages_seen = sum(len(seq) for seq in tops)
        direct = not any(k == 2 and a == 0 for e in cons for k, a, _ in e)
        n_stages = stages_seen if direct else (len(tops[0]) if tops else 0)
        step = 2 if len(issued) < 0.75 * n_stages else 1  # two producer warps: warp 0 issued every other stage
        for k, ti in enumerate(issued):
            n = step * k
            if direct:
                cand = [(tops[n % len(tops)], n // len(tops))] if tops else []
            else:
                cand = [(seq, n) for seq in tops]
            # (a wait longer than the ~220 cycles of a stage already full: the warpgroup saw it land)
            got = [seq[i][1] for seq, i in cand if i < len(seq) and seq[i][1] - seq[i][0] > kWaited and seq[i][1] > ti]
            if got:
                loads.append(min(got) - ti)
    print("consumer warpgroups (%% of their time, %d CTAs):" % sum(1 for c in range(ctas) if rows.get((c, 1))))
    for k in ("mma", "top-own", "top-foreign", "order", "add", "walk", "epilogue"):
        print("  %-12s %5.1f%%" % (k, pct(total[k], span_all)))
    print("producer (% of its time):")
    for k in ("empty-wait", "issue", "other"):
        print("  %-12s %5.1f%%" % (k, pct(prod[k], prod_span)))

    if copy_times:
        print("producer: a stage's issue (free stage to last copy), cycles:", quantiles(stage_issue))
        for a in sorted(copy_times):
            print("  copy %d (%s), cycles since the previous mark:" % (a, COPIES[a] if a < len(COPIES) else "?"),
                  quantiles(copy_times[a]))
    print("producer: between successive issued stages, cycles:", quantiles(stage_gaps))
    print("own pass-top wait, cycles:", quantiles(own_waits))
    print("own pass mma span, cycles:", quantiles(mma_times))
    print("stage load time (issue to full), cycles:", quantiles(loads))
    chain(ctas, actors, rows)


def tail(ends_by_cta, t0):
    """The grid's tail: whether the last CTAs are late by their SM (both of
    an SM's CTAs late) or by their share (more passes than the others)."""
    if len(ends_by_cta) < 4:
        return
    by_sm = defaultdict(list)
    for c, (sm, end, passes, _, _) in ends_by_cta.items():
        by_sm[sm].append((end, c))
    order = sorted(ends_by_cta, key=lambda c: ends_by_cta[c][1])
    ends = [ends_by_cta[c][1] for c in order]
    passes = [ends_by_cta[c][2] for c in order]
    n = len(order)
    mean = lambda v: sum(v) / len(v)
    me, mp = mean(ends), mean(passes)
    cov = sum((e - me) * (q - mp) for e, q in zip(ends, passes))
    var_e = sum((e - me) ** 2 for e in ends)
    var_p = sum((q - mp) ** 2 for q in passes)
    corr = cov / (var_e * var_p) ** 0.5 if var_e and var_p else 0.0
    # A CTA's pace: ns a pass from its first issue to its end (a slow SM
    # shows as a slow pace on both its CTAs, a heavy share as more passes).
    pace = sorted((ends_by_cta[c][1] - ends_by_cta[c][3]) / max(1, ends_by_cta[c][2]) for c in order)
    firsts = [ends_by_cta[c][3] for c in order]
    mf = mean(firsts)
    var_f = sum((f - mf) ** 2 for f in firsts)
    corr_f = sum((e - me) * (f - mf) for e, f in zip(ends, firsts)) / (var_e * var_f) ** 0.5 if var_e and var_f else 0.0
    pairs = [abs(v[0][0] - v[1][0]) / 1000 for v in by_sm.values() if len(v) == 2]
    print("the grid's tail: end vs the CTA's own passes, correlation %.2f; passes a CTA %d-%d" % (corr, min(passes), max(passes)))
    print("  end vs the CTA's first issue, correlation %.2f; ns a pass (first issue to end / passes): p10 %.0f, median %.0f, p90 %.0f, max %.0f"
          % (corr_f, pace[len(pace) // 10], pace[len(pace) // 2], pace[int(0.9 * len(pace))], pace[-1]))
    if pairs:
        pairs.sort()
        print("  an SM's two CTAs end apart, µs: median %.2f, p90 %.2f" % (pairs[len(pairs) // 2], pairs[int(0.9 * len(pairs))]))
    # An SM's pass rate with both CTAs running against the later one's
    # alone after the first ends: near 1 the SM was saturated (moving passes
    # between its CTAs cannot end it sooner); near 0.5 the lone CTA kept its
    # paired pace and the pair left capacity unused that balance would take.
    # (The alone window ends with the CTA's last epilogue, so a window of a
    # few passes reads low.)
    paired, alone = [], []
    for v in by_sm.values():
        if len(v) != 2:
            continue
        (t_f, f), (t_l, l) = sorted(v)
        pf, pl = ends_by_cta[f][4], ends_by_cta[l][4]
        start = max(pf[0], pl[0]) if pf and pl else None
        before = [t for t in pl if t < t_f]
        after = [t for t in pl if t >= t_f]
        if start is None or len(after) < 3 or t_f - start <= 0:
            continue
        n_pair = sum(1 for t in pf if t >= start) + sum(1 for t in before if t >= start)
        paired.append(1000.0 * n_pair / (t_f - start))
        alone.append(1000.0 * len(after) / max(1.0, t_l - t_f))
    if paired:
        ratio = sorted(a / b for a, b in zip(alone, paired))
        med = lambda x: sorted(x)[len(x) // 2]
        print("  an SM's passes a µs: both CTAs %.2f, the later one alone %.2f (median over %d SMs); alone / both: p10 %.2f, median %.2f, p90 %.2f"
              % (med(paired), med(alone), len(paired), ratio[len(ratio) // 10], ratio[len(ratio) // 2], ratio[int(0.9 * len(ratio))]))
    print("  the last CTAs (cta, SM, µs, passes; its SM's other CTA µs):")
    for c in order[-6:]:
        sm, end, q, _, _ = ends_by_cta[c]
        other = [e for e, o in by_sm[sm] if o != c]
        print("    %4d %4d %7.2f %4d  %s" % (c, sm, (end - t0) / 1000, q, "%.2f" % ((other[0] - t0) / 1000) if other else "-"))


def by_placement(ends_by_cta, placement, t0):
    """Weighted shares by placement (tile_scheduler.cuh): the CTAs placed
    first on their SMs (warp 0 in the SM's first slots) against the others,
    their passes, their pace (first issue to end, ns a pass) and their end."""
    cs = [c for c in ends_by_cta if c in placement]
    if not cs:
        return
    cut = 12  # the kernel's rule: warp 0 (the producer warp, which marks it) below the CTA's 12 warps
    groups = {"first placed": [c for c in cs if placement[c][0] < cut], "placed second": [c for c in cs if placement[c][0] >= cut]}
    med = lambda x: sorted(x)[len(x) // 2] if x else float("nan")
    print("by placement (warp slot below %d: first placed):" % cut)
    for name, g in groups.items():
        idx = [placement[c][1] for c in g]
        pace = [(ends_by_cta[c][1] - ends_by_cta[c][3]) / max(1, ends_by_cta[c][2]) for c in g]
        print("  %-13s %3d CTAs, share index %d-%d; passes median %d (%d-%d); ns a pass median %.0f; end µs median %.2f, max %.2f"
              % (name, len(g), min(idx, default=-1), max(idx, default=-1), med([ends_by_cta[c][2] for c in g]),
                 min((ends_by_cta[c][2] for c in g), default=0), max((ends_by_cta[c][2] for c in g), default=0),
                 med(pace), med([(ends_by_cta[c][1] - t0) / 1000 for c in g]), max(((ends_by_cta[c][1] - t0) / 1000 for c in g), default=0)))


def is_watcher(ev):
    return any(k == 20 for k, _, _ in ev)


def watcher_clock_to_ns(w):
    """A CTA's clock64 values on the grid's common time (ns), from its
    watcher row's kernel-start clock and global times at its start and end."""
    c0 = next(v for k, _, v in w if k == 15)
    n0 = next(v for k, a, v in w if k == 17 and a == 0)
    c1 = next(v for k, _, v in w if k == 25)
    n1 = next(v for k, a, v in w if k == 17 and a == 1)
    rate = (c1 - c0) / max(1, n1 - n0)  # cycles a ns
    return n0, lambda clk: n0 + (clk - c0) / rate


def chain(ctas, actors, rows):
    """Traces with the gather watcher (every fill of every stage, since stop
    57): each stage fill from its issue to its landing to its consumer's
    first look, and each CTA's timeline on the grid's common time."""
    lat, sat, waited, inflight, full_idle, spans = [], [], [], [], [], []
    timeline = defaultdict(list)  # what: µs since the grid's first start, one a CTA
    ends_by_cta = {}  # cta: (SM, consumers' end, own passes, first issue, own passes' starts), in ns
    first_marks = defaultdict(list)  # (n, mark): cycles since the previous mark (the prologue's end for the first)
    starts = {}
    placement = {}  # cta: (the producer warp's slot, its share index), where the kernel marked them
    for c in range(ctas):
        w = next((rows[(c, a)] for a in range(1, actors) if (c, a) in rows and is_watcher(rows[(c, a)])), None)
        pev = rows.get((c, 0), [])
        if not w or not pev:
            continue
        n0, to_ns = watcher_clock_to_ns(w)
        starts[c] = (n0, to_ns)
        fills = defaultdict(list)
        for k, a, v in w:
            if k == 20:
                fills[a].append(v)
        issues = defaultdict(list)
        for k, a, v in pev:
            if k == 10:
                issues[a].append(v)
        cons = [e for a in range(1, actors) for e in [rows.get((c, a), [])] if e and not is_watcher(e)]
        tops = defaultdict(list)  # stage: (wait start, got) of its consumer, in order
        for e in cons:
            for (k0, a0, t0), (k1, _, t1) in zip(e, e[1:]):
                if k0 == 1 and k1 in (2, 6):
                    tops[a0].append((t0, t1))
        first_issue = min((v[0] for v in issues.values() if v), default=None)
        landed_all = [v for f in fills.values() for v in f]
        ends = [e[-1][2] for e in cons]
        if first_issue is None or not landed_all or not ends:
            continue
        span = max(ends) - first_issue
        spans.append(span)
        lat_sum = idle_sum = 0
        for s, iss in issues.items():
            for j, ti in enumerate(iss):
                if j >= len(fills[s]):
                    break
                tl = fills[s][j]
                lat.append(tl - ti)
                lat_sum += tl - ti
                if j < len(tops[s]):
                    tw, tg = tops[s][j]
                    if tw > tl:
                        sat.append(tw - tl)
                        idle_sum += tw - tl
                    else:
                        waited.append(tg - tw)
        inflight.append(lat_sum / span)
        full_idle.append(idle_sum / span)
        pro = next(v for k, _, v in w if k == 16)
        timeline["prologue done"].append(to_ns(pro))
        own = [v for k, _, v in pev if k == 16]  # the producer warp's own reading, where marked
        if own:
            timeline["producer's prologue"].append(to_ns(own[0]))
        # The producer's first two stages, mark by mark, from the prologue's end.
        marks = [(k, a, v) for k, a, v in pev if k in (8, 9, 24, 10, 18, 19, 26)][:17]
        prev = pro
        for n, (k, a, v) in enumerate(marks):
            first_marks[(n, NAMES[k] + ("" if k != 24 else " %d" % a))].append(v - prev)
            prev = v
        roles = [v for e in cons for k, _, v in e if k == 18]
        if roles:
            timeline["consumers' role"].append(to_ns(max(roles)))
        timeline["first issue"].append(to_ns(first_issue))
        timeline["first landing"].append(to_ns(min(landed_all)))
        timeline["last landing"].append(to_ns(max(landed_all)))
        timeline["consumers done"].append(to_ns(max(ends)))
        sm = next(a for k, a, _ in w if k == 15)
        share = next(((a, v) for k, a, v in pev if k == 27), None)
        if share is not None:
            placement[c] = share
        own_passes = sum(1 for e in cons for k, a, _ in e if k == 2 and a != 0)
        ends_by_cta[c] = (sm, to_ns(max(ends)), own_passes, to_ns(first_issue),
                          sorted(to_ns(v) for e in cons for k, a, v in e if k == 2 and a != 0))
    if not starts:
        return
    t0 = min(n for n, _ in starts.values())
    print("timeline (µs after the grid's first CTA start; median, p10, p90, max over %d CTAs):" % len(starts))
    for what, v in [("start", [n for n, _ in starts.values()])] + list(timeline.items()):
        v = sorted((x - t0) / 1000 for x in v)
        q = lambda f: v[min(len(v) - 1, int(f * len(v)))]
        print("  %-15s %7.2f %7.2f %7.2f %7.2f" % (what, q(0.5), q(0.1), q(0.9), v[-1]))
    print("the producer's first stages, cycles since the previous mark (the first: since the prologue's end):")
    for (n, what), v in sorted(first_marks.items()):
        print("  %2d %-16s" % (n, what), quantiles(v))
    tail(ends_by_cta, t0)
    by_placement(ends_by_cta, placement, t0)
    print("a stage fill: issue to landing, cycles:", quantiles(lat))
    print("  landed before its consumer looked (%d of %d): full for" % (len(sat), len(sat) + len(waited)), quantiles(sat))
    print("  its consumer already waiting (%d): waited" % len(waited), quantiles(waited))
    print("a CTA's stages in flight (issued, not landed), mean over its span:", quantiles([int(100 * x) for x in inflight]), "(x100)")
    print("a CTA's stages full and not yet looked at, mean:", quantiles([int(100 * x) for x in full_idle]), "(x100)")


if __name__ == "__main__":
    main()
