/* The C interface of fp4moe: a stable ABI over the C++ API for bindings
 * (the Python package binds it with ctypes, so it needs no compiler, Python
 * or PyTorch headers at build time).
 *
 * Conventions.
 *   - Every operation returns an fp4moe_status. On anything but FP4MOE_OK,
 *     fp4moe_last_error() returns the message of the C++ exception verbatim
 *     (for an invalid argument: "<function>: argument '<argument>': <rule>").
 *     The message is per thread and stays until the next failing call on
 *     that thread.
 *   - Tensors cross as descriptors of raw pointers, dtype codes, shapes and
 *     strides (counted in elements); the C++ library's own validation checks
 *     them before anything is launched, and a refused call writes nothing.
 *   - GPU operations take device pointers and run asynchronously on `stream`
 *     (a cudaStream_t; null is the legacy default stream) of the current
 *     device; they do no host synchronisation and can be captured in a CUDA
 *     graph. Functions named fp4moe_cpu_* take host pointers and run on the
 *     calling thread.
 *   - The descriptors and enum values below are part of the ABI: any change
 *     to them bumps FP4MOE_C_ABI_VERSION, which fp4moe_abi_version() reports
 *     so a binding can refuse a library it was not written for.
 */
#ifndef FP4MOE_FP4MOE_C_H_
#define FP4MOE_FP4MOE_C_H_

#include <stdint.h>

#define FP4MOE_C_API __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

#define FP4MOE_C_ABI_VERSION 1

typedef enum {
  FP4MOE_OK = 0,
  FP4MOE_ERROR_INVALID_ARGUMENT = 1, /* fp4moe::InvalidArgument: nothing ran */
  FP4MOE_ERROR_CUDA = 2,             /* fp4moe::CudaError: a CUDA runtime call failed */
  FP4MOE_ERROR_OUT_OF_MEMORY = 3,    /* std::bad_alloc on the host */
  FP4MOE_ERROR_LIBRARY = 4,          /* any other fp4moe::Error, e.g. a split-K workspace that
                                        would have to grow during CUDA-graph capture */
  FP4MOE_ERROR_INTERNAL = 5          /* any other exception */
} fp4moe_status;

/* Values of fp4moe::DType, Fp4Format and ScaleLayout (include/fp4moe/types.hpp). */
typedef enum {
  FP4MOE_DTYPE_E2M1X2 = 0,
  FP4MOE_DTYPE_E4M3 = 1,
  FP4MOE_DTYPE_UE8M0 = 2,
  FP4MOE_DTYPE_BF16 = 3,
  FP4MOE_DTYPE_FP32 = 4,
  FP4MOE_DTYPE_I32 = 5
} fp4moe_dtype;

typedef enum { FP4MOE_FORMAT_NVFP4 = 0, FP4MOE_FORMAT_MXFP4 = 1 } fp4moe_format;

typedef enum { FP4MOE_SCALES_ROW_MAJOR = 0, FP4MOE_SCALES_TILED_128X4 = 1 } fp4moe_scale_layout;

/* Operation families, for listing compiled tactics. */
typedef enum {
  FP4MOE_LAYOUT_DENSE = 0,      /* fp4_gemm_nt */
  FP4MOE_LAYOUT_CONTIGUOUS = 1, /* m_grouped_fp4_gemm_nt_contiguous */
  FP4MOE_LAYOUT_MASKED = 2,     /* m_grouped_fp4_gemm_nt_masked */
  FP4MOE_LAYOUT_MOE_DENSE = 3,  /* moe_dense_fc2 */
  FP4MOE_LAYOUT_MOE_FC1 = 4     /* moe_dense_fc1_swiglu */
} fp4moe_gemm_layout;

/* fp4moe::MatrixView: a row-major matrix, optionally a stack of `groups`. */
typedef struct {
  void* data;
  int32_t dtype; /* fp4moe_dtype */
  int64_t rows;
  int64_t cols;
  int64_t row_stride;   /* elements between rows; 0 means cols */
  int64_t col_stride;   /* elements between columns */
  int64_t groups;
  int64_t group_stride; /* elements between groups; 0 means rows * row_stride */
} fp4moe_matrix;

/* fp4moe::Fp4Tensor: K-major packed FP4 [groups, rows, cols / 2] bytes, block
 * scales in `scale_layout`, NVFP4 global decode scales (one float per group). */
typedef struct {
  void* data;
  void* scales;
  float* global_scale; /* NVFP4: required; MXFP4: null */
  int32_t format;       /* fp4moe_format */
  int32_t scale_layout; /* fp4moe_scale_layout */
  int64_t rows;
  int64_t cols; /* K, in elements */
  int64_t groups;
} fp4moe_fp4_tensor;

/* fp4moe::GemmTactic. Passing a null tactic lets the heuristic choose. */
typedef struct {
  int32_t swap_ab; /* 0 or 1 */
  int32_t block_n;
  int32_t block_k;
  int32_t stages;
  int32_t split_k; /* 1, 2, 4 or 8 */
} fp4moe_tactic;

/* ------------------------------------------------------------ library ---- */

/* FP4MOE_C_ABI_VERSION of the built library. */
FP4MOE_C_API int32_t fp4moe_abi_version(void);
/* The library's version, "major.minor.patch". */
FP4MOE_C_API const char* fp4moe_version(void);
/* The message of this thread's last failed call ("" if none). */
FP4MOE_C_API const char* fp4moe_last_error(void);
/* For FP4MOE_ERROR_CUDA: the cudaError_t of this thread's last failed call (0 otherwise). */
FP4MOE_C_API int32_t fp4moe_last_cuda_error(void);

/* ------------------------------------------------- quantize (GPU) ---- */

/* include/fp4moe/quantize.hpp. encode_scale: device pointer to g per group, or
 * null to derive g from amax(src). */
FP4MOE_C_API fp4moe_status fp4moe_quantize_nvfp4(const fp4moe_matrix* src, const fp4moe_fp4_tensor* dst,
                                                 const float* encode_scale, void* stream);
FP4MOE_C_API fp4moe_status fp4moe_quantize_mxfp4(const fp4moe_matrix* src, const fp4moe_fp4_tensor* dst, void* stream);
/* Per-group amax of the finite elements into amax[groups] (device). */
FP4MOE_C_API fp4moe_status fp4moe_compute_amax(const fp4moe_matrix* src, float* amax, void* stream);
FP4MOE_C_API fp4moe_status fp4moe_dequantize(const fp4moe_fp4_tensor* src, const fp4moe_matrix* dst, void* stream);
FP4MOE_C_API fp4moe_status fp4moe_convert_scale_layout(const void* src, int32_t src_layout, void* dst, int32_t dst_layout,
                                                       int64_t rows, int64_t cols, int64_t groups, void* stream);
/* g = 448*6 / amax (1 for 0 or non-finite amax). Cannot fail. */
FP4MOE_C_API float fp4moe_nvfp4_global_encode_scale(float amax);

/* ------------------------------------------------- quantize (CPU) ---- */

FP4MOE_C_API fp4moe_status fp4moe_cpu_quantize_nvfp4(const fp4moe_matrix* src, const fp4moe_fp4_tensor* dst,
                                                     const float* encode_scale);
FP4MOE_C_API fp4moe_status fp4moe_cpu_quantize_mxfp4(const fp4moe_matrix* src, const fp4moe_fp4_tensor* dst);
FP4MOE_C_API fp4moe_status fp4moe_cpu_dequantize(const fp4moe_fp4_tensor* src, const fp4moe_matrix* dst);
FP4MOE_C_API fp4moe_status fp4moe_cpu_convert_scale_layout(const void* src, int32_t src_layout, void* dst,
                                                           int32_t dst_layout, int64_t rows, int64_t cols,
                                                           int64_t groups);

/* ----------------------------------------------------------- GEMMs ---- */

/* include/fp4moe/gemm.hpp. `tactic` may be null (heuristic). */
FP4MOE_C_API fp4moe_status fp4moe_fp4_gemm_nt(const fp4moe_fp4_tensor* a, const fp4moe_fp4_tensor* b,
                                              const fp4moe_matrix* d, const fp4moe_tactic* tactic, void* stream);
FP4MOE_C_API fp4moe_status fp4moe_m_grouped_fp4_gemm_nt_contiguous(const fp4moe_fp4_tensor* a,
                                                                   const fp4moe_fp4_tensor* b, const fp4moe_matrix* d,
                                                                   const int32_t* m_indices,
                                                                   const fp4moe_tactic* tactic, void* stream);
FP4MOE_C_API fp4moe_status fp4moe_m_grouped_fp4_gemm_nt_masked(const fp4moe_fp4_tensor* a, const fp4moe_fp4_tensor* b,
                                                               const fp4moe_matrix* d, const int32_t* masked_m,
                                                               int32_t expected_m, const fp4moe_tactic* tactic,
                                                               void* stream);
/* Rows of each expert in the contiguous layout start at a multiple of this. */
FP4MOE_C_API int32_t fp4moe_contiguous_alignment(void);

/* ------------------------------------------------------------- MoE ---- */

/* include/fp4moe/moe.hpp. */
FP4MOE_C_API fp4moe_status fp4moe_moe_dense_fc2(const fp4moe_fp4_tensor* a, const fp4moe_fp4_tensor* b,
                                                const fp4moe_matrix* alpha, int32_t expert_width,
                                                const fp4moe_matrix* d, const fp4moe_tactic* tactic, void* stream);
/* BF16 output into d. expert_scale: device [E] or null. */
FP4MOE_C_API fp4moe_status fp4moe_moe_dense_fc1_swiglu(const fp4moe_fp4_tensor* a, const fp4moe_fp4_tensor* b,
                                                       const float* expert_scale, const fp4moe_matrix* d,
                                                       const fp4moe_tactic* tactic, void* stream);
/* NVFP4 output (tiled scales) into out, with the caller's encode scale g. */
FP4MOE_C_API fp4moe_status fp4moe_moe_dense_fc1_swiglu_nvfp4(const fp4moe_fp4_tensor* a, const fp4moe_fp4_tensor* b,
                                                             const float* expert_scale, const fp4moe_fp4_tensor* out,
                                                             const float* encode_scale, const fp4moe_tactic* tactic,
                                                             void* stream);
FP4MOE_C_API fp4moe_status fp4moe_moe_routing_alpha(const int32_t* topk_ids, const float* topk_weights, int32_t top_k,
                                                    const float* expert_scale, const fp4moe_matrix* alpha,
                                                    void* stream);

/* --------------------------------------------------------- tactics ---- */

/* The tactics compiled for a format (fp4moe_format) and layout
 * (fp4moe_gemm_layout), each listed with split_k = 1 (each also runs with
 * split_k 2, 4 or 8 where its tile allows). Writes at most `capacity` into
 * `out` (which may be null when capacity is 0) and the total to *count. */
FP4MOE_C_API fp4moe_status fp4moe_gemm_tactics(int32_t format, int32_t layout, fp4moe_tactic* out, int32_t capacity,
                                               int32_t* count);
/* GemmTactic::name() into buf (NUL-terminated, truncated to `size`). */
FP4MOE_C_API fp4moe_status fp4moe_tactic_name(const fp4moe_tactic* tactic, char* buf, int32_t size);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // FP4MOE_FP4MOE_C_H_
