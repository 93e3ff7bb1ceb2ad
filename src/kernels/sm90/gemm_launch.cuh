// The launcher of one compiled configuration (included by instances/*.cu).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>

#include "common/cuda_check.hpp"
#include "common/device_info.hpp"
#include "common/launch_kernel.cuh"
#include "kernels/sm90/fp4_gemm_kernel.cuh"
#include "kernels/sm90/gemm_registry.hpp"
#include "kernels/sm90/pipeline_trace_host.hpp"
#include "kernels/sm90/tensor_map.hpp"

namespace fp4moe::kernels {

/// The launch attributes of every GEMM: programmatic stream serialization
/// (PDL), so the kernel may be scheduled while the kernel before it in the
/// stream finishes (it waits for it before touching global memory:
/// ptx/grid_dependency.cuh), and for two-CTA tiles the cluster shape.
struct GemmLaunchAttributes {
  cudaLaunchAttribute attr[2];
  unsigned count = 0;
  explicit GemmLaunchAttributes(int cluster) {
    attr[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[count++].val.programmaticStreamSerializationAllowed = 1;
    if (cluster > 1) {
      attr[count].id = cudaLaunchAttributeClusterDimension;
      attr[count].val.clusterDim.x = static_cast<unsigned>(cluster);
      attr[count].val.clusterDim.y = 1;
      attr[count++].val.clusterDim.z = 1;
    }
  }
};

/// Two-CTA clusters that fit at once (66 on an H200's 132 SMs), asked once
/// per device and thread: the grid is persistent, one cluster per resident
/// pair. `config()` gives the launch configuration (cluster shape, shared
/// memory), built only when the device is asked.
template <class Cfg, class Config>
int resident_clusters(const Config& config) {
  static thread_local int cached_device = -1, cached_clusters = 0;
  int device = 0;
  FP4MOE_CUDA_CHECK(cudaGetDevice(&device));
  if (device != cached_device) {
    const cudaLaunchConfig_t cfg = config();
    FP4MOE_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&cached_clusters, fp4_gemm_kernel<Cfg>, &cfg));
    cached_device = device;
  }
  return std::max(1, cached_clusters);
}

/// Lets the tile's kernel ask for the most dynamic shared memory any of its
/// launches needs (the gather tiles' grows with M), once per device.
template <class Cfg>
void allow_kernel_smem() {
  static std::array<std::atomic<bool>, 64> allowed{};
  const std::int64_t most = Cfg::kGather ? Cfg::gather_smem_bytes(Cfg::kGatherMaxTokens) : Cfg::kSmemBytes;
  detail::allow_dynamic_smem(fp4_gemm_kernel<Cfg>, static_cast<int>(most), allowed);
}

/// The launch configuration of a tile (grid left to the caller), its shared
/// memory allowed.
template <class Cfg>
cudaLaunchConfig_t gemm_launch_config(std::int64_t smem, cudaStream_t stream, const GemmLaunchAttributes& attrs) {
  allow_kernel_smem<Cfg>();
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(Cfg::kCluster));
  cfg.blockDim = dim3(Cfg::kThreads);
  cfg.dynamicSmemBytes = static_cast<std::size_t>(smem);
  cfg.stream = stream;
  cfg.attrs = const_cast<cudaLaunchAttribute*>(attrs.attr);
  cfg.numAttrs = attrs.count;
  return cfg;
}

/// CTAs of the tile the device holds at once: every SM's, or for two-CTA
/// clusters two a resident cluster (the dispatch shares stream-K work by it).
template <class Cfg>
int resident_ctas() {
  if constexpr (Cfg::kCluster == 2) {
    const GemmLaunchAttributes attrs(Cfg::kCluster);
    return 2 * resident_clusters<Cfg>([&] { return gemm_launch_config<Cfg>(Cfg::kSmemBytes, nullptr, attrs); });
  } else {
    return detail::current_device_sm_count() * Cfg::kCtasPerSm;
  }
}

template <class Cfg>
void launch_gemm(const LaunchArgs& args) {
  const auto kernel = fp4_gemm_kernel<Cfg>;
  // The gather layout's tile accumulator holds every token: its shared
  // memory grows with M (the tactic check keeps M within kGatherMaxTokens).
  const std::int64_t smem = Cfg::kGather ? Cfg::gather_smem_bytes(args.params.m) : Cfg::kSmemBytes;
  // FC1 loads gate and up rows apart; a two-CTA cluster's CTAs half the weight rows each.
  const int x_box = Cfg::BM, y_box = Cfg::kFc1 || Cfg::kCluster == 2 ? Cfg::BN / 2 : Cfg::BN;
  // Gather: A is the gathered BF16 token rows, W columns each (B keeps all E·W).
  const CUtensorMap ta =
      Cfg::kGather ? make_gathered_tokens_tensor_map(args.a->data, args.a_rows, args.params.expert_width, Cfg::BN, Cfg::BK)
                   : make_fp4_tensor_map(args.a->data, args.a_rows, args.params.k, Cfg::kSwap ? y_box : x_box, Cfg::BK);
  const CUtensorMap tb = make_fp4_tensor_map(args.b->data, args.b_rows, args.params.k, Cfg::kSwap ? x_box : y_box, Cfg::BK);
  // D's tensor map for the TMA-stored epilogue, where D allows it (BF16,
  // 16-byte aligned rows, N a multiple of 8: a TMA store writes the 16-byte
  // piece that holds D's last column whole, on an H200, so with N % 8 != 0
  // it would write past D's rows into the padding before the next row;
  // tests/gpu/kernels/tma_store_test.cu); otherwise the kernel stores from
  // registers.
  GemmParams params = args.params;
  constexpr int kOutCols = TileScheduler<Cfg::kLayout, Cfg::BT, Cfg::BW>::kOutCols;
  params.n_blocks_div = detail::FastDivmod(static_cast<std::uint32_t>(std::max(1, (params.n + kOutCols - 1) / kOutCols)));
  CUtensorMap td{};
  if constexpr (Cfg::kTmaStores) {
    params.d_tma = params.d_is_bf16 && reinterpret_cast<std::uintptr_t>(params.d) % 16 == 0 && params.ldd % 8 == 0 &&
                   params.n % 8 == 0;
    if (params.d_tma) td = make_bf16_output_tensor_map(params.d, params.m, params.n, params.ldd, 16);
  }
  const GemmLaunchAttributes attrs(Cfg::kCluster);
  cudaLaunchConfig_t cfg = gemm_launch_config<Cfg>(smem, args.stream, attrs);
  if constexpr (Cfg::kCluster == 2) {
    // Stream-K's grid comes from the dispatch (resident_ctas); otherwise
    // every resident cluster, at most one per pair of work items.
    const std::int64_t clusters =
        args.grid > 0 ? args.grid / 2
                      : std::max<std::int64_t>(1, std::min<std::int64_t>(resident_clusters<Cfg>([&] { return cfg; }), (args.max_tiles + 1) / 2));
    cfg.gridDim = dim3(static_cast<unsigned>(2 * clusters));
    FP4MOE_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, ta, tb, td, params));
    return;
  }
  const std::int64_t grid = args.grid > 0 ? args.grid
                                          : std::max<std::int64_t>(1, std::min<std::int64_t>(std::int64_t(detail::current_device_sm_count()) * Cfg::kCtasPerSm, args.max_tiles));
#ifdef FP4MOE_PIPELINE_TRACE
  params.trace = trace_buffer_for_launch();
#endif
  cfg.gridDim = dim3(static_cast<unsigned>(grid));
  FP4MOE_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, ta, tb, td, params));
#ifdef FP4MOE_PIPELINE_TRACE
  trace_write(params.trace, Cfg::kGather, Cfg::BN, Cfg::BK, Cfg::kStages, Cfg::kCtasPerSm);
#endif
}

template <class Cfg>
KernelEntry entry() {
  GemmTactic t;
  t.swap_ab = Cfg::kSwap;
  t.block_n = Cfg::BN;
  t.block_k = Cfg::BK;
  t.stages = Cfg::kStages;
  t.split_k = 1;
  t.moe_gather = Cfg::kGather;
  t.fp8 = Cfg::kFp8;
  t.cluster = Cfg::kCluster;
  // The gather layout is a tactic of moe_dense_fc2, listed with its MoE-dense tiles.
  const Layout op_layout = Cfg::kGather ? Layout::kMoeDense : Cfg::kLayout;
  // The 128 x 256 tiles split by stream-K alone: their deferred split tiles
  // are a CTA's last few items (fp4_gemm_kernel.cuh).
  KernelEntry e{Cfg::kNvfp4 ? Fp4Format::kNVFP4 : Fp4Format::kMXFP4, op_layout, t, Cfg::BM, Cfg::kCtasPerSm,
                Cfg::kSplitK && !Cfg::kReduceFromWorkspace ? 8 : 1, Cfg::kMaxTokens, &launch_gemm<Cfg>};
  e.stream_k = Cfg::kSplitK;
  e.stream_k_whole_rounds = Cfg::kReduceFromWorkspace;
  e.gather_lane_blocks = Cfg::kGather && Cfg::kLaneBlocks;
  if constexpr (Cfg::kPrepackable) e.launch_prepacked = &launch_gemm<typename Cfg::PrepackedB>;
  e.resident_ctas = &resident_ctas<Cfg>;
  return e;
}

}  // namespace fp4moe::kernels
