#include "kernels/sm90/tensor_map.hpp"

#include <cuda_runtime_api.h>

#include <mutex>
#include <string>

#include "common/cuda_check.hpp"
#include "fp4moe/error.hpp"

namespace fp4moe::kernels {
namespace {

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

EncodeTiled encode_fn() {
  static EncodeTiled fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    FP4MOE_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || p == nullptr) throw CudaError("cuTensorMapEncodeTiled is not available", 0);
    return reinterpret_cast<EncodeTiled>(p);
  }();
  return fn;
}

/// One tiled map with unit element strides, no interleave and no
/// out-of-bounds fill (what every map here wants); throws on failure.
CUtensorMap encode(CUtensorMapDataType type, cuuint32_t rank, const void* data, const cuuint64_t* dims,
                   const cuuint64_t* strides, const cuuint32_t* box, CUtensorMapSwizzle swizzle,
                   CUtensorMapL2promotion l2) {
  CUtensorMap map{};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  const CUresult r = encode_fn()(&map, type, rank, const_cast<void*>(data), dims, strides, box, elem_strides,
                                 CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, l2, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw CudaError("cuTensorMapEncodeTiled failed with " + std::to_string(int(r)), int(r));
  return map;
}

}  // namespace

CUtensorMap make_fp4_tensor_map(const void* data, std::int64_t rows, std::int64_t k, int box_rows, int box_k) {
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(k / 2), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(k / 2)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(box_k / 2), static_cast<cuuint32_t>(box_rows)};
  const CUtensorMapSwizzle swizzle = box_k / 2 == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                     : box_k / 2 == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                                       : CU_TENSOR_MAP_SWIZZLE_128B;
  return encode(CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, data, dims, strides, box, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
}

CUtensorMap make_bf16_rows_tensor_map(const void* data, std::int64_t groups, std::int64_t rows, std::int64_t cols,
                                      int box_rows, int l2_promotion_bytes) {
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows),
                              static_cast<cuuint64_t>(groups)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(cols * 2), static_cast<cuuint64_t>(rows * cols * 2)};
  const cuuint32_t box[3] = {64, static_cast<cuuint32_t>(box_rows), 1};
  return encode(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, data, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B,
                l2_promotion_bytes == 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B : CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
}

CUtensorMap make_gathered_tokens_tensor_map(const void* data, std::int64_t rows, std::int64_t cols, int box_rows,
                                            int box_k) {
  const cuuint64_t dims[3] = {64, static_cast<cuuint64_t>(rows), static_cast<cuuint64_t>(cols / 64)};
  const cuuint64_t strides[2] = {128, static_cast<cuuint64_t>(rows * 128)};
  const cuuint32_t box[3] = {64, static_cast<cuuint32_t>(box_rows), static_cast<cuuint32_t>(box_k / 64)};
  return encode(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, data, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
}

CUtensorMap make_bf16_output_tensor_map(void* data, std::int64_t rows, std::int64_t cols, std::int64_t ld, int box_rows) {
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(ld * 2)};
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(box_rows)};
  return encode(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, data, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_NONE);
}

}  // namespace fp4moe::kernels
