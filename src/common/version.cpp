// The library version, from CMake's PROJECT_VERSION (set on this file only,
// so a version change recompiles one file).
#include "fp4moe/tuning.hpp"

#ifndef FP4MOE_VERSION
#error "FP4MOE_VERSION must be defined by the build (src/CMakeLists.txt)"
#endif

namespace fp4moe {

const char* library_version() { return FP4MOE_VERSION; }

}  // namespace fp4moe
