// C entry points of include/fp4moe/gemm.hpp.
#include "capi/capi_guard.hpp"
#include "capi/capi_views.hpp"
#include "fp4moe/gemm.hpp"

using fp4moe::GemmTactic;
using fp4moe::capi::fp4_tensor;
using fp4moe::capi::gemm_options;
using fp4moe::capi::guarded;
using fp4moe::capi::matrix_view;
using fp4moe::capi::stream_of;
using fp4moe::detail::ArgCheck;

namespace {

struct GemmViews {
  fp4moe::Fp4Tensor a, b;
  fp4moe::MatrixView d;
};

/// The three descriptors, converted (and so refused) in argument order.
GemmViews operands(const ArgCheck& c, const fp4moe_fp4_tensor* a, const fp4moe_fp4_tensor* b, const fp4moe_matrix* d) {
  GemmViews v;
  v.a = fp4_tensor(c, a, "a");
  v.b = fp4_tensor(c, b, "b");
  v.d = matrix_view(c, d, "d");
  return v;
}

}  // namespace

extern "C" {

fp4moe_status fp4moe_fp4_gemm_nt(const fp4moe_fp4_tensor* a, const fp4moe_fp4_tensor* b, const fp4moe_matrix* d,
                                 const fp4moe_tactic* tactic, void* stream) {
  return guarded([&] {
    const ArgCheck c("fp4_gemm_nt");
    const auto [av, bv, dv] = operands(c, a, b, d);
    GemmTactic t;
    fp4moe::fp4_gemm_nt(av, bv, dv, stream_of(stream), gemm_options(tactic, t));
  });
}

fp4moe_status fp4moe_m_grouped_fp4_gemm_nt_contiguous(const fp4moe_fp4_tensor* a, const fp4moe_fp4_tensor* b,
                                                      const fp4moe_matrix* d, const int32_t* m_indices,
                                                      const fp4moe_tactic* tactic, void* stream) {
  return guarded([&] {
    const ArgCheck c("m_grouped_fp4_gemm_nt_contiguous");
    const auto [av, bv, dv] = operands(c, a, b, d);
    GemmTactic t;
    fp4moe::m_grouped_fp4_gemm_nt_contiguous(av, bv, dv, m_indices, stream_of(stream), gemm_options(tactic, t));
  });
}

fp4moe_status fp4moe_m_grouped_fp4_gemm_nt_masked(const fp4moe_fp4_tensor* a, const fp4moe_fp4_tensor* b,
                                                  const fp4moe_matrix* d, const int32_t* masked_m, int32_t expected_m,
                                                  const fp4moe_tactic* tactic, void* stream) {
  return guarded([&] {
    const ArgCheck c("m_grouped_fp4_gemm_nt_masked");
    const auto [av, bv, dv] = operands(c, a, b, d);
    GemmTactic t;
    fp4moe::m_grouped_fp4_gemm_nt_masked(av, bv, dv, masked_m, expected_m, stream_of(stream), gemm_options(tactic, t));
  });
}

}  // extern "C"
