// Suite `quantize`: BF16 → NVFP4 / MXFP4 over 1 GiB and 4 GiB of input.
// Bytes counted: input read once plus FP4 data and scales written once, against
// the copy-bandwidth ceiling (which also counts read + write). The NVFP4 row
// that derives g from the tensor amax must read the input twice; its fraction
// still counts the input once, so it shows the price of the extra pass.
#include <cuda_bf16.h>

#include "bench/device_kernels.hpp"
#include "bench/suite.hpp"
#include "common/cuda_check.hpp"
#include "common/upload.hpp"
#include "fp4moe/quantize.hpp"

namespace fp4moe::bench {

void run_quantize_suite(SuiteContext& ctx) {
  const std::int64_t k = 8192;
  for (std::int64_t gib : {1, 4}) {
    const std::int64_t rows = (gib << 30) / 2 / k, n = rows * k;
    void* in = nullptr;
    FP4MOE_CUDA_CHECK(cudaMalloc(&in, n * 2));
    fill_random_bf16(in, n, 0xfeed + gib, 4.0f, ctx.timer.stream());
    std::uint8_t *data = nullptr, *scales = nullptr;
    float *global = nullptr, *encode = nullptr;
    FP4MOE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data), n / 2));
    FP4MOE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&scales), scale_bytes(ScaleLayout::kTiled128x4, rows, k / 16)));
    FP4MOE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&global), 4));
    FP4MOE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&encode), 4));
    const float g = 2688.0f / 4.0f;
    detail::upload(encode, &g, 4, ctx.timer.stream());
    const MatrixView src{in, DType::kBF16, rows, k};

    struct Variant { const char* label; Fp4Format f; ScaleLayout l; bool given_g; };
    const Variant variants[] = {
        {"nvfp4 g given, tiled scales", Fp4Format::kNVFP4, ScaleLayout::kTiled128x4, true},
        {"nvfp4 g given, row-major scales", Fp4Format::kNVFP4, ScaleLayout::kRowMajor, true},
        {"nvfp4 g from amax (2 passes)", Fp4Format::kNVFP4, ScaleLayout::kTiled128x4, false},
        {"mxfp4, tiled scales", Fp4Format::kMXFP4, ScaleLayout::kTiled128x4, false},
    };
    for (const Variant& v : variants) {
      Fp4Tensor dst;
      dst.data = data;
      dst.scales = scales;
      dst.format = v.f;
      dst.scale_layout = v.l;
      dst.rows = rows;
      dst.cols = k;
      dst.global_scale = v.f == Fp4Format::kNVFP4 ? global : nullptr;
      Row r;
      r.suite = "quantize";
      r.name = "bf16 " + std::to_string(gib) + " GiB -> " + v.label;
      r.impl = "fp4moe";
      r.bytes = double(n) * 2 + double(dst.data_bytes()) + double(dst.scale_bytes_total());
      r.ceiling = CeilingKind::kCopy;
      const float* e = v.given_g ? encode : nullptr;
      ctx.add(r, [&](cudaStream_t s) { quantize(src, dst, s, e); });
    }
    cudaFree(in);
    cudaFree(data);
    cudaFree(scales);
    cudaFree(global);
    cudaFree(encode);
  }
}

}  // namespace fp4moe::bench
