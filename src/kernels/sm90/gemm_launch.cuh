// The launcher of one compiled configuration (included by instances/*.cu).
#pragma once

#include <algorithm>

#include "common/cuda_check.hpp"
#include "common/device_info.hpp"
#include "kernels/sm90/fp4_gemm_kernel.cuh"
#include "kernels/sm90/gemm_registry.hpp"
#include "kernels/sm90/tensor_map.hpp"

namespace fp4moe::kernels {

template <class Cfg>
void launch_gemm(const LaunchArgs& args) {
  const auto kernel = fp4_gemm_kernel<Cfg>;
  FP4MOE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes));
  const int x_box = Cfg::BM, y_box = Cfg::kFc1 ? Cfg::BN / 2 : Cfg::BN;  // FC1 loads gate and up rows apart
  const CUtensorMap ta = make_fp4_tensor_map(args.a->data, args.a_rows, args.params.k, Cfg::kSwap ? y_box : x_box, Cfg::BK);
  const CUtensorMap tb = make_fp4_tensor_map(args.b->data, args.b_rows, args.params.k, Cfg::kSwap ? x_box : y_box, Cfg::BK);
  const std::int64_t grid = args.grid > 0 ? args.grid
                                          : std::max<std::int64_t>(1, std::min<std::int64_t>(std::int64_t(detail::current_device_sm_count()) * Cfg::kCtasPerSm, args.max_tiles));
  kernel<<<static_cast<unsigned>(grid), Cfg::kThreads, Cfg::kSmemBytes, args.stream>>>(ta, tb, args.params);
  FP4MOE_CHECK_LAUNCH();
}

template <class Cfg>
KernelEntry entry() {
  GemmTactic t;
  t.swap_ab = Cfg::kSwap;
  t.block_n = Cfg::BN;
  t.block_k = Cfg::BK;
  t.stages = Cfg::kStages;
  t.split_k = 1;
  return KernelEntry{Cfg::kNvfp4 ? Fp4Format::kNVFP4 : Fp4Format::kMXFP4, Cfg::kLayout, t, Cfg::BM, Cfg::kCtasPerSm,
                     Cfg::kSplitK ? 8 : 1, &launch_gemm<Cfg>};
}

}  // namespace fp4moe::kernels
