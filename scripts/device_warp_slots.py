#!/usr/bin/env python3
# Where a CTA's warps sit on the lent GPU machine: %smid and %warpid (the
# warp's slot; its scheduler is slot % 4) of every warp of a grid of 264 CTAs
# x 384 threads with 100 KB of dynamic shared memory each (two CTAs an SM,
# as the 8-token gather tiles). Uses the device's CuPy (a diagnosis aid
# there, not a dependency of the project). docs/PERF.md stop 58 has what it
# found on an H200. Usage: python3 scripts/device_warp_slots.py
import cupy as cp, collections
src = r'''
extern "C" __global__ void slots(int* out) {
  extern __shared__ char pad[];
  unsigned smid, wid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  asm volatile("mov.u32 %0, %%warpid;" : "=r"(wid));
  if (threadIdx.x % 32 == 0) {
    int w = threadIdx.x / 32;
    int* o = out + (blockIdx.x * 12 + w) * 3;
    o[0] = smid; o[1] = wid; o[2] = w;
  }
  if (threadIdx.x == 0) pad[0] = 1;
  long long t0 = clock64(); while (clock64() - t0 < 200000) {}
}'''
k = cp.RawKernel(src, "slots")
k.max_dynamic_shared_size_bytes = 100 * 1024
out = cp.zeros(264 * 12 * 3, dtype=cp.int32)
k((264,), (384,), (out,), shared_mem=100 * 1024)
cp.cuda.Device().synchronize()
o = out.get().reshape(264, 12, 3)
by_sm = collections.defaultdict(list)
for c in range(264):
    by_sm[int(o[c, 0, 0])].append(c)
print("SMs used", len(by_sm), "CTAs an SM", collections.Counter(len(v) for v in by_sm.values()))
pairs = collections.Counter()
base = collections.Counter()
same_half = 0
for sm, cs in sorted(by_sm.items()):
    for c in cs:
        base[int(o[c, 0, 1])] += 1
        mods = tuple((int(o[c, w, 1]) - int(o[c, 0, 1])) for w in range(12))
        pairs[mods] += 1
    if len(cs) == 2 and (cs[0] < 132) == (cs[1] < 132):
        same_half += 1
print("warp 0's %warpid (count):", sorted(base.items()))
print("warp w's %warpid minus warp 0's:", pairs.most_common(3))
print("SMs whose two CTAs lie in the same half of the grid:", same_half)
print("examples:", [(sm, cs, [int(o[c, 0, 1]) for c in cs]) for sm, cs in sorted(by_sm.items())[:6]])
