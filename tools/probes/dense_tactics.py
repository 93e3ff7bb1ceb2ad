"""Timing probe (docs/PERF.md stops 45-46): the 128 x 256 tile's tactics
(two-CTA clusters and one CTA, each whole tiles and stream-K) on fp4_gemm_nt
and the contiguous layout, taken in turns with a pause before each, so the
board's power cap treats every tactic alike (`fp4moe sweep` times them back
to back, and the later ones run throttled).

Runs on the GPU machine with the package from python/ and a host-built
libfp4moe_c.so (scripts/device_python_prepare.sh):
  FP4MOE_LIBRARY=build/src/capi/libfp4moe_c.so PYTHONPATH=python python3 tools/probes/dense_tactics.py [more]
"""
import statistics
import sys

import torch

import fp4moe
from fp4moe.tactics import GemmTactic

# (name, M or expert rows, N, K): dense 15.52, 15.00 and 3.88 waves of tiles;
# the prefill suite's contiguous G4 (31.03 waves) and G8 (6.79).
CASES = [
    ("dense", 8192, 8192, 8192),
    ("dense", 8448, 7680, 8192),
    ("dense", 4096, 4096, 7168),
    ("G4", [8192] * 4, 4096, 7168),
    ("G8", [512] * 8, 7168, 2048),
]
# `more` (the first argument): the dense suite's 4096x7168x16384 (6.79
# waves, 128 K blocks a tile), 2048x7168x16384 (3.39), 4096x4096x7168
# again, the prefill suite's G8 (54.3 waves, 16 K blocks) and 8192³ again.
MORE_CASES = [
    ("dense", 4096, 7168, 16384),
    ("dense", 2048, 7168, 16384),
    ("dense", 4096, 4096, 7168),
    ("G8", [4096] * 8, 7168, 2048),
    ("dense", 8192, 8192, 8192),
]
TACTICS = {
    "cluster2 sk1": GemmTactic(False, 256, 128, 3, 1, cluster=2),
    "cluster2 streamK": GemmTactic(False, 256, 128, 3, 0, cluster=2),
    "direct sk1": GemmTactic(False, 256, 128, 3, 1),
    "direct streamK": GemmTactic(False, 256, 128, 3, 0),
}
ROUNDS, REPS = 4, 8


def case_call(fmt, quantize, name, rows, n, k):
    """A closure running the case with a tactic into one output."""
    if name == "dense":
        a = quantize(torch.randn(rows, k, device="cuda", dtype=torch.bfloat16))
        b = quantize(torch.randn(n, k, device="cuda", dtype=torch.bfloat16))
        out = torch.empty(rows, n, device="cuda", dtype=torch.bfloat16)
        return lambda tactic: fp4moe.fp4_gemm_nt(a, b, out=out, tactic=tactic), out
    total = sum(rows)
    a = quantize(torch.randn(total, k, device="cuda", dtype=torch.bfloat16))
    b = quantize(torch.randn(len(rows), n, k, device="cuda", dtype=torch.bfloat16))
    ids = torch.cat([torch.full((r,), e, dtype=torch.int32) for e, r in enumerate(rows)]).cuda()
    out = torch.empty(total, n, device="cuda", dtype=torch.bfloat16)
    return lambda tactic: fp4moe.m_grouped_fp4_gemm_nt_contiguous(a, b, ids, out=out, tactic=tactic), out


def main():
    torch.manual_seed(0)
    print(f"{torch.cuda.get_device_name(0)}; median of {ROUNDS * REPS} (CUDA events around each call), "
          f"{ROUNDS} rounds taking the tactics in turn")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for fmt, quantize in (("nvfp4", fp4moe.quantize_nvfp4), ("mxfp4", fp4moe.quantize_mxfp4)):
        for name, rows, n, k in MORE_CASES if sys.argv[1:] == ["more"] else CASES:
            label = f"{fmt} {name} {rows if name == 'dense' else rows[0]}x{n}x{k}"
            run, out = case_call(fmt, quantize, name, rows, n, k)
            run(TACTICS["cluster2 sk1"])
            ref = out.float().clone()
            tactics = {}
            for t_name, tactic in TACTICS.items():  # (a build without stream-K on this tile refuses it)
                try:
                    run(tactic)
                    tactics[t_name] = tactic
                except fp4moe.Fp4moeError as e:
                    print(f"{label} {t_name}: refused ({e})")
            times = {t_name: [] for t_name in tactics}
            diff = {}  # largest |difference| from cluster2 sk1's output, relative to its largest |value|
            for _ in range(ROUNDS):
                for t_name, tactic in tactics.items():
                    out.fill_(float("nan"))
                    run(tactic)
                    torch.cuda.synchronize()
                    diff[t_name] = ((out.float() - ref).abs().max() / ref.abs().max()).item()
                    torch.cuda._sleep(200_000_000)  # ~100 ms idle: the board's power cap
                    for _ in range(REPS):
                        start.record()
                        run(tactic)
                        end.record()
                        torch.cuda.synchronize()
                        times[t_name].append(start.elapsed_time(end) * 1000.0)
            base = statistics.median(times["cluster2 sk1"])
            row = ", ".join(f"{t_name} {statistics.median(v):.1f} µs ({statistics.median(v) / base:.3f}, diff {diff[t_name]:.1e})"
                            for t_name, v in times.items())
            print(f"{label}: {row}", flush=True)


if __name__ == "__main__":
    main()
