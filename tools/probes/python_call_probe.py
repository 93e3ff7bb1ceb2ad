"""Python call probe (not a product tool): the host time of an eager call
through the Python package, against torch's own eager matmul of the same
shape in BF16, and where the package's time goes (cProfile, by own time).
Calls go in batches of 256 with a synchronisation between batches, so the
launch queue never fills and the time is the host's, not the GPU's.
Run on the GPU machine, from the repository root:
  PYTHONPATH=python FP4MOE_LIBRARY=build/src/capi/libfp4moe_c.so \\
      python3 tools/probes/python_call_probe.py
"""

import cProfile
import io
import pstats
import statistics
import time

import torch

import fp4moe


def us_per_call(f, batches=21, batch=256):
    times = []
    for i in range(batches):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(batch):
            f()
        t1 = time.perf_counter()
        if i:
            times.append((t1 - t0) / batch * 1e6)
    torch.cuda.synchronize()
    return statistics.median(times)


def main():
    torch.manual_seed(20261129)
    m, n, k = 8, 128, 256
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    a, b = fp4moe.quantize_nvfp4(x), fp4moe.quantize_nvfp4(w)
    out = torch.empty(m, n, device="cuda", dtype=torch.float32)
    out16 = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    wt = w.t()
    dev = x.device
    rows = [
        ("torch.cuda.current_stream(d).cuda_stream", lambda: torch.cuda.current_stream(dev).cuda_stream),
        ("torch._C._cuda_getCurrentRawStream(i)", lambda: torch._C._cuda_getCurrentRawStream(dev.index)),
        ("torch.matmul BF16 (out=)", lambda: torch.matmul(x, wt, out=out16)),
        ("fp4moe.fp4_gemm_nt (out=)", lambda: fp4moe.fp4_gemm_nt(a, b, out=out)),
        ("fp4moe.fp4_gemm_nt (allocating)", lambda: fp4moe.fp4_gemm_nt(a, b, out_dtype=torch.float32)),
    ]
    print(f"host us a call, NVFP4 {m} x {n} x {k} (median of 20 batches of 256)")
    for name, f in rows:
        f()
        print(f"  {name:<42} {us_per_call(f):8.2f}")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(2000):
        fp4moe.fp4_gemm_nt(a, b, out=out)
    prof.disable()
    torch.cuda.synchronize()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(18)
    print(text.getvalue())


if __name__ == "__main__":
    main()
