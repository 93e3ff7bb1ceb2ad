// GPU quantizers (BF16/FP32 → NVFP4/MXFP4), amax reduction and dequantizer.
//
// Memory-bound streaming kernels. In the quantizer each thread owns whole
// quantization blocks (16 or 32 elements: 32 to 128 contiguous input bytes),
// so the block amax and scale are computed once per block, with no shuffles.
// The loads keep L1 allocation: a warp's first 16-byte load touches half of
// each 32-byte sector, the next load the other half, which then hits L1.
//
// The CPU quantizer applies the literal rules of block_rules.hpp; this one
// uses the exact fast forms of fast_rules.hpp. Tests hold the two
// bit-identical.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include "common/cuda_check.hpp"
#include "common/device_info.hpp"
#include "common/fast_divmod.hpp"
#include "format/block_rules.hpp"
#include "format/fast_rules.hpp"
#include "format/format_ops.hpp"
#include "kernels/sm90/ptx/bit_ops.cuh"

namespace fp4moe::detail {
namespace {

constexpr int kThreads = 256;

/// kElems contiguous input elements, loaded as 16-byte vectors.
template <class In, int kElems>
struct InputBlock {
  static constexpr int kPerVec = 16 / int(sizeof(In));  // 8 BF16 or 4 FP32
  static constexpr int kVecs = kElems / kPerVec;
  uint4 raw[kVecs];

  __device__ void load(const In* p) {
#pragma unroll
    for (int v = 0; v < kVecs; ++v) raw[v] = __ldg(reinterpret_cast<const uint4*>(p) + v);
  }
  /// Max of the |x| bit patterns (see block_rules.hpp) over elements
  /// [first, first + count).
  __device__ std::uint32_t amax_bits(int first = 0, int count = kElems) const {
    std::uint32_t m = 0;
#pragma unroll
    for (int v = first / kPerVec; v < (first + count) / kPerVec; ++v) {
      const std::uint32_t w[4] = {raw[v].x, raw[v].y, raw[v].z, raw[v].w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if constexpr (sizeof(In) == 2) {
          m = __vmaxu2(m, w[i] & 0x7fff7fffu);  // two |bf16| patterns at once
        } else {
          m = max(m, w[i] & 0x7fffffffu);
        }
      }
    }
    if constexpr (sizeof(In) == 2) m = max(m << 16, m & 0xffff0000u);
    return m;
  }
  /// The sign bits of elements [first, first + 8) (first a multiple of 8) at
  /// the sign positions of a packed E2M1 word: bit 4i + 3 for element
  /// first + i. Byte permutes gather the input bytes that hold the signs:
  /// A (sign-replicated, bit 3 set) for the even elements, B (raw, bit 7)
  /// for the odd ones; 4 to 6 PRMTs per 8 elements instead of a shift and a
  /// mask per element.
  __device__ std::uint32_t sign_nibbles8(int first) const {
    std::uint32_t a, b;
    if constexpr (sizeof(In) == 2) {
      const uint4& r = raw[first / 8];
      // The high byte of each BF16 holds its sign: byte 1 (even element) and
      // byte 3 (odd element) of every word. Low half: even elements
      // sign-replicated; high half: odd elements raw.
      const std::uint32_t lo = ptx::prmt(r.x, r.y, 0x73D9), hi = ptx::prmt(r.z, r.w, 0x73D9);
      a = ptx::prmt(lo, hi, 0x5410);
      b = ptx::prmt(lo, hi, 0x7632);
    } else {
      const uint4& p = raw[first / 4];
      const uint4& q = raw[first / 4 + 1];
      // One FP32 per word, sign in byte 3.
      a = ptx::prmt(ptx::prmt(p.x, p.z, 0x00FB), ptx::prmt(q.x, q.z, 0xFB00), 0x7610);
      b = ptx::prmt(ptx::prmt(p.y, p.w, 0x0073), ptx::prmt(q.y, q.w, 0x7300), 0x7610);
    }
    return (a & 0x08080808u) | (b & 0x80808080u);
  }
  /// Element i as a float (exact).
  __device__ float element(int i) const {
    const uint4& r = raw[i / kPerVec];
    const int j = i % kPerVec;
    if constexpr (sizeof(In) == 2) {
      const std::uint32_t w = (j / 2 == 0) ? r.x : (j / 2 == 1) ? r.y : (j / 2 == 2) ? r.z : r.w;
      return __uint_as_float(j % 2 ? (w & 0xffff0000u) : (w << 16));
    } else {
      return __uint_as_float(j == 0 ? r.x : j == 1 ? r.y : j == 2 ? r.z : r.w);
    }
  }
};

/// The literal NVFP4 scale rule (block_rules.hpp) with the hardware
/// RN-satfinite converter (cvt.rn.satfinite.e4m3x2.f32) in place of the
/// software encoder and the division by 6 of fast_rules.hpp. Also says
/// whether the block's quotients are bounded below 7
/// (nvfp4_scale_bounds_quotient).
__device__ __forceinline__ std::uint8_t nvfp4_scale_code_fast(std::uint32_t amax_bits, float g, bool& bounded) {
  const float u = amax_over_6(__uint_as_float(amax_bits)) * g;
  const std::uint8_t code =
      amax_bits >= kNonFiniteBits ? kE4M3NaN : std::uint8_t(__nv_cvt_float_to_fp8(u, __NV_SATFINITE, __NV_E4M3));
  bounded = nvfp4_scale_bounds_quotient(code, u);
  return code;
}

/// Eight codes packed in a word: element first + i in nibble i. `magnitude`
/// gives the fast encoder's pattern (kRoundBits + code) of one element; the
/// patterns are summed as they are made (the sum of pack8_magnitude_codes,
/// one element at a time so few stay live) and the signs are OR-ed in from the input
/// bytes (the sign of x·g/s is x's: g and s are positive under the
/// quantizer's contract).
template <class Task, class Magnitude>
__device__ __forceinline__ std::uint32_t encode_word(const Task& in, int first, Magnitude magnitude) {
  std::uint32_t w = magnitude(first) - kPackedRoundBias;
#pragma unroll
  for (int i = 1; i < 8; ++i) w += magnitude(first + i) << (4 * i);
  return w | in.sign_nibbles8(first);
}

/// Codes of one block, packed 8 per word (kBlock / 8 words). `bounded`
/// (NVFP4): every quotient of the block is below 7, so the clamp-free
/// encoder applies; the caller makes it warp-uniform, so a warp never runs
/// both encoders.
template <bool kNvfp4, int kBlock, class Task>
__device__ __forceinline__ void quantize_block(const Task& in, int first, std::uint8_t scale_code, float g, bool bounded,
                                               const float2* reciprocals, std::uint32_t* words) {
  if constexpr (kNvfp4) {
    // y = |x·g| / sf, correctly rounded, from sf's reciprocal pair (for the
    // codes of a negative g, which the contract excludes, that of |sf|).
    const float2 r = reciprocals[scale_code & 0x7f];
    auto quotient = [&](int i) { return div_rn_by_pair(fabsf(in.element(i) * g), ReciprocalPair{r.x, r.y}); };
    if (bounded) {  // never a zeroed block: its scale is a normal number
#pragma unroll
      for (int w = 0; w < kBlock / 8; ++w)
        words[w] = encode_word(in, first + 8 * w, [&](int i) { return e2m1_magnitude_code_bits_below_7(quotient(i)); });
    } else {
      const bool zeroed = nvfp4_block_is_zeroed(scale_code);
#pragma unroll
      for (int w = 0; w < kBlock / 8; ++w)
        words[w] = zeroed ? 0u : encode_word(in, first + 8 * w, [&](int i) { return e2m1_magnitude_code_bits(quotient(i)); });
    }
  } else {
    const float inv = mxfp4_inverse_scale(scale_code);
    const bool zeroed = scale_code == kUE8M0NaN;
#pragma unroll
    for (int w = 0; w < kBlock / 8; ++w)
      words[w] = zeroed ? 0u : encode_word(in, first + 8 * w, [&](int i) { return e2m1_magnitude_code_bits(fabsf(in.element(i)) * inv); });
  }
}

/// Which blocks a thread works on. A task is kPerTask consecutive blocks of
/// one row (64 input bytes). A warp takes 4 rows × 8 tasks (lane/8 picks the
/// row, lane%8 the task), so its loads and stores are 4 contiguous runs. For
/// the tiled scale layout the 4 rows are 32 apart: rows r, r+32, r+64, r+96
/// share each 16-byte chunk of a 128x4 tile, so the warp writes whole chunks
/// instead of scattered bytes. For the row-major layout they are consecutive.
template <bool kTiled>
struct TaskMap {
  std::uint32_t rows, scols, per_task;
  FastDivmod chunks;          // column chunks (8 tasks each) per row quad
  FastDivmod quads_per_band;  // tiled: row quads per 128-row band, min(32, rows)

  /// Row and first block column of a task; false past the matrix.
  __device__ bool locate(std::uint32_t task, std::uint32_t& row, std::uint32_t& col) const {
    const std::uint32_t lane = task % 32;
    std::uint32_t quad, chunk;
    chunks.divmod(task / 32, quad, chunk);
    if constexpr (kTiled) {
      std::uint32_t band, r;
      quads_per_band.divmod(quad, band, r);
      row = band * 128 + r + 32 * (lane / 8);
    } else {
      row = quad * 4 + lane / 8;
    }
    col = (chunk * 8 + lane % 8) * per_task;
    return row < rows && col < scols;
  }
};

template <bool kTiled>
TaskMap<kTiled> make_task_map(std::int64_t rows, std::int64_t scols, int per_task, std::uint32_t& n_tasks) {
  TaskMap<kTiled> m;
  m.rows = static_cast<std::uint32_t>(rows);
  m.scols = static_cast<std::uint32_t>(scols);
  m.per_task = static_cast<std::uint32_t>(per_task);
  const std::int64_t n_chunks = ceil_div(ceil_div(scols, per_task), 8);
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

/// Quantization blocks per thread task: 64 input bytes per task.
template <class In, bool kNvfp4>
constexpr int blocks_per_task() {
  constexpr int bytes = (kNvfp4 ? 16 : 32) * int(sizeof(In));
  return bytes >= 64 ? 1 : 64 / bytes;
}

template <class In, bool kNvfp4, bool kTiled>
__global__ void __launch_bounds__(kThreads) quantize_kernel(
    const In* __restrict__ src, std::uint8_t* __restrict__ data, std::uint8_t* __restrict__ scales,
    const float* __restrict__ g_source, bool g_source_is_amax, float* __restrict__ decode_out,
    TaskMap<kTiled> map, std::uint32_t n_tasks, std::int64_t scale_bytes_per_group) {
  constexpr int kBlock = kNvfp4 ? 16 : 32;
  constexpr int kPerTask = blocks_per_task<In, kNvfp4>();
  using Task = InputBlock<In, kBlock * kPerTask>;
  const std::int64_t group = blockIdx.y;
  const std::int64_t per_group = std::int64_t(map.rows) * map.scols * kBlock;
  src += group * per_group;
  data += group * per_group / 2;
  scales += group * scale_bytes_per_group;

  // NVFP4: the reciprocal pair of every E4M3 scale magnitude, so a block
  // reads its divisor with one shared-memory load.
  __shared__ float2 reciprocals[kNvfp4 ? 128 : 1];
  if constexpr (kNvfp4) {
    static_assert(kThreads >= 128);
    if (threadIdx.x < 128) {
      const ReciprocalPair p = reciprocal_pair(decode_e4m3(static_cast<std::uint8_t>(threadIdx.x)));
      reciprocals[threadIdx.x] = make_float2(p.hi, p.lo);
    }
    __syncthreads();
  }

  float g = 1.0f;
  if constexpr (kNvfp4) {
    const float s = g_source[group];
    g = g_source_is_amax ? nvfp4_encode_scale_from_amax(s) : s;
    // With a caller-given g the decode scale can be written here; in amax mode
    // g_source *is* the output slot, so a later kernel writes it instead.
    if (!g_source_is_amax && blockIdx.x == 0 && threadIdx.x == 0) decode_out[group] = 1.0f / g;
  }

  struct Step {
    Task in;
    std::uint32_t row, col;
    bool valid;
  };
  auto fetch = [&](std::uint32_t t, Step& st) {
    st.valid = t < n_tasks && map.locate(t, st.row, st.col);
    // scols is a multiple of kPerTask whenever kPerTask > 1 (K % 32 == 0).
    if (st.valid) st.in.load(src + (std::int64_t(st.row) * map.scols + st.col) * kBlock);
  };

  auto process = [&](const Step& cur) {
    if (!cur.valid) return;
    const std::int64_t blk = std::int64_t(cur.row) * map.scols + cur.col;
    std::uint32_t words[kPerTask * kBlock / 8];
    std::uint8_t codes[kPerTask];
    bool bounded = true;
#pragma unroll
    for (int k = 0; k < kPerTask; ++k) {
      const std::uint32_t amax = cur.in.amax_bits(k * kBlock, kBlock);
      bool b = false;
      codes[k] = kNvfp4 ? nvfp4_scale_code_fast(amax, g, b) : mxfp4_scale_code(amax);
      bounded = bounded && b;
    }
    // The clamp-free NVFP4 encoder only where the whole warp can use it.
    if constexpr (kNvfp4) bounded = __all_sync(__activemask(), bounded);
#pragma unroll
    for (int k = 0; k < kPerTask; ++k)
      quantize_block<kNvfp4, kBlock>(cur.in, k * kBlock, codes[k], g, bounded, reciprocals, words + k * (kBlock / 8));
    if constexpr (kPerTask * kBlock == 16) {
      reinterpret_cast<uint2*>(data)[blk] = make_uint2(words[0], words[1]);
    } else {
      uint4* out = reinterpret_cast<uint4*>(data + blk * (kBlock / 2));
#pragma unroll
      for (int w = 0; w < kPerTask * kBlock / 8; w += 4) out[w / 4] = make_uint4(words[w], words[w + 1], words[w + 2], words[w + 3]);
    }
    const std::int64_t scale_at = kTiled ? tiled128x4_offset(cur.row, cur.col, map.scols) : blk;
    if constexpr (kPerTask == 2) {
      // col is even, so the two codes are adjacent in both layouts (same
      // 4-column group of a 128x4 tile): one 2-byte store.
      *reinterpret_cast<std::uint16_t*>(scales + scale_at) = std::uint16_t(codes[0] | (codes[1] << 8));
    } else {
      static_assert(kPerTask == 1);
      scales[scale_at] = codes[0];
    }
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
  const TaskMap<kTiled> map = make_task_map<kTiled>(dst.rows, dst.scale_cols(), blocks_per_task<In, kNvfp4>(), n_tasks);
  const dim3 grid(streaming_blocks(ceil_div(n_tasks, 2)), static_cast<unsigned>(dst.groups));
  quantize_kernel<In, kNvfp4, kTiled><<<grid, kThreads, 0, stream>>>(
      static_cast<const In*>(src.data), static_cast<std::uint8_t*>(dst.data),
      static_cast<std::uint8_t*>(dst.scales), g_source, g_source_is_amax, dst.global_scale, map, n_tasks,
      dst.scale_bytes_per_group());
  FP4MOE_CHECK_LAUNCH();
}

template <class In>
void launch_quantize_in(const MatrixView& src, const Fp4Tensor& dst, const float* g_source,
                        bool g_source_is_amax, cudaStream_t stream) {
  const bool nv = dst.format == Fp4Format::kNVFP4, tiled = dst.scale_layout == ScaleLayout::kTiled128x4;
  if (nv && tiled) launch_quantize_t<In, true, true>(src, dst, g_source, g_source_is_amax, stream);
  if (nv && !tiled) launch_quantize_t<In, true, false>(src, dst, g_source, g_source_is_amax, stream);
  if (!nv && tiled) launch_quantize_t<In, false, true>(src, dst, g_source, g_source_is_amax, stream);
  if (!nv && !tiled) launch_quantize_t<In, false, false>(src, dst, g_source, g_source_is_amax, stream);
}

}  // namespace

void launch_quantize(const MatrixView& src, const Fp4Tensor& dst, const float* g_source,
                     bool g_source_is_amax, cudaStream_t stream) {
  if (src.dtype == DType::kBF16) {
    launch_quantize_in<__nv_bfloat16>(src, dst, g_source, g_source_is_amax, stream);
  } else {
    launch_quantize_in<float>(src, dst, g_source, g_source_is_amax, stream);
  }
  const std::int64_t scols = dst.scale_cols();
  const std::int64_t padding = round_up(dst.rows, 128) * round_up(scols, 4) - dst.rows * scols;
  if (dst.scale_layout == ScaleLayout::kTiled128x4 && padding > 0) {
    const std::int64_t per_group = dst.scale_bytes_per_group();
    const dim3 grid(streaming_blocks(padding), static_cast<unsigned>(dst.groups));
    zero_tiled_padding_kernel<<<grid, kThreads, 0, stream>>>(static_cast<std::uint8_t*>(dst.scales),
                                                              dst.rows, dst.scale_cols(), per_group);
    FP4MOE_CHECK_LAUNCH();
  }
}

void launch_amax(const MatrixView& src, float* amax_out, cudaStream_t stream) {
  FP4MOE_CUDA_CHECK(cudaMemsetAsync(amax_out, 0, sizeof(float) * src.groups, stream));
  const std::int64_t per_group = src.rows * src.cols;
  const int vec = src.dtype == DType::kBF16 ? 8 : 4;
  const dim3 grid(streaming_blocks(per_group / vec / 4), static_cast<unsigned>(src.groups));
  auto* out = reinterpret_cast<unsigned*>(amax_out);
  if (src.dtype == DType::kBF16) {
    amax_kernel<__nv_bfloat16><<<grid, kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(src.data), per_group, out);
  } else {
    amax_kernel<float><<<grid, kThreads, 0, stream>>>(static_cast<const float*>(src.data), per_group, out);
  }
  FP4MOE_CHECK_LAUNCH();
}

void launch_finalize_nvfp4_scale(float* global_scale, std::int64_t groups, cudaStream_t stream) {
  finalize_nvfp4_scale_kernel<<<1, 256, 0, stream>>>(global_scale, groups);
  FP4MOE_CHECK_LAUNCH();
}

void launch_dequantize(const Fp4Tensor& src, const MatrixView& dst, cudaStream_t stream) {
  const dim3 grid(streaming_blocks(src.rows * src.cols / 16), static_cast<unsigned>(src.groups));
  const auto* data = static_cast<const std::uint8_t*>(src.data);
  const auto* scales = static_cast<const std::uint8_t*>(src.scales);
  const bool nv = src.format == Fp4Format::kNVFP4, bf16 = dst.dtype == DType::kBF16;
#define FP4MOE_DEQ(OUT, NV)                                                                      \
  dequantize_kernel<OUT, NV><<<grid, kThreads, 0, stream>>>(data, scales, src.global_scale,      \
                                                            static_cast<OUT*>(dst.data), src.rows, \
                                                            src.cols, src.scale_layout)
  if (bf16 && nv) FP4MOE_DEQ(__nv_bfloat16, true);
  if (bf16 && !nv) FP4MOE_DEQ(__nv_bfloat16, false);
  if (!bf16 && nv) FP4MOE_DEQ(float, true);
  if (!bf16 && !nv) FP4MOE_DEQ(float, false);
#undef FP4MOE_DEQ
  FP4MOE_CHECK_LAUNCH();
}

}  // namespace fp4moe::detail
