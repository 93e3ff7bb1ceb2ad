// C entry points of include/fp4moe/moe.hpp.
#include "capi/capi_guard.hpp"
#include "capi/capi_views.hpp"
#include "fp4moe/moe.hpp"

using fp4moe::GemmTactic;
using fp4moe::capi::fp4_tensor;
using fp4moe::capi::gemm_options;
using fp4moe::capi::guarded;
using fp4moe::capi::matrix_view;
using fp4moe::capi::stream_of;
using fp4moe::detail::ArgCheck;

extern "C" {

fp4moe_status fp4moe_moe_dense_fc2(const fp4moe_fp4_tensor* a, const fp4moe_fp4_tensor* b, const fp4moe_matrix* alpha,
                                   int32_t expert_width, const fp4moe_matrix* d, const fp4moe_tactic* tactic,
                                   void* stream) {
  return fp4moe_moe_dense_fc2_topk(a, b, alpha, expert_width, 0, d, tactic, stream);
}

fp4moe_status fp4moe_moe_dense_fc2_topk(const fp4moe_fp4_tensor* a, const fp4moe_fp4_tensor* b,
                                        const fp4moe_matrix* alpha, int32_t expert_width, int32_t top_k,
                                        const fp4moe_matrix* d, const fp4moe_tactic* tactic, void* stream) {
  return guarded([&] {
    const ArgCheck c("moe_dense_fc2");
    const auto av = fp4_tensor(c, a, "a");
    const auto bv = fp4_tensor(c, b, "b");
    const auto alpha_v = matrix_view(c, alpha, "alpha");
    const auto dv = matrix_view(c, d, "d");
    GemmTactic t;
    fp4moe::GemmOptions options = gemm_options(tactic, t);
    options.moe_top_k = top_k;
    fp4moe::moe_dense_fc2(av, bv, alpha_v, expert_width, dv, stream_of(stream), options);
  });
}

fp4moe_status fp4moe_moe_dense_fc1_swiglu(const fp4moe_fp4_tensor* a, const fp4moe_fp4_tensor* b,
                                          const float* expert_scale, const fp4moe_matrix* d,
                                          const fp4moe_tactic* tactic, void* stream) {
  return guarded([&] {
    const ArgCheck c("moe_dense_fc1_swiglu");
    const auto av = fp4_tensor(c, a, "a");
    const auto bv = fp4_tensor(c, b, "b");
    const auto dv = matrix_view(c, d, "d");
    GemmTactic t;
    fp4moe::moe_dense_fc1_swiglu(av, bv, expert_scale, dv, stream_of(stream), gemm_options(tactic, t));
  });
}

fp4moe_status fp4moe_moe_dense_fc1_swiglu_nvfp4(const fp4moe_fp4_tensor* a, const fp4moe_fp4_tensor* b,
                                                const float* expert_scale, const fp4moe_fp4_tensor* out,
                                                const float* encode_scale, const fp4moe_tactic* tactic,
                                                void* stream) {
  return guarded([&] {
    const ArgCheck c("moe_dense_fc1_swiglu");
    const auto av = fp4_tensor(c, a, "a");
    const auto bv = fp4_tensor(c, b, "b");
    const auto out_v = fp4_tensor(c, out, "out");
    GemmTactic t;
    fp4moe::moe_dense_fc1_swiglu(av, bv, expert_scale, out_v, encode_scale, stream_of(stream), gemm_options(tactic, t));
  });
}

fp4moe_status fp4moe_moe_routing_alpha(const int32_t* topk_ids, const float* topk_weights, int32_t top_k,
                                       const float* expert_scale, const fp4moe_matrix* alpha, void* stream) {
  return guarded([&] {
    const ArgCheck c("moe_routing_alpha");
    fp4moe::moe_routing_alpha(topk_ids, topk_weights, top_k, expert_scale, matrix_view(c, alpha, "alpha"),
                              stream_of(stream));
  });
}

}  // extern "C"
