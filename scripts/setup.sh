#!/usr/bin/env bash
# Checks (and where it can, installs) what building fp4moe needs.
#   CMake >= 3.24, a C++20 compiler, Ninja (optional), GoogleTest,
#   the CUDA toolkit 12.8+ with nvcc and cuBLASLt (cannot be installed here).
# Installs missing Debian packages with apt-get when run as root (or with sudo),
# and a newer CMake from PyPI when the system one is too old.
set -euo pipefail

missing_pkgs=()
have() { command -v "$1" >/dev/null 2>&1; }
say() { printf 'setup: %s\n' "$*"; }

have g++ || missing_pkgs+=(g++)
have cmake || missing_pkgs+=(cmake)
have ninja || missing_pkgs+=(ninja-build)
if [ ! -f /usr/include/gtest/gtest.h ] && [ ! -f /usr/local/include/gtest/gtest.h ]; then
  missing_pkgs+=(libgtest-dev)
fi

if [ ${#missing_pkgs[@]} -gt 0 ]; then
  if have apt-get; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && have sudo && SUDO="sudo"
    say "installing ${missing_pkgs[*]} with apt-get"
    $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing_pkgs[@]}" >/dev/null
  else
    say "missing ${missing_pkgs[*]} and no apt-get to install them: install them by hand" >&2
    exit 1
  fi
fi

# CMake 3.24+ (CUDA architecture handling used by the build).
cmake_version=$(cmake --version | head -1 | awk '{print $3}')
if [ "$(printf '%s\n3.24\n' "$cmake_version" | sort -V | head -1)" != "3.24" ]; then
  say "CMake $cmake_version is older than 3.24: installing a newer one from PyPI"
  python3 -m pip install -q 'cmake>=3.24'
fi

# The CUDA toolkit cannot be installed by this script.
NVCC=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [ ! -x "$NVCC" ]; then
  say "no nvcc found (looked at \$CUDACXX, PATH and /usr/local/cuda/bin)." >&2
  say "Install the CUDA toolkit 12.8 or newer (13.0 tested) from NVIDIA; this script cannot." >&2
  exit 1
fi
cuda_version=$("$NVCC" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
if [ "$(printf '%s\n12.8\n' "$cuda_version" | sort -V | head -1)" != "12.8" ]; then
  say "nvcc $cuda_version is older than 12.8 (needed for C++20 device code and the FP4/FP8 headers)" >&2
  exit 1
fi
CUDA_ROOT=$(dirname "$(dirname "$NVCC")")
if ! ls "$CUDA_ROOT"/lib64/libcublasLt.so* >/dev/null 2>&1 && ! ls "$CUDA_ROOT"/targets/*/lib/libcublasLt.so* >/dev/null 2>&1; then
  say "cuBLASLt not found under $CUDA_ROOT (part of the CUDA toolkit; the benchmark's peers need it)" >&2
  exit 1
fi
# cuobjdump and nvdisasm, for the stage-release check on the built kernels
# (ctest SassReleaseAudit, scripts/check_sass_releases.sh): part of the CUDA
# toolkit, but some installs leave them out; NVIDIA's PyPI build of them then
# goes into .tools/cuda. Without them that one test is skipped.
root=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -x "$CUDA_ROOT/bin/cuobjdump" ] && ! have cuobjdump &&
   [ -z "$(find "$root/.tools/cuda" -name cuobjdump -type f 2>/dev/null | head -1)" ]; then
  major=${cuda_version%%.*}
  say "no cuobjdump: installing NVIDIA's cuobjdump and nvdisasm $major.x from PyPI into .tools/cuda"
  PIP_ROOT_USER_ACTION=ignore python3 -m pip install -q --target "$root/.tools/cuda" "nvidia-cuda-cuobjdump==$major.*" "nvidia-cuda-nvdisasm==$major.*" ||
    say "could not install them: the SASS release check will be skipped"
fi
say "ok: $(g++ --version | head -1), cmake $(cmake --version | head -1 | awk '{print $3}'), nvcc $cuda_version"
