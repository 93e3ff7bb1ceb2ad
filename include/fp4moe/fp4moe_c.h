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
 *     device (a stream of another device is refused, outside graph
 *     capture: FP4MOE_ERROR_INVALID_ARGUMENT naming `stream`); they do no host
 *     synchronisation and can be captured in a CUDA graph, except where a
 *     GEMM must first make or grow the library's per-stream workspace
 *     (include/fp4moe/gemm.hpp: run such a call once before capturing).
 *     Functions named fp4moe_cpu_* take host pointers and run on the
 *     calling thread.
 *   - The descriptors and enum values below are part of the ABI: any change
 *     to them bumps FP4MOE_C_ABI_VERSION, which fp4moe_abi_version() reports
 *     so a binding can refuse a library it was not written for. New
 *     functions come without a bump (a binding finds them missing from an
 *     older library by name).
 */
#ifndef FP4MOE_FP4MOE_C_H_
#define FP4MOE_FP4MOE_C_H_

#include <stdint.h>

#define FP4MOE_C_API __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

/* 2: the tuning functions and descriptors (fp4moe_tune_*); 3: fp4moe_tactic.moe_gather;
 * 4: fp4moe_tactic.fp8 and .cluster; 5: fp4moe_fp4_tensor.prepacked. */
#define FP4MOE_C_ABI_VERSION 5

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

/* Operation families, for listing compiled tactics and naming the operation
 * of a tuning problem. */
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
  int32_t prepacked; /* 0, or 1: data in the prepacked bit order of fp4moe_prepack_weights (a GEMM's weights only) */
} fp4moe_fp4_tensor;

/* fp4moe::GemmTactic. A null tactic: the tuning cache's for the call if it has one, else the heuristic's. */
typedef struct {
  int32_t swap_ab; /* 0 or 1 */
  int32_t block_n;
  int32_t block_k;
  int32_t stages;
  int32_t split_k; /* 1, 2, 3, 4, 6 or 8; 0: stream-K (not the masked layout) */
  int32_t moe_gather; /* 0 or 1: moe_dense_fc2's gathered formulation (GemmTactic::moe_gather) */
  int32_t fp8; /* 0 or 1: MXFP4's FP8 route (GemmTactic::fp8) */
  int32_t cluster; /* 1 or 2: CTAs per cluster (GemmTactic::cluster); 0 reads as 1 */
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

/* ---------------------------------------------------- workspace ---- */

/* include/fp4moe/workspace.hpp: the bytes the library holds for `stream` (a
 * cudaStream_t) on the current device, into *bytes. */
FP4MOE_C_API fp4moe_status fp4moe_workspace_bytes(void* stream, uint64_t* bytes);
/* Waits for the work queued on `stream`, frees the library's buffers for it on
 * the current device and writes the bytes freed to *freed_bytes (may be null).
 * A buffer a captured CUDA graph uses stays allocated. FP4MOE_ERROR_INVALID_ARGUMENT
 * while `stream` is capturing. */
FP4MOE_C_API fp4moe_status fp4moe_release_workspace(void* stream, uint64_t* freed_bytes);

/* ------------------------------------------------- quantize (GPU) ---- */

/* include/fp4moe/quantize.hpp. encode_scale: device pointer to g per group, or
 * null to derive g from amax(src). */
FP4MOE_C_API fp4moe_status fp4moe_quantize_nvfp4(const fp4moe_matrix* src, const fp4moe_fp4_tensor* dst,
                                                 const float* encode_scale, void* stream);
FP4MOE_C_API fp4moe_status fp4moe_quantize_mxfp4(const fp4moe_matrix* src, const fp4moe_fp4_tensor* dst, void* stream);
/* Per-group amax of the finite elements into amax[groups] (device). */
FP4MOE_C_API fp4moe_status fp4moe_compute_amax(const fp4moe_matrix* src, float* amax, void* stream);
FP4MOE_C_API fp4moe_status fp4moe_dequantize(const fp4moe_fp4_tensor* src, const fp4moe_matrix* dst, void* stream);
/* fp4moe::prepack_weights: writes weights->data's bits in the prepacked order into dst_data (may equal
 * weights->data); the caller then passes a copy of *weights with data = dst_data and prepacked = 1. */
FP4MOE_C_API fp4moe_status fp4moe_prepack_weights(const fp4moe_fp4_tensor* weights, void* dst_data, void* stream);
FP4MOE_C_API fp4moe_status fp4moe_convert_scale_layout(const void* src, int32_t src_layout, void* dst, int32_t dst_layout,
                                                       int64_t rows, int64_t cols, int64_t groups, void* stream);
/* g = 448*6 / amax (1 for 0 or non-finite amax). Cannot fail. */
FP4MOE_C_API float fp4moe_nvfp4_global_encode_scale(float amax);

/* ------------------------------------------------- quantize (CPU) ---- */

FP4MOE_C_API fp4moe_status fp4moe_cpu_quantize_nvfp4(const fp4moe_matrix* src, const fp4moe_fp4_tensor* dst,
                                                     const float* encode_scale);
FP4MOE_C_API fp4moe_status fp4moe_cpu_quantize_mxfp4(const fp4moe_matrix* src, const fp4moe_fp4_tensor* dst);
FP4MOE_C_API fp4moe_status fp4moe_cpu_dequantize(const fp4moe_fp4_tensor* src, const fp4moe_matrix* dst);
FP4MOE_C_API fp4moe_status fp4moe_cpu_prepack_weights(const fp4moe_fp4_tensor* weights, void* dst_data);
FP4MOE_C_API fp4moe_status fp4moe_cpu_convert_scale_layout(const void* src, int32_t src_layout, void* dst,
                                                           int32_t dst_layout, int64_t rows, int64_t cols,
                                                           int64_t groups);

/* ----------------------------------------------------------- GEMMs ---- */

/* include/fp4moe/gemm.hpp. `tactic` may be null (tuning cache, else heuristic). */
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
/* The same with GemmOptions::moe_top_k = top_k: the experts each token routes
 * to, a hint for the tactic choice (0: unknown). */
FP4MOE_C_API fp4moe_status fp4moe_moe_dense_fc2_topk(const fp4moe_fp4_tensor* a, const fp4moe_fp4_tensor* b,
                                                     const fp4moe_matrix* alpha, int32_t expert_width, int32_t top_k,
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
 * split_k 2, 3, 4, 6, 8 or 0 = stream-K where its tile allows). Writes at most `capacity` into
 * `out` (which may be null when capacity is 0) and the total to *count. */
FP4MOE_C_API fp4moe_status fp4moe_gemm_tactics(int32_t format, int32_t layout, fp4moe_tactic* out, int32_t capacity,
                                               int32_t* count);
/* GemmTactic::name() into buf (NUL-terminated, truncated to `size`). */
FP4MOE_C_API fp4moe_status fp4moe_tactic_name(const fp4moe_tactic* tactic, char* buf, int32_t size);

/* ---------------------------------------------------------- tuning ---- */

/* include/fp4moe/tuning.hpp: the autotuner and its persistent cache. Every
 * GEMM entry point called without a tactic runs the cache's tactic for its
 * problem if it has one, else the heuristic's. The cache file is JSON, one
 * per library version, tactic set and device; its location, first that
 * applies: fp4moe_set_tuning_cache_path(), $FP4MOE_TUNING_CACHE ("off"
 * disables it), $XDG_CACHE_HOME/fp4moe/tuning.json, $HOME/.cache/fp4moe/tuning.json.
 *
 * Strings come back through (buf, size, *length): at most size - 1 bytes and
 * a NUL are written (nothing when size is 0, and buf may then be null);
 * *length receives the whole string's length, so a caller whose buffer was
 * too small calls again with length + 1. */

/* What an operation writes (fp4moe::GemmOutput). */
typedef enum { FP4MOE_OUTPUT_BF16 = 0, FP4MOE_OUTPUT_FP32 = 1, FP4MOE_OUTPUT_NVFP4 = 2 } fp4moe_gemm_output;

/* fp4moe::TuneShape: one problem to tune. m: tokens per group as the entry
 * point sees them (dense, MoE: rows of A; contiguous: rows / groups; masked:
 * expected_m), tuned for the bucket holding it. n: weight rows per group
 * (moe_fc1: 2I). k: K (moe_fc2: 0 or groups * expert_width). groups:
 * contiguous/masked G, MoE E, dense 1. expert_width: moe_fc2 W, else 0.
 * top_k: moe_fc2 only, the routing of the tuner's alpha (0: every token uses
 * every expert); not part of the cache key. */
typedef struct {
  int32_t op;     /* fp4moe_gemm_layout */
  int32_t format; /* fp4moe_format */
  int32_t out;    /* fp4moe_gemm_output: bf16/fp32, or bf16/nvfp4 for moe_fc1 */
  int32_t top_k;
  int64_t m;
  int64_t n;
  int64_t k;
  int64_t groups;
  int64_t expert_width;
} fp4moe_tune_shape;

/* Called after every timed tactic (and once before each shape's first) on
 * the thread that called fp4moe_tune. Returning non-zero stops tuning:
 * fp4moe_tune then fails with FP4MOE_ERROR_LIBRARY; the shapes finished
 * before stay in the cache. */
typedef int32_t (*fp4moe_tune_progress_fn)(int64_t shape_index, int64_t shapes, int64_t tactics_done, int64_t tactics,
                                           double elapsed_s, void* user);

/* fp4moe::TuneOptions; fp4moe_tune_options_default gives its defaults. */
typedef struct {
  int32_t warmup;         /* untimed runs per tactic (default 3) */
  int32_t reps;           /* timed runs per tactic, the median counts (default 20) */
  int32_t cold_l2;        /* 1: evict L2 before every timed run (default), 0: warm */
  int32_t write_cache;    /* 1: merge the results into the cache file (default) */
  int64_t max_m;          /* the largest bucket tuned: a multiple of 128, at least 128 (default 8192) */
  const char* cache_path; /* the file to write; null or "": the current cache path */
  fp4moe_tune_progress_fn progress; /* may be null */
  void* progress_user;    /* passed to progress */
} fp4moe_tune_options;

/* fp4moe::TuneResult, in brief (the cache listing has every tactic's fate).
 * A bucket up to 128 is timed at its own token count; a 128-wide one at
 * three (bucket - 96, bucket - 32, bucket), so that its tactic suits the
 * whole bucket. */
typedef struct {
  int64_t bucket;          /* the bucket tuned (its largest token count) */
  int32_t ok;              /* 1: a usable tactic was found (and cached) */
  int32_t candidates;      /* tactics timed */
  int32_t unusable;        /* of which failed (recorded as unusable) */
  fp4moe_tactic best;      /* the tactic cached (when ok): the fastest at a one-point bucket; else
                              the one whose worst slowdown against each point's fastest is least */
  double best_us;          /* its time at the bucket */
  fp4moe_tactic heuristic; /* the heuristic's choice for the same problem */
  double heuristic_us;     /* its time at the bucket in the same run (0 if it failed) */
} fp4moe_tune_result;

FP4MOE_C_API fp4moe_status fp4moe_tune_options_default(fp4moe_tune_options* options);
/* Tunes `count` shapes on the current device (GPU; it allocates, synchronises
 * and frees) and merges the results into the cache file. options: null for
 * the defaults. results: null, or `count` results. Every argument is checked
 * before the GPU is touched. */
FP4MOE_C_API fp4moe_status fp4moe_tune(const fp4moe_tune_shape* shapes, int32_t count, const fp4moe_tune_options* options,
                                       fp4moe_tune_result* results);
/* Parses a shape list (the format of `fp4moe tune --shapes FILE`, in the
 * README) into shapes, one per bucket, each checked by fp4moe_tune's rules.
 * name: the list's name in messages ("<name>:<line>: ..."; null: "shapes").
 * max_m: as in fp4moe_tune_options (0: 8192). Writes at most `capacity`
 * shapes to `out` (null when capacity is 0) and the total to *count. CPU only. */
FP4MOE_C_API fp4moe_status fp4moe_parse_shape_list(const char* text, const char* name, int64_t max_m,
                                                    fp4moe_tune_shape* out, int32_t capacity, int32_t* count);
/* The bucket holding m (rounded up: 1, 2, 4, then every 8 to 128, then every 128), or 0
 * when it is past max_m (the heuristic decides there). CPU only. */
FP4MOE_C_API fp4moe_status fp4moe_tuning_bucket(int64_t m, int64_t max_m, int64_t* bucket);
/* Uses `path` as the cache file in this process; null or "": back to the
 * environment's choice. The next lookup reads the file. */
FP4MOE_C_API fp4moe_status fp4moe_set_tuning_cache_path(const char* path);
/* The cache file in effect ("" when disabled or when there is no HOME). */
FP4MOE_C_API fp4moe_status fp4moe_tuning_cache_path(char* buf, int64_t size, int64_t* length);
/* 0: every call without a tactic runs the heuristic's; 1: the cache's (default). */
FP4MOE_C_API fp4moe_status fp4moe_set_tuning_cache_enabled(int32_t enabled);
/* Reads the cache file now for the current device; *entries: the usable
 * entries (0 for a missing, refused or corrupt file: the reason goes to stderr). */
FP4MOE_C_API fp4moe_status fp4moe_load_tuning_cache(int64_t* entries);
/* Forgets what was read: the next lookup reads the file again. */
FP4MOE_C_API fp4moe_status fp4moe_reload_tuning_cache(void);
/* The current device's cached tactic for a problem: *found = 1 and *tactic
 * set, or *found = 0 (the heuristic would decide). */
FP4MOE_C_API fp4moe_status fp4moe_cached_tactic(const fp4moe_tune_shape* shape, fp4moe_tactic* tactic, int32_t* found);
/* A readable listing of a cache file (path null or "": the current one):
 * whether it is usable here, and every entry. A bad file is described, not
 * an error. Needs no GPU (without one, only the build is compared). */
FP4MOE_C_API fp4moe_status fp4moe_describe_tuning_cache(const char* path, char* buf, int64_t size, int64_t* length);
/* The tactic-space version (16 hex digits), part of a cache's identity. */
FP4MOE_C_API fp4moe_status fp4moe_tactic_space_version(char* buf, int64_t size, int64_t* length);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // FP4MOE_FP4MOE_C_H_
