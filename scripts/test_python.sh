#!/usr/bin/env bash
# The Python tests (tests/python, pytest) against the libfp4moe_c.so of the
# build tree (${BUILD_DIR:-build}, from scripts/build.sh), with the package's
# sources from python/. Argument: cpu (tests needing no GPU), gpu (tests
# marked gpu; they skip without an sm_90 device) or nothing (all).
# Extra pytest arguments go in PYTEST_ARGS.
set -euo pipefail
cd "$(dirname "$0")/.."
export FP4MOE_LIBRARY=${FP4MOE_LIBRARY:-$PWD/${BUILD_DIR:-build}/src/capi/libfp4moe_c.so}
export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
case "${1:-}" in
  cpu) select=(-m "not gpu") ;;
  gpu) select=(-m gpu) ;;
  "") select=() ;;
  *) echo "usage: $0 [cpu|gpu]" >&2; exit 2 ;;
esac
set +e
${PYTHON:-python3} -m pytest tests/python -q -rs -p no:cacheprovider "${select[@]}" ${PYTEST_ARGS:-}
rc=$?
set -e
# 5: nothing collected (every test deselected): not a failure of the code.
[ "$rc" = 5 ] && { echo "test_python: no Python test selected"; exit 0; }
exit "$rc"
