#!/usr/bin/env bash
# The Python tests on the lent GPU machine, against a libfp4moe_c.so built
# on the host (scripts/device_python_prepare.sh) and carried with the call,
# the package from python/ (PYTHONPATH, no pip install) and the machine's
# PyTorch. Logs under $OUT: gpu.txt, python.txt, pytest.log, pytest.xml.
# Environment: FP4MOE_LIBRARY (default build/src/capi/libfp4moe_c.so),
# PYTEST_ARGS (extra pytest arguments, e.g. -k gemm or -x).
set -uo pipefail
cd "$(dirname "$0")/.."
export FP4MOE_TEST_REQUIRE_GPU=1  # (GPU tests fail, not skip, where CUDA does not start)
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
echo "commit: $(cat .fp4moe_commit 2>/dev/null || echo unknown)"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"
export FP4MOE_LIBRARY=${FP4MOE_LIBRARY:-$PWD/build/src/capi/libfp4moe_c.so}
export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
[ -d .carry/pydeps ] && PYTHONPATH=$PYTHONPATH:$PWD/.carry/pydeps
python3 - > "$OUT/python.txt" 2>&1 <<'PY'
import sys, warnings
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
import torch, fp4moe
print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)
if torch.cuda.is_available():
    print("device", torch.cuda.get_device_name(), torch.cuda.get_device_capability())
else:
    print("no CUDA device: the GPU tests will skip")
print("fp4moe", fp4moe.__version__, "abi", fp4moe.abi_version(), fp4moe._library.library_path())
PY
rc=$?
cat "$OUT/python.txt"
[ $rc = 0 ] || exit $rc
start=$(date +%s)
python3 -m pytest tests/python -v -rs -p no:cacheprovider --junitxml="$OUT/pytest.xml" ${PYTEST_ARGS:-} \
  > "$OUT/pytest.log" 2>&1
rc=$?
echo "pytest rc=$rc in $(( $(date +%s) - start )) s"
grep -E "FAILED|ERROR|^SKIPPED" "$OUT/pytest.log" | head -40
tail -3 "$OUT/pytest.log"
exit $rc
