/* The C interface used from C (not C++): the header compiles as C99, the
 * library links and loads, and a refused call reports its status and the
 * library's message; the checks the C layer itself makes (null outputs,
 * negative sizes, enum codes) are each provoked. Runs without a GPU (label
 * cpu). */
#include <stdio.h>
#include <string.h>

#include "fp4moe/fp4moe_c.h"

static int checks = 0;
static int failures = 0;

static void expect(int ok, const char* what) {
  ++checks;
  if (!ok) {
    fprintf(stderr, "FAILED: %s\n", what);
    ++failures;
  }
}

/* A call refused as an invalid argument with exactly `message` as the last error. */
static void expect_refused(fp4moe_status s, const char* message) {
  const int ok = s == FP4MOE_ERROR_INVALID_ARGUMENT && strcmp(fp4moe_last_error(), message) == 0;
  expect(ok, message);
  if (!ok) fprintf(stderr, "  got status %d, last error \"%s\"\n", (int)s, fp4moe_last_error());
}

/* The C-side checks of fp4moe_gemm_tactics and fp4moe_tactic_name (capi_tactics.cpp). */
static void tactic_arguments(void) {
  int32_t count = -7;
  fp4moe_tactic t;
  char name[64];
  expect_refused(fp4moe_gemm_tactics(FP4MOE_FORMAT_NVFP4, FP4MOE_LAYOUT_DENSE, NULL, 0, NULL),
                 "gemm_tactics: argument 'count': must not be null");
  expect_refused(fp4moe_gemm_tactics(FP4MOE_FORMAT_NVFP4, FP4MOE_LAYOUT_DENSE, &t, -1, &count),
                 "gemm_tactics: argument 'capacity': must not be negative (got -1)");
  expect_refused(fp4moe_gemm_tactics(FP4MOE_FORMAT_NVFP4, FP4MOE_LAYOUT_DENSE, NULL, 1, &count),
                 "gemm_tactics: argument 'out': must not be null when capacity is positive");
  expect(count == -7, "a refused gemm_tactics writes no count");
  expect(fp4moe_gemm_tactics(FP4MOE_FORMAT_NVFP4, FP4MOE_LAYOUT_DENSE, &t, 1, &count) == FP4MOE_OK, "a tactic to name");
  expect_refused(fp4moe_tactic_name(NULL, name, (int32_t)sizeof name),
                 "tactic_name: argument 'tactic': must not be null");
  expect_refused(fp4moe_tactic_name(&t, NULL, 8), "tactic_name: argument 'buf': must not be null");
  name[0] = 'x';
  expect_refused(fp4moe_tactic_name(&t, name, 0), "tactic_name: argument 'size': must be positive (got 0)");
  expect(name[0] == 'x', "a refused tactic_name writes nothing");
}

/* The C-side checks of the tuning functions (capi_tuning.cpp); each is made
 * before anything touches a GPU or the cache file. */
static void tuning_arguments(void) {
  const fp4moe_tune_shape shape = {FP4MOE_LAYOUT_DENSE, FP4MOE_FORMAT_NVFP4, FP4MOE_OUTPUT_BF16, 0, 64, 256, 256, 1, 0};
  fp4moe_tactic tactic;
  int32_t found = -7;
  expect_refused(fp4moe_cached_tactic(NULL, &tactic, &found),
                 "cached_tactic: argument 'shape': must not be null (the fp4moe_tune_shape descriptor)");
  expect_refused(fp4moe_cached_tactic(&shape, NULL, &found), "cached_tactic: argument 'tactic': must not be null");
  expect_refused(fp4moe_cached_tactic(&shape, &tactic, NULL), "cached_tactic: argument 'found': must not be null");
  expect(found == -7, "a refused cached_tactic writes nothing");

  /* Strings out through (buf, size, *length): the same rules for each function. */
  char buf[8];
  int64_t length = -7;
  expect_refused(fp4moe_tuning_cache_path(buf, (int64_t)sizeof buf, NULL),
                 "tuning_cache_path: argument 'length': must not be null");
  expect_refused(fp4moe_tuning_cache_path(buf, -1, &length),
                 "tuning_cache_path: argument 'size': must not be negative (got -1)");
  expect_refused(fp4moe_tactic_space_version(buf, (int64_t)sizeof buf, NULL),
                 "tactic_space_version: argument 'length': must not be null");
  expect_refused(fp4moe_tactic_space_version(buf, -1, &length),
                 "tactic_space_version: argument 'size': must not be negative (got -1)");
  /* describe_tuning_cache checks `length` before it reads the file, the rest after
   * (a missing file is described, not refused). */
  const char* missing = "/nonexistent/fp4moe-c-test/tuning.json";
  expect_refused(fp4moe_describe_tuning_cache(missing, buf, (int64_t)sizeof buf, NULL),
                 "describe_tuning_cache: argument 'length': must not be null");
  expect_refused(fp4moe_describe_tuning_cache(missing, buf, -1, &length),
                 "describe_tuning_cache: argument 'size': must not be negative (got -1)");
  expect_refused(fp4moe_describe_tuning_cache(missing, NULL, 4, &length),
                 "describe_tuning_cache: argument 'buf': must not be null when size is positive");
  expect(length == -7, "a refused string copy writes no length");

  expect_refused(fp4moe_tune_options_default(NULL), "tune_options_default: argument 'options': must not be null");
  fp4moe_tune_options options;
  expect(fp4moe_tune_options_default(&options) == FP4MOE_OK, "default tuning options");
  options.write_cache = 2;
  expect_refused(fp4moe_tune(&shape, 1, &options, NULL),
                 "tune: argument 'options.write_cache': must be 0 or 1 (got 2)");

  /* parse_shape_list; max_m only through C (the Python binding checks it first). */
  const char* list = "dense nvfp4 bf16 m=64 n=256 k=256\n";
  fp4moe_tune_shape shapes[2];
  int32_t count = -7;
  expect_refused(fp4moe_parse_shape_list(NULL, NULL, 0, shapes, 2, &count),
                 "parse_shape_list: argument 'text': must not be null");
  expect_refused(fp4moe_parse_shape_list(list, NULL, 0, shapes, 2, NULL),
                 "parse_shape_list: argument 'count': must not be null");
  expect_refused(fp4moe_parse_shape_list(list, NULL, 0, shapes, -1, &count),
                 "parse_shape_list: argument 'capacity': must not be negative (got -1)");
  expect_refused(fp4moe_parse_shape_list(list, NULL, 0, NULL, 1, &count),
                 "parse_shape_list: argument 'out': must not be null when capacity is positive");
  expect_refused(fp4moe_parse_shape_list(list, NULL, 1000, shapes, 2, &count),
                 "parse_shape_list: argument 'max_m': must be 0 or a multiple of 128, at least 128 (got 1000)");
  /* A multiple of 128 that is not at least 128. */
  expect_refused(fp4moe_parse_shape_list(list, NULL, -128, shapes, 2, &count),
                 "parse_shape_list: argument 'max_m': must be 0 or a multiple of 128, at least 128 (got -128)");
  expect(count == -7, "a refused parse_shape_list writes no count");

  expect_refused(fp4moe_tuning_bucket(5, 8192, NULL), "tuning_bucket: argument 'bucket': must not be null");
  expect_refused(fp4moe_load_tuning_cache(NULL), "load_tuning_cache: argument 'entries': must not be null");
}

/* Scale-layout codes (capi_views.cpp): each converter's src_layout and dst_layout, and
 * a descriptor's .scale_layout. */
static void scale_layout_codes(void) {
  unsigned char src[4] = {1, 2, 3, 4}, dst[4] = {0, 0, 0, 0};
  expect_refused(fp4moe_convert_scale_layout(src, 9, dst, FP4MOE_SCALES_TILED_128X4, 1, 4, 1, NULL),
                 "convert_scale_layout: argument 'src_layout': must be FP4MOE_SCALES_ROW_MAJOR (0) or "
                 "FP4MOE_SCALES_TILED_128X4 (1) (got 9)");
  expect_refused(fp4moe_cpu_convert_scale_layout(src, -1, dst, FP4MOE_SCALES_ROW_MAJOR, 1, 4, 1),
                 "cpu::convert_scale_layout: argument 'src_layout': must be FP4MOE_SCALES_ROW_MAJOR (0) or "
                 "FP4MOE_SCALES_TILED_128X4 (1) (got -1)");
  expect_refused(fp4moe_cpu_convert_scale_layout(src, FP4MOE_SCALES_ROW_MAJOR, dst, 2, 1, 4, 1),
                 "cpu::convert_scale_layout: argument 'dst_layout': must be FP4MOE_SCALES_ROW_MAJOR (0) or "
                 "FP4MOE_SCALES_TILED_128X4 (1) (got 2)");
  expect(dst[0] == 0, "a refused conversion writes nothing");

  /* A valid MXFP4 tensor but for its layout code. */
  unsigned char data[16] = {0}, scale[1] = {127};
  float back[32];
  fp4moe_fp4_tensor t = {data, scale, NULL, FP4MOE_FORMAT_MXFP4, 5, 1, 32, 1, 0};
  fp4moe_matrix out = {back, FP4MOE_DTYPE_FP32, 1, 32, 0, 1, 1, 0};
  expect_refused(fp4moe_cpu_dequantize(&t, &out),
                 "cpu::dequantize: argument 'src.scale_layout': must be FP4MOE_SCALES_ROW_MAJOR (0) or "
                 "FP4MOE_SCALES_TILED_128X4 (1) (got 5)");
}

int main(void) {
  expect(fp4moe_abi_version() == FP4MOE_C_ABI_VERSION, "ABI version");
  expect(strlen(fp4moe_version()) > 0, "version string");
  expect(strcmp(fp4moe_last_error(), "") == 0, "no error before any call");

  fp4moe_status s = fp4moe_fp4_gemm_nt(NULL, NULL, NULL, NULL, NULL);
  expect(s == FP4MOE_ERROR_INVALID_ARGUMENT, "null descriptor refused");
  expect(strcmp(fp4moe_last_error(),
                "fp4_gemm_nt: argument 'a': must not be null (the fp4moe_fp4_tensor descriptor)") == 0,
         "message names the argument");

  /* The CPU quantizer: one MXFP4 block of the E2M1 values themselves. */
  const float values[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  float x[32];
  for (int i = 0; i < 32; ++i) x[i] = values[i % 16];
  unsigned char data[16], scale[1];
  fp4moe_matrix src = {x, FP4MOE_DTYPE_FP32, 1, 32, 0, 1, 1, 0};
  fp4moe_fp4_tensor dst = {data, scale, NULL, FP4MOE_FORMAT_MXFP4, FP4MOE_SCALES_ROW_MAJOR, 1, 32, 1, 0};
  expect(fp4moe_cpu_quantize_mxfp4(&src, &dst) == FP4MOE_OK, "CPU quantize runs");
  expect(scale[0] == 127, "MXFP4 scale 2^0");
  int codes_ok = 1;
  for (int i = 0; i < 32; ++i) codes_ok &= ((data[i / 2] >> (4 * (i % 2))) & 15) == i % 16;
  expect(codes_ok, "E2M1 codes");

  /* prepack_weights on the CPU: in place; a prepacked tensor is refused by the dequantizer and by a second prepack. */
  unsigned char packed[16];
  expect(fp4moe_cpu_prepack_weights(&dst, packed) == FP4MOE_OK, "CPU prepack runs");
  fp4moe_fp4_tensor pre = dst;
  pre.data = packed;
  pre.prepacked = 1;
  float back[32];
  fp4moe_matrix out = {back, FP4MOE_DTYPE_FP32, 1, 32, 0, 1, 1, 0};
  expect(fp4moe_cpu_dequantize(&pre, &out) == FP4MOE_ERROR_INVALID_ARGUMENT &&
             strstr(fp4moe_last_error(), "src.prepacked") != NULL,
         "dequantize refuses prepacked data");
  expect(fp4moe_cpu_prepack_weights(&pre, packed) == FP4MOE_ERROR_INVALID_ARGUMENT, "a second prepack is refused");
  pre.prepacked = 2;
  expect(fp4moe_cpu_prepack_weights(&pre, packed) == FP4MOE_ERROR_INVALID_ARGUMENT &&
             strstr(fp4moe_last_error(), "weights.prepacked") != NULL,
         "prepacked must be 0 or 1");

  int32_t count = 0;
  expect(fp4moe_gemm_tactics(FP4MOE_FORMAT_NVFP4, FP4MOE_LAYOUT_DENSE, NULL, 0, &count) == FP4MOE_OK && count > 0,
         "dense tactics listed");
  fp4moe_tactic t;
  expect(fp4moe_gemm_tactics(FP4MOE_FORMAT_NVFP4, FP4MOE_LAYOUT_DENSE, &t, 1, &count) == FP4MOE_OK, "first tactic");
  char name[64];
  expect(fp4moe_tactic_name(&t, name, (int32_t)sizeof name) == FP4MOE_OK && strstr(name, " bn") != NULL, "tactic name");

  /* Tuning, the parts that need no GPU: buckets, shape lists, the cache path. */
  int64_t bucket = 0;
  expect(fp4moe_tuning_bucket(129, 8192, &bucket) == FP4MOE_OK && bucket == 256, "bucket of 129");
  expect(fp4moe_tuning_bucket(8193, 8192, &bucket) == FP4MOE_OK && bucket == 0, "past the maximum: no bucket");
  fp4moe_tune_shape shapes[8];
  int32_t n = 0;
  expect(fp4moe_parse_shape_list("masked nvfp4 bf16 groups=8 m=1-24 n=4096 k=7168\n", NULL, 0, shapes, 8, &n) ==
                 FP4MOE_OK &&
             n == 6 && shapes[0].m == 1 && shapes[3].m == 8 && shapes[5].m == 24 &&
             shapes[0].op == FP4MOE_LAYOUT_MASKED && shapes[0].groups == 8,
         "shape list parsed, one shape per bucket");
  expect(fp4moe_parse_shape_list("dense nvfp4 bf16 m=1 n=256 k=250\n", "list", 0, shapes, 4, &n) ==
                 FP4MOE_ERROR_INVALID_ARGUMENT &&
             strstr(fp4moe_last_error(), "list:1: k must be a multiple of 32") != NULL,
         "a bad shape list names the line");
  expect(fp4moe_set_tuning_cache_path("/tmp/fp4moe-c-test.json") == FP4MOE_OK, "set the cache path");
  char path[64];
  int64_t length = 0;
  expect(fp4moe_tuning_cache_path(path, (int64_t)sizeof path, &length) == FP4MOE_OK &&
             strcmp(path, "/tmp/fp4moe-c-test.json") == 0 && length == (int64_t)strlen(path),
         "the cache path set is the one in effect");
  expect(fp4moe_set_tuning_cache_path(NULL) == FP4MOE_OK, "back to the default path");

  /* The workspace query checks its output pointer before it touches the GPU. */
  expect(fp4moe_workspace_bytes(NULL, NULL) == FP4MOE_ERROR_INVALID_ARGUMENT &&
             strcmp(fp4moe_last_error(), "workspace_bytes: argument 'bytes': must not be null") == 0,
         "workspace_bytes refuses a null output");

  tactic_arguments();
  tuning_arguments();
  scale_layout_codes();

  printf("%d checks: %d passed, %d failed\n", checks, checks - failures, failures);
  return failures ? 1 : 0;
}
