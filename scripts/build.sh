#!/usr/bin/env bash
# Configures and builds fp4moe (Release) into ${BUILD_DIR:-build}.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-}
fi
# ptxas reports serialised wgmma (every MMA waited on alone: a kernel several
# times slower, no compiler warning) as "info"; a build that shows one fails.
log="$BUILD_DIR/build_output.log"
cmake --build "$BUILD_DIR" -j "$JOBS" 2>&1 | tee "$log"
if grep -q "wgmma.mma_async instructions are serialized" "$log"; then
  grep "wgmma.mma_async instructions are serialized" "$log" | cut -c1-300 >&2
  echo "build.sh: ptxas serialised wgmma in the kernels above (register pressure); see $log" >&2
  exit 1
fi
