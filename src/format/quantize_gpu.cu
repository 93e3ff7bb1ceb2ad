// GPU quantizer dispatch, the register-streaming quantizer (FP32 input, and
// BF16 → MXFP4), amax reduction and dequantizer: memory-bound streaming
// kernels. BF16 → NVFP4 goes through the TMA ring of quantize_tma.cu.
//
// In the register-streaming quantizer each thread owns one whole
// quantization block (64 or 128 contiguous input bytes), so the block amax
// and scale are computed once per block, with no shuffles. The loads keep L1
// allocation: a warp's first 16-byte load touches half of each 32-byte
// sector, the next load the other half, which then hits L1.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include "common/cuda_check.hpp"
#include "common/device_info.hpp"
#include "common/fast_divmod.hpp"
#include "common/launch_kernel.cuh"
#include "format/format_ops.hpp"
#include "format/quantize_tma.hpp"
#include "format/quantize_task.cuh"

namespace fp4moe::detail {
namespace {

constexpr int kThreads = 256;

/// Which block a thread works on. A task is one quantization block. A warp
/// takes 4 rows × 8 tasks (lane/8 picks the
/// row, lane%8 the task), so its loads and stores are 4 contiguous runs. For
/// the tiled scale layout the 4 rows are 32 apart: rows r, r+32, r+64, r+96
/// share each 16-byte chunk of a 128x4 tile, so the warp writes whole chunks
/// instead of scattered bytes. For the row-major layout they are consecutive.
///
/// All index math is 32-bit: validation keeps rows·scale_cols below 2^31 and
/// a group's scale bytes (padding included) below 2^32, so a block index and
/// a scale offset fit, and byte addresses are formed once per task by a
/// widening multiply.
template <bool kTiled>
struct TaskMap {
  std::uint32_t rows, scols;
  std::uint32_t band_bytes;   // tiled: scale bytes of one 128-row band
  FastDivmod chunks;          // column chunks (8 tasks each) per row quad
  FastDivmod quads_per_band;  // tiled: row quads per 128-row band, min(32, rows)

  /// A task's first block (row·scols + col, row-major over the group) and
  /// the byte offset of its first scale; false past the matrix.
  __device__ bool locate(std::uint32_t task, std::uint32_t& block, std::uint32_t& scale_at) const {
    const std::uint32_t lane = task % 32;
    std::uint32_t quad, chunk, row;
    chunks.divmod(task / 32, quad, chunk);
    const std::uint32_t col = chunk * 8 + lane % 8;
    block = 0;
    if constexpr (kTiled) {
      std::uint32_t band, r;
      quads_per_band.divmod(quad, band, r);
      row = band * 128 + r + 32 * (lane / 8);
      // tiled128x4_offset(row, col, scols) from the parts already at hand.
      scale_at = band * band_bytes + (col / 4) * 512 + r * 16 + (lane / 8) * 4 + col % 4;
    } else {
      row = quad * 4 + lane / 8;
    }
    if (row >= rows || col >= scols) return false;
    block = row * scols + col;
    if constexpr (!kTiled) scale_at = block;
    return true;
  }
};

template <bool kTiled>
TaskMap<kTiled> make_task_map(std::int64_t rows, std::int64_t scols, std::uint32_t& n_tasks) {
  TaskMap<kTiled> m;
  m.rows = static_cast<std::uint32_t>(rows);
  m.scols = static_cast<std::uint32_t>(scols);
  m.band_bytes = static_cast<std::uint32_t>(round_up(scols, 4) * 128);
  const std::int64_t n_chunks = ceil_div(scols, 8);
  m.chunks = FastDivmod(static_cast<std::uint32_t>(n_chunks));
  std::int64_t quads;
  if constexpr (kTiled) {
    const std::int64_t per_band = std::min<std::int64_t>(32, rows);
    m.quads_per_band = FastDivmod(static_cast<std::uint32_t>(per_band));
    quads = ceil_div(rows, 128) * per_band;
  } else {
    quads = ceil_div(rows, 4);
  }
  n_tasks = static_cast<std::uint32_t>(quads * n_chunks * 32);
  return m;
}

template <class In, bool kNvfp4, bool kTiled>
__global__ void __launch_bounds__(kThreads) quantize_kernel(
    const In* __restrict__ src, std::uint8_t* __restrict__ data, std::uint8_t* __restrict__ scales,
    const float* __restrict__ g_source, bool g_source_is_amax, float* __restrict__ decode_out,
    TaskMap<kTiled> map, std::uint32_t n_tasks, std::int64_t scale_bytes_per_group) {
  constexpr int kBlock = kNvfp4 ? 16 : 32;
  static_assert(blocks_per_task<In, kNvfp4>() == 1, "one block per task (BF16 → NVFP4 goes through quantize_tma.cu)");
  using Task = InputBlock<In, kBlock>;
  const std::int64_t group = blockIdx.y;
  const std::int64_t per_group = std::int64_t(map.rows) * map.scols * kBlock;
  src += group * per_group;
  data += group * per_group / 2;
  scales += group * scale_bytes_per_group;

  __shared__ float2 reciprocals[kNvfp4 ? 128 : 1];
  if constexpr (kNvfp4) {
    static_assert(kThreads >= 128);
    fill_reciprocal_table(reciprocals);
    __syncthreads();
  }

  const float g = kNvfp4 ? group_encode_scale(g_source, g_source_is_amax, group) : 1.0f;
  // With a caller-given g the decode scale can be written here; in amax mode
  // g_source *is* the output slot, so a later kernel writes it instead.
  if (kNvfp4 && !g_source_is_amax && blockIdx.x == 0 && threadIdx.x == 0) decode_out[group] = 1.0f / g;

  struct Step {
    Task in;
    std::uint32_t block, scale_at;
    bool valid;
  };
  auto fetch = [&](std::uint32_t t, Step& st) {
    st.valid = t < n_tasks && map.locate(t, st.block, st.scale_at);
    if (st.valid) st.in.load(src + std::uint64_t(st.block) * kBlock);
  };
  auto process = [&](const Step& cur) {
    if (!cur.valid) return;
    quantize_task<In, kNvfp4>(cur.in, 1, false, g, reciprocals, data + std::uint64_t(cur.block) * (kBlock / 2),
                              scales + cur.scale_at);
  };

  // Two task buffers in turn: the next task's loads are in flight while this
  // task is computed, with no register copies between iterations.
  const std::uint32_t stride = gridDim.x * kThreads;
  std::uint32_t t = blockIdx.x * kThreads + threadIdx.x;
  Step a, b;
  fetch(t, a);
  while (t < n_tasks) {
    fetch(t + stride, b);
    process(a);
    t += stride;
    if (t >= n_tasks) break;
    fetch(t + stride, a);
    process(b);
    t += stride;
  }
}

/// Writes 0 into the padding of a tiled scale layout: first the rows past
/// `rows` in the last 128-row band, then the columns past `cols` of every real
/// row. Only padding positions are visited.
__global__ void zero_tiled_padding_kernel(std::uint8_t* scales, std::int64_t rows, std::int64_t cols,
                                          std::int64_t per_group) {
  const std::int64_t g = blockIdx.y;
  const std::int64_t prow = round_up(rows, 128), pcol = round_up(cols, 4);
  const std::int64_t pad_rows = (prow - rows) * pcol, pad_cols = rows * (pcol - cols);
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < pad_rows + pad_cols;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t r, c;
    if (i < pad_rows) {
      r = rows + i / pcol;
      c = i % pcol;
    } else {
      const std::int64_t j = i - pad_rows, w = pcol - cols;
      r = j / w;
      c = cols + j % w;
    }
    scales[g * per_group + tiled128x4_offset(r, c, cols)] = 0;
  }
}

/// Max |x| bits of a 16-byte vector, finite values only: a non-finite
/// pattern (|x| bits ≥ 0x7F80 for BF16, 0x7F800000 for FP32) counts as 0.
template <class In>
__device__ __forceinline__ std::uint32_t finite_amax_bits(uint4 v) {
  const std::uint32_t w[4] = {v.x, v.y, v.z, v.w};
  std::uint32_t m = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (sizeof(In) == 2) {
      const std::uint32_t a = w[i] & 0x7fff7fffu;
      m = __vmaxu2(m, a & __vcmpltu2(a, 0x7f807f80u));  // two BF16 at once
    } else {
      const std::uint32_t a = w[i] & 0x7fffffffu;
      m = max(m, a < kNonFiniteBits ? a : 0u);
    }
  }
  if constexpr (sizeof(In) == 2) m = max(m << 16, m & 0xffff0000u);
  return m;
}

template <class In>
__global__ void __launch_bounds__(kThreads) amax_kernel(const In* __restrict__ src, std::int64_t per_group,
                                                        unsigned* __restrict__ out) {
  constexpr int kPerVec = 16 / int(sizeof(In)), kUnroll = 4;
  const std::int64_t group = blockIdx.y;
  const uint4* p = reinterpret_cast<const uint4*>(src + group * per_group);
  const std::int64_t n_vec = per_group / kPerVec, stride = std::int64_t(gridDim.x) * kThreads;
  std::uint32_t m = 0;
  std::int64_t v = std::int64_t(blockIdx.x) * kThreads + threadIdx.x;
  for (; v + (kUnroll - 1) * stride < n_vec; v += kUnroll * stride) {
    uint4 x[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) x[u] = __ldcs(p + v + u * stride);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) m = max(m, finite_amax_bits<In>(x[u]));
  }
  for (; v < n_vec; v += stride) m = max(m, finite_amax_bits<In>(__ldcs(p + v)));
  m = __reduce_max_sync(0xffffffffu, m);
  __shared__ std::uint32_t warp_max[kThreads / 32];
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = m;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kThreads / 32; ++w) m = max(m, warp_max[w]);
    atomicMax(out + group, m);  // non-negative float bits order like the floats
  }
}

__global__ void finalize_nvfp4_scale_kernel(float* scale, std::int64_t groups) {
  for (std::int64_t g = threadIdx.x; g < groups; g += blockDim.x)
    scale[g] = 1.0f / nvfp4_encode_scale_from_amax(scale[g]);
}

/// 16 elements (8 bytes of codes) per thread iteration.
template <class Out, bool kNvfp4>
__global__ void __launch_bounds__(kThreads) dequantize_kernel(
    const std::uint8_t* __restrict__ data, const std::uint8_t* __restrict__ scales,
    const float* __restrict__ global, Out* __restrict__ dst, std::int64_t rows, std::int64_t cols,
    ScaleLayout layout) {
  constexpr int kBlock = kNvfp4 ? 16 : 32;
  const std::int64_t group = blockIdx.y;
  const std::int64_t scols = cols / kBlock;
  data += group * rows * cols / 2;
  scales += group * scale_bytes(layout, rows, scols);
  dst += group * rows * cols;
  const float gs = kNvfp4 ? global[group] : 1.0f;
  const std::int64_t n16 = rows * cols / 16;
  for (std::int64_t i = std::int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n16;
       i += std::int64_t(gridDim.x) * kThreads) {
    const uint2 codes = reinterpret_cast<const uint2*>(data)[i];
    const std::int64_t e0 = i * 16, r = e0 / cols, c = (e0 % cols) / kBlock;
    const float sf = decode_block_scale(kNvfp4, scales[scale_offset(layout, r, c, scols)]);
    float out[16];
#pragma unroll
    for (int k = 0; k < 16; ++k) {
      const std::uint32_t w = k < 8 ? codes.x : codes.y;
      out[k] = dequantize_element((w >> (4 * (k % 8))) & 0xfu, sf, gs);
    }
    if constexpr (sizeof(Out) == 4) {
      float4* o = reinterpret_cast<float4*>(dst + e0);
#pragma unroll
      for (int k = 0; k < 4; ++k) o[k] = make_float4(out[4 * k], out[4 * k + 1], out[4 * k + 2], out[4 * k + 3]);
    } else {
      std::uint32_t w[8];
#pragma unroll
      for (int k = 0; k < 8; ++k)
        w[k] = std::uint32_t(float_to_bf16_bits(out[2 * k])) | (std::uint32_t(float_to_bf16_bits(out[2 * k + 1])) << 16);
      uint4* o = reinterpret_cast<uint4*>(dst + e0);
      o[0] = make_uint4(w[0], w[1], w[2], w[3]);
      o[1] = make_uint4(w[4], w[5], w[6], w[7]);
    }
  }
}

/// Blocks for a grid-stride streaming kernel over `work` thread-items: enough
/// to fill the device (8 blocks of 256 per SM), fewer for small inputs.
unsigned streaming_blocks(std::int64_t work) {
  const std::int64_t full = std::int64_t(current_device_sm_count()) * 8;
  return static_cast<unsigned>(std::max<std::int64_t>(1, std::min(full, ceil_div(work, kThreads))));
}

template <class In, bool kNvfp4, bool kTiled>
void launch_quantize_t(const MatrixView& src, const Fp4Tensor& dst, const float* g_source,
                       bool g_source_is_amax, cudaStream_t stream) {
  std::uint32_t n_tasks = 0;
  const TaskMap<kTiled> map = make_task_map<kTiled>(dst.rows, dst.scale_cols(), n_tasks);
  const dim3 grid(streaming_blocks(ceil_div(n_tasks, 2)), static_cast<unsigned>(dst.groups));
  launch_kernel(quantize_kernel<In, kNvfp4, kTiled>, grid, kThreads, 0, stream,
      static_cast<const In*>(src.data), static_cast<std::uint8_t*>(dst.data),
      static_cast<std::uint8_t*>(dst.scales), g_source, g_source_is_amax, dst.global_scale, map, n_tasks,
      dst.scale_bytes_per_group());
}

template <class In, bool kNvfp4>
void launch_quantize_layouts(const MatrixView& src, const Fp4Tensor& dst, const float* g_source,
                             bool g_source_is_amax, cudaStream_t stream) {
  if (dst.scale_layout == ScaleLayout::kTiled128x4) {
    launch_quantize_t<In, kNvfp4, true>(src, dst, g_source, g_source_is_amax, stream);
  } else {
    launch_quantize_t<In, kNvfp4, false>(src, dst, g_source, g_source_is_amax, stream);
  }
}

}  // namespace

void launch_quantize(const MatrixView& src, const Fp4Tensor& dst, const float* g_source,
                     bool g_source_is_amax, cudaStream_t stream) {
  const bool nv = dst.format == Fp4Format::kNVFP4;
  if (src.dtype == DType::kBF16) {
    if (nv) {
      launch_quantize_nvfp4_bf16_tma(src, dst, g_source, g_source_is_amax, stream);
    } else {
      launch_quantize_layouts<__nv_bfloat16, false>(src, dst, g_source, g_source_is_amax, stream);
    }
  } else if (nv) {
    launch_quantize_layouts<float, true>(src, dst, g_source, g_source_is_amax, stream);
  } else {
    launch_quantize_layouts<float, false>(src, dst, g_source, g_source_is_amax, stream);
  }
  const std::int64_t scols = dst.scale_cols();
  const std::int64_t padding = round_up(dst.rows, 128) * round_up(scols, 4) - dst.rows * scols;
  if (dst.scale_layout == ScaleLayout::kTiled128x4 && padding > 0) {
    const std::int64_t per_group = dst.scale_bytes_per_group();
    const dim3 grid(streaming_blocks(padding), static_cast<unsigned>(dst.groups));
    launch_kernel(zero_tiled_padding_kernel, grid, kThreads, 0, stream, static_cast<std::uint8_t*>(dst.scales), dst.rows,
                  dst.scale_cols(), per_group);
  }
}

void launch_amax(const MatrixView& src, float* amax_out, cudaStream_t stream) {
  FP4MOE_CUDA_CHECK(cudaMemsetAsync(amax_out, 0, sizeof(float) * src.groups, stream));
  const std::int64_t per_group = src.rows * src.cols;
  const int vec = src.dtype == DType::kBF16 ? 8 : 4;
  const dim3 grid(streaming_blocks(per_group / vec / 4), static_cast<unsigned>(src.groups));
  auto* out = reinterpret_cast<unsigned*>(amax_out);
  if (src.dtype == DType::kBF16) {
    launch_kernel(amax_kernel<__nv_bfloat16>, grid, kThreads, 0, stream, static_cast<const __nv_bfloat16*>(src.data),
                  per_group, out);
  } else {
    launch_kernel(amax_kernel<float>, grid, kThreads, 0, stream, static_cast<const float*>(src.data), per_group, out);
  }
}

void launch_finalize_nvfp4_scale(float* global_scale, std::int64_t groups, cudaStream_t stream) {
  launch_kernel(finalize_nvfp4_scale_kernel, 1, 256, 0, stream, global_scale, groups);
}

void launch_dequantize(const Fp4Tensor& src, const MatrixView& dst, cudaStream_t stream) {
  const dim3 grid(streaming_blocks(src.rows * src.cols / 16), static_cast<unsigned>(src.groups));
  const auto* data = static_cast<const std::uint8_t*>(src.data);
  const auto* scales = static_cast<const std::uint8_t*>(src.scales);
  const bool nv = src.format == Fp4Format::kNVFP4, bf16 = dst.dtype == DType::kBF16;
#define FP4MOE_DEQ(OUT, NV)                                                                                  \
  launch_kernel(dequantize_kernel<OUT, NV>, grid, kThreads, 0, stream, data, scales, src.global_scale,         \
                static_cast<OUT*>(dst.data), src.rows, src.cols, src.scale_layout)
  if (bf16 && nv) FP4MOE_DEQ(__nv_bfloat16, true);
  if (bf16 && !nv) FP4MOE_DEQ(__nv_bfloat16, false);
  if (!bf16 && nv) FP4MOE_DEQ(float, true);
  if (!bf16 && !nv) FP4MOE_DEQ(float, false);
#undef FP4MOE_DEQ
}

}  // namespace fp4moe::detail
