#!/usr/bin/env bash
# device_gemm_ab.sh (same environment), with every log packed into
# $OUT/logs.tgz: the device tool returns only a few files per call. The A/B
# stops after AB_TIMEOUT s (default 540) so the logs are packed inside the
# call's own limit.
set -uo pipefail
cd "$(dirname "$0")/.."
FINAL=${OUT:-/tmp/out}
mkdir -p "$FINAL"
work=$(mktemp -d)
OUT=$work timeout ${AB_TIMEOUT:-540} scripts/device_gemm_ab.sh > "$work/ab_driver.log" 2>&1
grep -E "^\[  (PASSED|FAILED)|tests ran" "$work/gpu_tests.log" 2>/dev/null | tail -12
tar czf "$FINAL/logs.tgz" -C "$work" .
