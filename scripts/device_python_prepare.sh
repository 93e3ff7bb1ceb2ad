#!/usr/bin/env bash
# On the host, before scripts/device_python.sh runs on the lent GPU machine
# (which has python3 and PyTorch with CUDA but no network): builds
# libfp4moe_c.so into ${BUILD_DIR:-build} and installs pytest (pure Python)
# into .carry/pydeps, then prints the paths to carry with the call.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  JOBS=${JOBS:-2} BUILD_DIR=$BUILD_DIR scripts/build.sh >/dev/null
fi
cmake --build "$BUILD_DIR" --target fp4moe_c -j "${JOBS:-2}"
rm -rf .carry/pydeps
# pytest 8 runs on Python 3.8+; tomli and exceptiongroup are what it needs
# below Python 3.11.
python3 -m pip install -q --no-compile --target .carry/pydeps 'pytest>=8,<9' tomli exceptiongroup
scripts/device_commit.sh >/dev/null
du -ch "$BUILD_DIR/src/capi/libfp4moe_c.so" .carry/pydeps | tail -1
echo "carry: $BUILD_DIR/src/capi/libfp4moe_c.so .carry/pydeps .fp4moe_commit"
