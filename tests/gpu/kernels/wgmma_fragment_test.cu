// The register fragments of the wgmma wrappers (kernels/sm90/ptx/wgmma.cuh):
// one warpgroup multiplies a 64x16 A by a 16xN B (K-major, 128B-swizzled, in
// shared memory), with A either from registers laid out as the header says
// (WgmmaRS) or from shared memory (WgmmaSS), and writes D through the
// documented accumulator layout. Small integers make every product exact, so
// D must equal the host product bit for bit; a wrong fragment index moves a
// value and breaks it. The same for the E4M3 k32 form with A from registers
// and B 64B-swizzled (the FP8 route's operands).
#include <gtest/gtest.h>

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <vector>

#include "kernels/sm90/ptx/memory.cuh"
#include "kernels/sm90/ptx/wgmma.cuh"
#include "support/test_support.hpp"

namespace fp4moe::ptx {
namespace {

constexpr int kM = 64, kK = 16;

__device__ std::uint16_t bf16_bits(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }

/// Byte offset of element (row, k) of a K-major tile with 128-byte rows and
/// the 128B swizzle (16-byte chunk c of row r stored at chunk c ^ (r % 8)).
__device__ std::uint32_t sw128_offset(int row, int k) {
  const int chunk = (k * 2) / 16, in_chunk = (k * 2) % 16;
  return row * 128 + ((chunk ^ (row % 8)) * 16) + in_chunk;
}

/// D (64 x N, row-major) from this thread's accumulators, by the documented layout.
template <int N>
__device__ void store_accumulators(const float (&acc)[N / 2], float* d) {
  const int t = threadIdx.x, w = t / 32, g = (t % 32) / 4, j = t % 4;
  for (int i = 0; i < N / 8; ++i)
    for (int h = 0; h < 2; ++h)
      for (int e = 0; e < 2; ++e) d[(16 * w + g + 8 * h) * N + 8 * i + 2 * j + e] = acc[4 * i + 2 * h + e];
}

template <int N, bool kRegA>
__global__ void fragment_kernel(const float* a, const float* b, float* d) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  __shared__ __align__(1024) std::uint8_t tile_b[N * 128];
  __shared__ __align__(1024) std::uint8_t tile_a[kM * 128];
  const int t = threadIdx.x, w = t / 32, g = (t % 32) / 4, j = t % 4;
  for (int i = t; i < N * kK; i += 128) {
    const int n = i / kK, k = i % kK;
    *reinterpret_cast<std::uint16_t*>(tile_b + sw128_offset(n, k)) = bf16_bits(b[n * kK + k]);
  }
  for (int i = t; i < kM * kK; i += 128) {
    const int m = i / kK, k = i % kK;
    *reinterpret_cast<std::uint16_t*>(tile_a + sw128_offset(m, k)) = bf16_bits(a[m * kK + k]);
  }
  fence_proxy_async_smem();
  __syncthreads();
  // a[0..3] as documented: rows 16w+g (+8), k pairs 2j (+8).
  auto pair = [&](int row, int k) {
    return std::uint32_t(bf16_bits(a[row * kK + k])) | (std::uint32_t(bf16_bits(a[row * kK + k + 1])) << 16);
  };
  const std::uint32_t frag[4] = {pair(16 * w + g, 2 * j), pair(16 * w + g + 8, 2 * j), pair(16 * w + g, 2 * j + 8),
                                 pair(16 * w + g + 8, 2 * j + 8)};
  float acc[N / 2];
  for (int i = 0; i < N / 2; ++i) acc[i] = -1.0f;  // overwritten: accumulate = false
  wgmma_fence();
  if constexpr (kRegA) {
    WgmmaRS<BF16, N>::mma(acc, frag, smem_desc_k_major_sw128(smem_addr(tile_b)), false);
  } else {
    WgmmaSS<BF16, N>::mma(acc, smem_desc_k_major_sw128(smem_addr(tile_a)), smem_desc_k_major_sw128(smem_addr(tile_b)),
                          false);
  }
  wgmma_commit();
  wgmma_wait<0>();
  store_accumulators<N>(acc, d);
#endif
}

/// A (64 x k) and B (n x k) of small integers, D = launch(A, B) (poisoned
/// with NaN first: an element the layout misses stays NaN), checked against
/// the host product bit for bit.
template <class Launch>
void check_product(int k, int n, Launch launch) {
  std::vector<float> a(kM * k), b(n * k), want(kM * n, 0.0f);
  for (int i = 0; i < kM * k; ++i) a[i] = float((i * 7 + 3) % 11) - 5.0f;
  for (int i = 0; i < n * k; ++i) b[i] = float((i * 5 + 1) % 9) - 4.0f;
  for (int m = 0; m < kM; ++m)
    for (int c = 0; c < n; ++c)
      for (int kk = 0; kk < k; ++kk) want[m * n + c] += a[m * k + kk] * b[c * k + kk];
  test::DeviceBuffer<float> da(a.size()), db(b.size()), dd(want.size());
  da.upload(a);
  db.upload(b);
  dd.fill_bytes(0xff);
  launch(da.get(), db.get(), dd.get());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> got = dd.download();
  for (int m = 0; m < kM; ++m)
    for (int c = 0; c < n; ++c) ASSERT_EQ(got[m * n + c], want[m * n + c]) << "D[" << m << "][" << c << "], N = " << n;
}

template <int N, bool kRegA>
void check_fragments() {
  check_product(kK, N, [](const float* a, const float* b, float* d) { fragment_kernel<N, kRegA><<<1, 128>>>(a, b, d); });
}

TEST(WgmmaFragments, RegisterAMatchesTheDocumentedLayoutN16) {
  FP4MOE_REQUIRE_GPU();
  check_fragments<16, true>();
}
TEST(WgmmaFragments, RegisterAMatchesTheDocumentedLayoutN64) {
  FP4MOE_REQUIRE_GPU();
  check_fragments<64, true>();
}
TEST(WgmmaFragments, SharedAMatchesTheDocumentedLayoutN128) {
  FP4MOE_REQUIRE_GPU();
  check_fragments<128, false>();
}

// ---------------------------------------------------------------- E4M3 k32

constexpr int kK8 = 32;

__device__ std::uint32_t e4m3_bits(float f) { return __nv_fp8_e4m3(f).__x; }

/// Byte offset of element (row, k) of a K-major 8-bit tile with 64-byte rows
/// and the 64B swizzle (16-byte chunk c of row r at chunk c ^ ((r / 2) % 4)).
__device__ std::uint32_t sw64_offset(int row, int k) {
  return row * 64 + (((k / 16) ^ ((row / 2) % 4)) * 16) + k % 16;
}

template <int N>
__global__ void fragment_e4m3_kernel(const float* a, const float* b, float* d) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  __shared__ __align__(1024) std::uint8_t tile_b[N * 64];
  const int t = threadIdx.x, w = t / 32, g = (t % 32) / 4, j = t % 4;
  for (int i = t; i < N * 64; i += 128) tile_b[i] = 0;
  __syncthreads();
  for (int i = t; i < N * kK8; i += 128) {
    const int n = i / kK8, k = i % kK8;
    tile_b[sw64_offset(n, k)] = static_cast<std::uint8_t>(e4m3_bits(b[n * kK8 + k]));
  }
  fence_proxy_async_smem();
  __syncthreads();
  // a[0..3] as documented: rows 16w+g (+8), k quads 4j (+16).
  auto quad = [&](int row, int k) {
    std::uint32_t v = 0;
    for (int e = 0; e < 4; ++e) v |= e4m3_bits(a[row * kK8 + k + e]) << (8 * e);
    return v;
  };
  const std::uint32_t frag[4] = {quad(16 * w + g, 4 * j), quad(16 * w + g + 8, 4 * j), quad(16 * w + g, 4 * j + 16),
                                 quad(16 * w + g + 8, 4 * j + 16)};
  float acc[N / 2];
  for (int i = 0; i < N / 2; ++i) acc[i] = -1.0f;  // overwritten: accumulate = false
  wgmma_fence();
  WgmmaRS<E4M3, N>::mma(acc, frag, smem_desc_k_major_sw64(smem_addr(tile_b)), false);
  wgmma_commit();
  wgmma_wait<0>();
  store_accumulators<N>(acc, d);
#endif
}

template <int N>
void check_e4m3_fragments() {
  check_product(kK8, N, [](const float* a, const float* b, float* d) { fragment_e4m3_kernel<N><<<1, 128>>>(a, b, d); });
}

TEST(WgmmaFragments, E4M3RegisterAMatchesTheDocumentedLayoutN16) {
  FP4MOE_REQUIRE_GPU();
  check_e4m3_fragments<16>();
}
TEST(WgmmaFragments, E4M3RegisterAMatchesTheDocumentedLayoutN128) {
  FP4MOE_REQUIRE_GPU();
  check_e4m3_fragments<128>();
}

}  // namespace
}  // namespace fp4moe::ptx
