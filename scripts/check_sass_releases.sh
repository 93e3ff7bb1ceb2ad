#!/usr/bin/env bash
# The stage-release check as a test (ctest SassReleaseAudit): disassembles
# LIB (the built libfp4moe.a) and fails if a consumer releases a ring stage
# while one of its loads from the stage is still in flight
# (scripts/sass_release_audit.py; docs/PERF.md stop 24). cuobjdump comes from
# $CUOBJDUMP, the CUDA toolkit, PATH or .tools/cuda (scripts/setup.sh puts
# NVIDIA's PyPI build there when the toolkit lacks it); without one the test
# is skipped (exit 77).
set -uo pipefail
cd "$(dirname "$0")/.."
lib=${1:?usage: scripts/check_sass_releases.sh LIB}
nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
tool=""
for c in "${CUOBJDUMP:-}" "$(dirname "$nvcc")/cuobjdump" "$(command -v cuobjdump || true)" \
         "$(find .tools/cuda -name cuobjdump -type f 2>/dev/null | head -1)"; do
  if [ -n "$c" ] && [ -x "$c" ]; then tool=$c; break; fi
done
if [ -z "$tool" ]; then
  echo "no cuobjdump (set CUOBJDUMP, or run scripts/setup.sh): skipped"
  exit 77
fi
sass=$(mktemp)
trap 'rm -f "$sass"' EXIT
# cuobjdump -sass needs nvdisasm beside it or on PATH.
PATH="$(dirname "$tool"):$PATH" "$tool" -sass "$lib" > "$sass" || { echo "cuobjdump failed on $lib"; exit 1; }
python3 scripts/sass_release_audit.py "$sass"
