#!/usr/bin/env python3
"""What a gather pass costs, by its tokens, from a pipeline trace (a build
with -DFP4MOE_PIPELINE_TRACE=ON; since stop 61 the consumers' pass_got mark
carries the pass's tokens, 255 for a padding pass): the stream-K shares of
the 8-token gather tiles weigh every pass the same (stream_k.hpp,
kGatherPassCost), so if a pass of eight tokens costs a consumer more than
a pass of one, the shares are uneven in time.

Prints, per token count, the consumer's cycles from its pass's stage full
to the next pass's wait (conversion and MMAs, the hand-over wait, the
addition, the walk on) and their parts; per CTA, its passes, tokens and
epilogues against its consumers' busy time and its end, with a least-squares
fit of the busy time; and writes both tables as CSV next to the trace
(<trace>.passes.csv, <trace>.ctas.csv).

Usage: scripts/gather_pass_costs.py TRACE.bin
"""
import csv
import sys
from collections import defaultdict

from pipeline_trace import is_watcher, read, watcher_clock_to_ns

PASS_WAIT, PASS_GOT, MMA_DONE, ORDER_GOT, ADDED, TILE_END, STORED = 1, 2, 3, 4, 5, 6, 7
SHARE = 27
ARRIVED, REDUCED, EPI_LAPPED, PARTIAL_STORED = 13, 14, 28, 29
EPI_STEPS = {EPI_LAPPED: "first hand-over", PARTIAL_STORED: "partial stored", ARRIVED: "arrival",
             REDUCED: "slots added and stored", STORED: "last hand-over"}


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if v else float("nan")


def solve(rows, ys):
    """Least squares y ~ rows · x (normal equations, Gaussian elimination)."""
    n = len(rows[0])
    a = [[sum(r[i] * r[j] for r in rows) for j in range(n)] for i in range(n)]
    for i in range(n):  # (a little ridge: columns that do not vary, e.g. one epilogue a CTA, stay solvable)
        a[i][i] += 1e-9 * a[i][i] + 1e-12
    b = [sum(r[i] * y for r, y in zip(rows, ys)) for i in range(n)]
    for i in range(n):
        p = max(range(i, n), key=lambda k: abs(a[k][i]))
        a[i], a[p], b[i], b[p] = a[p], a[i], b[p], b[i]
        for k in range(i + 1, n):
            f = a[k][i] / a[i][i]
            for j in range(i, n):
                a[k][j] -= f * a[i][j]
            b[k] -= f * b[i]
    x = [0.0] * n
    for i in reversed(range(n)):
        x[i] = (b[i] - sum(a[i][j] * x[j] for j in range(i + 1, n))) / a[i][i]
    return x


def main():
    path = sys.argv[1]
    ctas, actors, rows = read(path)
    passes = []  # (cta, actor, tokens, mma, order, add, walk)
    per_cta = {}
    for c in range(ctas):
        w = next((rows[(c, a)] for a in range(1, actors) if (c, a) in rows and is_watcher(rows[(c, a)])), None)
        cons = [(a, rows[(c, a)]) for a in range(1, actors) if (c, a) in rows and not is_watcher(rows[(c, a)])]
        if not cons:
            continue
        to_ns = watcher_clock_to_ns(w)[1] if w else None
        busy = defaultdict(int)
        n_pass = n_tok = n_epi = 0
        epi = 0
        end = 0
        for a, ev in cons:
            ev = [e for e in ev if e[0] in (PASS_WAIT, PASS_GOT, MMA_DONE, ORDER_GOT, ADDED, TILE_END, STORED)]
            for i, (k, arg, t) in enumerate(ev):
                if k == PASS_GOT and arg not in (0, 255) and i + 4 < len(ev):
                    k3, k4, k5 = ev[i + 1][0], ev[i + 2][0], ev[i + 3][0]
                    if (k3, k4, k5) != (MMA_DONE, ORDER_GOT, ADDED):
                        continue
                    t3, t4, t5, t6 = ev[i + 1][2], ev[i + 2][2], ev[i + 3][2], ev[i + 4][2]
                    passes.append((c, a, arg, t3 - t, t4 - t3, t5 - t4, t6 - t5))
                    busy[a] += (t3 - t) + (t5 - t4) + (t6 - t5)
                    n_pass += 1
                    n_tok += arg
                elif k == TILE_END and i + 1 < len(ev) and ev[i + 1][0] == STORED:
                    epi += ev[i + 1][2] - t
                    busy[a] += ev[i + 1][2] - t
                    n_epi += 1
            end = max(end, ev[-1][2]) if ev else end
        share = next((v for k, _, v in rows.get((c, 0), []) if k == SHARE), -1)
        slot = next((a for k, a, _ in rows.get((c, 0), []) if k == SHARE), -1)
        per_cta[c] = dict(passes=n_pass, tokens=n_tok, epilogues=n_epi, busy=max(busy.values()) if busy else 0,
                      busy_sum=sum(busy.values()), epi=epi, end_ns=to_ns(end) if to_ns else float("nan"),
                      share=share, slot=slot)
    # The epilogue's steps (traces since stop 61), by kind of work item:
    # alone on its tile, a contributor that arrived before the last, the last.
    steps = defaultdict(lambda: defaultdict(list))
    for (c, a), ev in rows.items():
        if a == 0 or is_watcher(ev):
            continue
        for i, (k, arg, t) in enumerate(ev):
            if k != TILE_END:
                continue
            marks, prev, kind = [], t, "alone"
            for k2, a2, t2 in ev[i + 1:]:
                if k2 in EPI_STEPS:
                    marks.append((k2, t2 - prev))
                    prev = t2
                    if k2 == ARRIVED:
                        kind = "last" if a2 else "not last"
                if k2 == STORED:
                    break
            for k2, d in marks:
                steps[kind][k2].append(d)
            steps[kind]["total"].append(prev - t)
    if steps:
        print("the epilogue's steps (cycles, median; a warpgroup's, from the tile-end header):")
        for kind in ("alone", "not last", "last"):
            if kind in steps:
                st = steps[kind]
                print("  %-9s n %5d, total %6d:" % (kind, len(st["total"]), median(st["total"])),
                      ", ".join("%s %d" % (EPI_STEPS[k], median(st[k])) for k in EPI_STEPS if k in st))
    by_tok = defaultdict(list)
    for p in passes:
        by_tok[p[2]].append(p)
    print("a pass by its tokens (cycles, median): n, stage full to MMAs landed, hand-over wait, addition, walk to the next wait, busy (all but the wait)")
    for t in sorted(by_tok):
        v = by_tok[t]
        print("  %3d tokens: %6d  %6d %6d %6d %6d  %6d" % (t, len(v), median([p[3] for p in v]), median([p[4] for p in v]),
                                                       median([p[5] for p in v]), median([p[6] for p in v]),
                                                       median([p[3] + p[5] + p[6] for p in v])))
    cs = sorted(per_cta)
    if cs:
        fit_rows = [[1.0, per_cta[c]["passes"], per_cta[c]["tokens"], per_cta[c]["epilogues"]] for c in cs]
        ys = [float(per_cta[c]["busy_sum"]) for c in cs]
        x = solve(fit_rows, ys)
        res = [y - sum(a * b for a, b in zip(r, x)) for r, y in zip(fit_rows, ys)]
        mean_y = sum(ys) / len(ys)
        ss = sum((y - mean_y) ** 2 for y in ys)
        r2 = 1 - sum(e * e for e in res) / ss if ss else float("nan")
        print("a CTA's consumers' busy cycles (sum over its warpgroups) ~ %.0f + %.0f a pass + %.0f a token + %.0f an epilogue (R^2 %.3f, %d CTAs)"
              % (x[0], x[1], x[2], x[3], r2, len(cs)))
        t0 = min(per_cta[c]["end_ns"] for c in cs)
        ends = sorted(per_cta[c]["end_ns"] for c in cs)
        print("CTAs' ends, µs after the first: median %.2f, p90 %.2f, max %.2f" %
              ((ends[len(ends) // 2] - t0) / 1000, (ends[int(0.9 * len(ends))] - t0) / 1000, (ends[-1] - t0) / 1000))
        for name, g in (("first placed", [c for c in cs if 0 <= per_cta[c]["slot"] < 12]),
                        ("placed second", [c for c in cs if per_cta[c]["slot"] >= 12])):
            if g:
                print("  %-13s %3d CTAs: passes median %d, tokens median %d, busy Mcycles median %.3f"
                      % (name, len(g), median([per_cta[c]["passes"] for c in g]), median([per_cta[c]["tokens"] for c in g]),
                         median([per_cta[c]["busy_sum"] for c in g]) / 1e6))
    with open(path + ".passes.csv", "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["cta", "actor", "tokens", "mma", "order", "add", "walk"])
        wr.writerows(passes)
    with open(path + ".ctas.csv", "w", newline="") as f:
        wr = csv.writer(f)
        keys = ["passes", "tokens", "epilogues", "busy", "busy_sum", "epi", "end_ns", "share", "slot"]
        wr.writerow(["cta"] + keys)
        for c in cs:
            wr.writerow([c] + [per_cta[c][k] for k in keys])


if __name__ == "__main__":
    main()
