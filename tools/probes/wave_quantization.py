"""Timing probe (docs/PERF.md stop 45): what the last, partial wave of output
tiles costs the 128 x 256 prefill/dense tile. fp4_gemm_nt (NVFP4, the
heuristic's tactic) on shapes whose tile counts fall just under, on and just
over whole waves of the GPU's SMs; if a CTA's tiles, not the FLOPs, set the
time, time / ceil(tiles / SMs) is the same on every row.

Runs on the GPU machine with the package from python/ and a host-built
libfp4moe_c.so (scripts/device_python_prepare.sh):
  FP4MOE_LIBRARY=build/src/capi/libfp4moe_c.so PYTHONPATH=python python3 tools/probes/wave_quantization.py
"""
import math
import statistics

import torch

import fp4moe

K = 8192
SHAPES = [(8192, 8192), (8448, 7680), (8448, 8192), (8192, 7680), (7936, 8192)]  # (M, N)
ROUNDS, REPS = 3, 10


def main():
    torch.manual_seed(0)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    cases = []
    for m, n in SHAPES:
        am = fp4moe.quantize_nvfp4(torch.randn(m, K, device="cuda", dtype=torch.bfloat16))
        bn = fp4moe.quantize_nvfp4(torch.randn(n, K, device="cuda", dtype=torch.bfloat16))
        out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        cases.append((m, n, am, bn, out))
    times = {(m, n): [] for m, n, *_ in cases}
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(ROUNDS):
        for m, n, am, bn, out in cases:
            for _ in range(3):
                fp4moe.fp4_gemm_nt(am, bn, out=out)
            torch.cuda.synchronize()
            torch.cuda._sleep(50_000_000)  # ~25 ms idle before each shape: the board's power cap
            for _ in range(REPS):
                start.record()
                fp4moe.fp4_gemm_nt(am, bn, out=out)
                end.record()
                torch.cuda.synchronize()
                times[(m, n)].append(start.elapsed_time(end) * 1000.0)
    base = None
    print(f"{torch.cuda.get_device_name(0)}, {sms} SMs, K = {K}, NVFP4, BF16 out; median of {ROUNDS * REPS}")
    print("| M x N | tiles (128 x 256) | waves | µs | µs / whole wave | TFLOP/s |")
    print("|---|---:|---:|---:|---:|---:|")
    for m, n, *_ in cases:
        tiles = math.ceil(m / 128) * math.ceil(n / 256)
        waves = math.ceil(tiles / sms)
        t = statistics.median(times[(m, n)])
        print(f"| {m} x {n} | {tiles} | {tiles / sms:.2f} -> {waves} | {t:.1f} | {t / waves:.1f} | {2 * m * n * K / t / 1e6:.0f} |")


if __name__ == "__main__":
    main()
