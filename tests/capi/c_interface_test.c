/* The C interface used from C (not C++): the header compiles as C99, the
 * library links and loads, and a refused call reports its status and the
 * library's message. Runs without a GPU (label cpu). */
#include <stdio.h>
#include <string.h>

#include "fp4moe/fp4moe_c.h"

static int failures = 0;

static void expect(int ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "FAILED: %s\n", what);
    ++failures;
  }
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

  printf("%d passed, %d failed\n", failures ? 0 : 1, failures ? 1 : 0);
  return failures ? 1 : 0;
}
