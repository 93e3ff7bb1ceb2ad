"""Timing probe (docs/PERF.md stop 45): fp4_gemm_nt on the 128 x 256 tile's
tactics (two-CTA clusters, one CTA, one CTA on stream-K), taken in turns with
a pause before each, so the board's power cap treats every tactic alike
(`fp4moe sweep` times them back to back, and the later ones run throttled).

Runs on the GPU machine with the package from python/ and a host-built
libfp4moe_c.so (scripts/device_python_prepare.sh):
  FP4MOE_LIBRARY=build/src/capi/libfp4moe_c.so PYTHONPATH=python python3 tools/probes/dense_tactics.py
"""
import statistics

import torch

import fp4moe
from fp4moe.tactics import GemmTactic

SHAPES = [(8192, 8192, 8192), (8448, 7680, 8192)]  # (M, N, K): 15.52 and 15.00 waves of tiles
TACTICS = {
    "cluster2 sk1": GemmTactic(False, 256, 128, 3, 1, cluster=2),
    "direct sk1": GemmTactic(False, 256, 128, 3, 1),
    "direct streamK": GemmTactic(False, 256, 128, 3, 0),
}
ROUNDS, REPS = 4, 8


def main():
    torch.manual_seed(0)
    print(f"{torch.cuda.get_device_name(0)}; median of {ROUNDS * REPS} (CUDA events around each call), "
          f"{ROUNDS} rounds taking the tactics in turn")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for fmt, quantize in (("nvfp4", fp4moe.quantize_nvfp4), ("mxfp4", fp4moe.quantize_mxfp4)):
        for m, n, k in SHAPES:
            a = quantize(torch.randn(m, k, device="cuda", dtype=torch.bfloat16))
            b = quantize(torch.randn(n, k, device="cuda", dtype=torch.bfloat16))
            out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
            ref = fp4moe.fp4_gemm_nt(a, b, tactic=TACTICS["cluster2 sk1"]).float()
            tactics = {}
            for name, tactic in TACTICS.items():  # (a build without stream-K on this tile refuses it)
                try:
                    fp4moe.fp4_gemm_nt(a, b, out=out, tactic=tactic)
                    tactics[name] = tactic
                except fp4moe.Fp4moeError as e:
                    print(f"{fmt} {m}x{n}x{k} {name}: refused ({e})")
            times = {name: [] for name in tactics}
            diff = {}  # largest |difference| from cluster2 sk1's output, relative to its largest |value|
            for _ in range(ROUNDS):
                for name, tactic in tactics.items():
                    fp4moe.fp4_gemm_nt(a, b, out=out, tactic=tactic)
                    torch.cuda.synchronize()
                    diff[name] = ((out.float() - ref).abs().max() / ref.abs().max()).item()
                    torch.cuda._sleep(200_000_000)  # ~100 ms idle: the board's power cap
                    for _ in range(REPS):
                        start.record()
                        fp4moe.fp4_gemm_nt(a, b, out=out, tactic=tactic)
                        end.record()
                        torch.cuda.synchronize()
                        times[name].append(start.elapsed_time(end) * 1000.0)
            base = statistics.median(times["cluster2 sk1"])
            row = ", ".join(f"{name} {statistics.median(v):.1f} µs ({statistics.median(v) / base:.3f}, diff {diff[name]:.1e})"
                            for name, v in times.items())
            print(f"{fmt} {m}x{n}x{k}: {row}")


if __name__ == "__main__":
    main()
