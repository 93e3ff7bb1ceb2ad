#!/usr/bin/env bash
# The main job: build, then run every benchmark suite on the GPU with defaults.
# Extra arguments go to `fp4moe` (suite names, --json FILE, --reps N).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
export FP4MOE_COMMIT=${FP4MOE_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo -dirty)}
exec "${BUILD_DIR:-build}/tools/fp4moe" "$@"
