// ptx::named_barrier_or (kernels/sm90/ptx/memory.cuh): 256 of a CTA's 384
// threads (the consumer warpgroups; the first 128 stay out, as the producer
// does) meet on a named barrier several times in a row, with the predicate
// set in no thread, in one chosen thread or in all; every participant must
// get the OR, and each round's answer must not leak into the next.
//
// SharedAccumulatorHandOver: the gather layout's synchronisation alone
// (fp4_gemm_kernel.cuh, gather_accumulator.cuh), without TMA or wgmma: the
// two consumer warpgroups add passes in turn into a shared accumulator
// (handed over on mbarriers), all 256 meet on named barrier 5, read and zero
// the accumulator, and (optionally) run the split-K arrival's bar.sync /
// bar.red.or / bar.sync; GemmLike adds what else the GEMM has: the
// accumulator in dynamic shared memory past 100 KB, setmaxnreg, two CTAs
// per SM (264 of them), and a producer warp that stays alive, handing each
// pass's "stage" over on a two-slot full / empty mbarrier ring;
// GemmLikeWithWarpgroupBarriers adds the dequantisation's per-warpgroup
// named barriers (1-4, 128 threads each) and its proxy fence in every pass. Its values are checked here; under
// compute-sanitizer racecheck it tells whether reports on the GEMM's gather
// tiles come from the code or from how the tool follows these barriers.
//
// AtomAddAcqRel: ptx::atom_add_acq_rel_gpu in the split-K arrival's pattern
// across CTAs (one thread's add publishes its CTA's partial).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/sm90/ptx/memory.cuh"
#include "support/test_support.hpp"

namespace fp4moe::ptx {
namespace {

constexpr int kRounds = 6;
constexpr int kParticipants = 256;

/// Round r: thread `setter[r]` (a participant index; -1 none, 256 all)
/// passes true. out[r * 256 + i]: what participant i got.
__global__ void barrier_or_kernel(const int* setter, int* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (threadIdx.x < 128) return;
  const int i = threadIdx.x - 128;
  for (int r = 0; r < kRounds; ++r) {
    const bool mine = setter[r] == kParticipants || setter[r] == i;
    out[r * kParticipants + i] = named_barrier_or(3, kParticipants, mine) ? 1 : 0;
  }
#endif
}

TEST(NamedBarrierOr, EveryParticipantGetsTheOrOfItsRound) {
  FP4MOE_REQUIRE_GPU();
  const std::vector<int> setter = {-1, 0, 255, -1, 131, kParticipants};
  test::DeviceBuffer<int> ds(setter.size()), dout(kRounds * kParticipants);
  ds.upload(setter);
  dout.fill_bytes(0xff);
  barrier_or_kernel<<<1, 384>>>(ds.get(), dout.get());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<int> got = dout.download();
  for (int r = 0; r < kRounds; ++r)
    for (int i = 0; i < kParticipants; ++i)
      ASSERT_EQ(got[r * kParticipants + i], setter[r] >= 0 ? 1 : 0) << "round " << r << ", participant " << i;
}

constexpr int kItems = 4, kPasses = 5, kCells = 64 * 8;

/// Item it, pass q adds (q + 1) * (it + 1) to every cell of its 8 columns;
/// out[it * kCells + c]: the cell after the item's passes.
constexpr int kGemmLikeAccOffset = 100 * 1024;

template <bool kBarrierOr, bool kGemmLike, bool kWarpgroupBarriers = false>
__global__ void __launch_bounds__(384, kGemmLike ? 2 : 1) hand_over_kernel(float* out, int* arrivals) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(16) std::uint8_t dyn[];
  __shared__ float static_acc[kCells];
  __shared__ __align__(8) std::uint64_t order[2], full[2], empty[2];
  __shared__ float scratch[2][128];  // kWarpgroupBarriers: each warpgroup's own buffer
  float* acc = kGemmLike ? reinterpret_cast<float*>(dyn + kGemmLikeAccOffset) : static_acc;
  out += std::int64_t(blockIdx.x) * kItems * kCells;
  arrivals += blockIdx.x;
  if (threadIdx.x < 2) {
    mbar_init(&order[threadIdx.x], 128);
    mbar_init(&full[threadIdx.x], 1);
    mbar_init(&empty[threadIdx.x], 256);
  }
  for (int i = threadIdx.x; i < kCells; i += blockDim.x) acc[i] = 0.0f;
  __syncthreads();
  if (threadIdx.x < 128) {  // the producer warpgroup leaves (GemmLike: its first thread after the ring)
    if constexpr (kGemmLike) {
      setmaxnreg_dec<40>();
      if (threadIdx.x == 0) {
        for (int it = 0; it < kItems * kPasses; ++it) {
          mbar_wait(&empty[it % 2], ((it / 2) & 1) ^ 1);
          mbar_arrive(&full[it % 2]);
        }
      }
    }
    return;
  }
  if constexpr (kGemmLike) setmaxnreg_inc<96>();
  const int ctid = threadIdx.x - 128, wg = ctid / 128, t = ctid % 128;
  std::uint32_t waits = 0;
  if (wg == 1) mbar_arrive(&order[0]);
  for (int it = 0, pass = 0; it < kItems; ++it) {
    for (int q = 0; q < kPasses; ++q, ++pass) {
      if constexpr (kGemmLike) mbar_wait(&full[pass % 2], (pass / 2) & 1);
      if constexpr (kWarpgroupBarriers) {
        // As the gather tile's dequantisation: each warpgroup meets on its
        // own pair of named barriers (1, 2 / 3, 4; 128 threads) around a
        // buffer only it uses; a thread reads what another one wrote.
        named_barrier(1 + 2 * wg, 128);
        scratch[wg][t] = float(pass + t);
        fence_proxy_async_smem();  // as before the dequantised tile goes to wgmma
        named_barrier(2 + 2 * wg, 128);
        if (scratch[wg][(t + 1) % 128] != float(pass + (t + 1) % 128)) acc[t] = -1.0f;  // would break the sums
      }
      if (pass % 2 == wg) {
        mbar_wait(&order[wg], waits++ & 1);
        for (int c = t; c < kCells; c += 128) acc[c] += float((q + 1) * (it + 1));  // gather_add_pass
        mbar_arrive(&order[(wg + 1) % 2]);
      }
      if constexpr (kGemmLike) mbar_arrive(&empty[pass % 2]);
    }
    named_barrier(5, 256);  // every pass added
    for (int c = ctid; c < kCells; c += 256) {  // gather_store_tile
      out[it * kCells + c] = acc[c];
      acc[c] = 0.0f;
    }
    if constexpr (kBarrierOr) {  // split_k_arrived_last
      named_barrier(5, 256);
      bool last = false;
      if (ctid == 0) last = atom_add_acq_rel_gpu(arrivals, 1) % 2 == 1;
      if (!named_barrier_or(5, 256, last)) {
        named_barrier(5, 256);
        continue;
      }
    }
    named_barrier(5, 256);  // zeroed before the next item's first addition
  }
#endif
}

template <bool kBarrierOr, bool kGemmLike = false, bool kWarpgroupBarriers = false>
void check_hand_over() {
  const int blocks = kGemmLike ? 264 : 1;
  const int smem = kGemmLike ? kGemmLikeAccOffset + 4 * kCells : 0;
  const auto kernel = hand_over_kernel<kBarrierOr, kGemmLike, kWarpgroupBarriers>;
  if (kGemmLike) ASSERT_EQ(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem), cudaSuccess);
  test::DeviceBuffer<float> dout(std::size_t(blocks) * kItems * kCells);
  test::DeviceBuffer<int> darr(blocks);
  dout.fill_bytes(0xff);
  darr.fill_bytes(0);
  kernel<<<blocks, 384, smem>>>(dout.get(), darr.get());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> got = dout.download();
  for (int b = 0; b < blocks; ++b)
    for (int it = 0; it < kItems; ++it)
      for (int c = 0; c < kCells; ++c)
        ASSERT_EQ(got[(std::size_t(b) * kItems + it) * kCells + c], float(kPasses * (kPasses + 1) / 2 * (it + 1)))
            << "block " << b << ", item " << it << ", cell " << c;
}

// ptx::atom_add_acq_rel_gpu as split_k_arrived_last uses it: every thread of
// every CTA stores its part of the CTA's partial, the CTAs' thread 0 counts
// the CTA in after a barrier, and the CTA that arrives last reads every
// partial through L2 (ld.global.cg) and stores their sum. Two rounds on the
// same counter, which the last CTA resets; 264 CTAs of 256 threads.
constexpr int kArrivalCtas = 264, kArrivalThreads = 256;

__global__ void last_arrival_kernel(float* partials, int* counter, float* sums, int round) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const int t = threadIdx.x;
  partials[blockIdx.x * kArrivalThreads + t] = float(blockIdx.x + 1) * float(t + round);
  named_barrier(1, kArrivalThreads);
  bool last = false;
  if (t == 0) {
    last = atom_add_acq_rel_gpu(counter, 1) + 1 == int(gridDim.x);
    if (last) *counter = 0;
  }
  if (!named_barrier_or(1, kArrivalThreads, last)) return;
  float s = 0.0f;
  for (int b = 0; b < int(gridDim.x); ++b) s += __ldcg(partials + b * kArrivalThreads + t);
  sums[t] = s;
#endif
}

TEST(AtomAddAcqRel, TheLastCtaReadsEveryCtasPartial) {
  FP4MOE_REQUIRE_GPU();
  test::DeviceBuffer<float> partials(kArrivalCtas * kArrivalThreads), sums(kArrivalThreads);
  test::DeviceBuffer<int> counter(1);
  counter.fill_bytes(0);
  for (int round = 0; round < 2; ++round) {
    partials.fill_bytes(0xff);
    sums.fill_bytes(0xff);
    last_arrival_kernel<<<kArrivalCtas, kArrivalThreads>>>(partials.get(), counter.get(), sums.get(), round);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<float> got = sums.download();
    for (int t = 0; t < kArrivalThreads; ++t)  // sum over b of (b + 1)(t + round): exact in float
      ASSERT_EQ(got[t], float(kArrivalCtas * (kArrivalCtas + 1) / 2) * float(t + round)) << "round " << round << ", thread " << t;
    ASSERT_EQ(counter.download()[0], 0) << "the last CTA resets the count";
  }
}

TEST(SharedAccumulatorHandOver, NamedBarrierOnly) {
  FP4MOE_REQUIRE_GPU();
  check_hand_over<false>();
}
TEST(SharedAccumulatorHandOver, WithTheSplitKArrival) {
  FP4MOE_REQUIRE_GPU();
  check_hand_over<true>();
}
TEST(SharedAccumulatorHandOver, GemmLike) {
  FP4MOE_REQUIRE_GPU();
  check_hand_over<true, true>();
}
TEST(SharedAccumulatorHandOver, GemmLikeWithWarpgroupBarriers) {
  FP4MOE_REQUIRE_GPU();
  check_hand_over<true, true, true>();
}

}  // namespace
}  // namespace fp4moe::ptx
