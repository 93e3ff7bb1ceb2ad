#!/usr/bin/env bash
# One device call: scripts/device_unpack.sh, then scripts/device_ab_multi.sh
# (environment as there), then every log under $OUT packed into one
# all.tgz (a call brings back only a few files). Usage: JOBS=... [GTEST_FILTER=...
# TESTS=...] VARIANTS=DIR scripts/device_ab_jobs.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
scripts/device_unpack.sh .carry
scripts/device_ab_multi.sh
tar czf /tmp/all.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/all.tgz "$OUT/"
