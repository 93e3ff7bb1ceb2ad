#!/usr/bin/env bash
# Quantizer profile on the lent GPU machine: the quantize GPU tests of the
# carried build, ncu on the quantize rows named by NCU_FILTER (default the
# NVFP4 1 GiB tiled row; NCU_EXTRA adds ncu arguments), and the SASS of the quantizer kernels. Logs under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
timeout 120 build/tests/fp4moe_gpu_tests --gtest_filter="${GTEST_FILTER:-*Quantize*:*Dequantize*:MoeFc1.*}" > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests rc=$?"; grep -E "^\[  (PASSED|FAILED) |tests ran|Failure" "$OUT/gpu_tests.log" | head -20
cuobjdump -sass build/tools/fp4moe 2>/dev/null | awk '/Function : .*quantize_tma_kernel/{p=1} /Function : /&&!/quantize_tma_kernel/{p=0} p' > "$OUT/quantize_tma.sass"
echo "sass lines: $(wc -l < "$OUT/quantize_tma.sass")"
ncu --clock-control none --kernel-name regex:quantize --launch-skip "${NCU_SKIP:-2}" --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section InstructionStats \
    --section SchedulerStats --section Occupancy ${NCU_EXTRA:-} \
    build/tools/fp4moe quantize --no-ceilings --filter "${NCU_FILTER:-1 GiB -> nvfp4 g given, tiled}" > "$OUT/ncu.txt" 2>&1
echo "ncu rc=$?"; grep -E "Duration|Throughput|Issue|Pipe|Stall|Eligible|Active Warps|Registers|Executed Ipc|Warp Cycles|Instructions" "$OUT/ncu.txt" | head -40
