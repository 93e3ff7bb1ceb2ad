#include "kernels/sm90/gemm_registry.hpp"

namespace fp4moe::kernels {

std::vector<KernelEntry> entries_nvfp4_dense();
std::vector<KernelEntry> entries_nvfp4_contiguous();
std::vector<KernelEntry> entries_nvfp4_masked();
std::vector<KernelEntry> entries_mxfp4_dense();
std::vector<KernelEntry> entries_mxfp4_contiguous();
std::vector<KernelEntry> entries_mxfp4_masked();
std::vector<KernelEntry> entries_nvfp4_moe_dense();
std::vector<KernelEntry> entries_mxfp4_moe_dense();
std::vector<KernelEntry> entries_nvfp4_moe_fc1();
std::vector<KernelEntry> entries_mxfp4_moe_fc1();
std::vector<KernelEntry> entries_nvfp4_moe_gather();
std::vector<KernelEntry> entries_mxfp4_moe_gather();

const std::vector<KernelEntry>& kernel_registry() {
  static const std::vector<KernelEntry> all = [] {
    std::vector<KernelEntry> v;
    for (auto f : {entries_nvfp4_dense, entries_nvfp4_contiguous, entries_nvfp4_masked, entries_mxfp4_dense,
                   entries_mxfp4_contiguous, entries_mxfp4_masked, entries_nvfp4_moe_dense, entries_mxfp4_moe_dense,
                   entries_nvfp4_moe_fc1, entries_mxfp4_moe_fc1, entries_nvfp4_moe_gather, entries_mxfp4_moe_gather}) {
      const auto e = f();
      v.insert(v.end(), e.begin(), e.end());
    }
    return v;
  }();
  return all;
}

}  // namespace fp4moe::kernels
