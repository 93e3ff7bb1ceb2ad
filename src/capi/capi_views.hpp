// From the C descriptors to the C++ views. The enum codes are checked here
// (a code outside its enum is refused naming the argument); everything else
// (shapes, strides, alignment, null data) is left to the library's own
// validation, so its messages reach the caller unchanged. Entry points
// convert their descriptors in argument order (one statement each), so of
// several bad descriptors the first is the one reported. (A descriptor is
// converted before the library checks the plain pointers and numbers: a
// null descriptor is reported before a bad pointer argument ahead of it.)
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "api/check.hpp"
#include "fp4moe/fp4moe_c.h"
#include "fp4moe/gemm.hpp"
#include "fp4moe/tensor.hpp"

namespace fp4moe::capi {

/// *m as a MatrixView; throws InvalidArgument (function `c`) naming `name`
/// when m is null or its dtype code is unknown.
MatrixView matrix_view(const detail::ArgCheck& c, const fp4moe_matrix* m, const std::string& name);

/// *t as an Fp4Tensor; same rules for null and the format/layout codes.
Fp4Tensor fp4_tensor(const detail::ArgCheck& c, const fp4moe_fp4_tensor* t, const std::string& name);

ScaleLayout scale_layout(const detail::ArgCheck& c, std::int32_t code, const std::string& name);
Fp4Format fp4_format(const detail::ArgCheck& c, std::int32_t code, const std::string& name);

/// A tactic (null stays "heuristic"); the result points into `storage`.
GemmOptions gemm_options(const fp4moe_tactic* tactic, GemmTactic& storage);

inline cudaStream_t stream_of(void* s) { return static_cast<cudaStream_t>(s); }

}  // namespace fp4moe::capi
