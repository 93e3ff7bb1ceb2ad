#!/usr/bin/env bash
# GEMM profile on the lent GPU machine, from binaries built on the host and
# carried (build/tools/fp4moe): the SASS of the kernels whose mangled name
# matches SASS_MATCH (default: the NVFP4 masked swap-AB bn16 and bn64 tiles),
# then ncu on the benchmark rows of SUITE (default decode) named by
# NCU_FILTER (NCU_SKIP launches skipped, NCU_EXTRA more ncu arguments).
# Logs under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
BIN=${BIN:-build/tools/fp4moe}
MATCH=${SASS_MATCH:-GemmConfigILb1ELNS0_6LayoutE2ELb1ELi(16|64)ELi256}
cuobjdump -sass "$BIN" 2>/dev/null | awk -v m="$MATCH" '/Function : /{p = ($0 ~ m)} p' > "$OUT/gemm.sass"
echo "sass lines: $(wc -l < "$OUT/gemm.sass")"
ncu --clock-control none --kernel-name regex:"${NCU_KERNEL:-fp4_gemm}" --launch-skip "${NCU_SKIP:-3}" --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section InstructionStats \
    --section SchedulerStats --section Occupancy --section LaunchStats ${NCU_EXTRA:-} \
    "$BIN" "${SUITE:-decode}" --no-ceilings --filter "${NCU_FILTER:-nvfp4 G32 8x4096x7168}" > "$OUT/ncu.txt" 2>&1
echo "ncu rc=$?"; grep -E "Duration|Throughput|Issue|Pipe|Stall|Eligible|Active Warps|Registers|Executed Ipc|Warp Cycles|Instructions|Local" "$OUT/ncu.txt" | head -50
