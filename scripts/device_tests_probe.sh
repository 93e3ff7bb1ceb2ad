#!/usr/bin/env bash
# One device call: the carried GPU test binary on a filter, then a Python
# timing probe through the carried libfp4moe_c.so. Logs under $OUT
# (tests.txt, probe.txt). Carry .carry (tests/fp4moe_gpu_tests.xz,
# lib/libfp4moe_c.so.xz) and .fp4moe_commit. Environment: GTEST_FILTER
# (default: the GEMM and MoE-FC2 suites), PROBE (default
# tools/probes/dense_tactics.py; empty: none), PROBE_ARGS.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
scripts/device_unpack.sh .carry
echo "commit: $(cat .fp4moe_commit 2>/dev/null || echo unknown)" | tee "$OUT/tests.txt"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee -a "$OUT/tests.txt"
start=$(date +%s)
.carry/tests/fp4moe_gpu_tests --gtest_filter="${GTEST_FILTER:-*Gemm*:*MoeFc2*:*SplitK*}" >> "$OUT/tests.txt" 2>&1
echo "gpu tests rc $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/tests.txt"
grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED  \]" "$OUT/tests.txt" | head -40
probe=${PROBE-tools/probes/dense_tactics.py}
if [ -n "$probe" ]; then
  FP4MOE_LIBRARY=$PWD/.carry/lib/libfp4moe_c.so PYTHONPATH=$PWD/python python3 "$probe" ${PROBE_ARGS:-} > "$OUT/probe.txt" 2>&1
  echo "probe rc $?"
  cat "$OUT/probe.txt"
fi
