#!/usr/bin/env bash
# Unpacks every xz-compressed binary carried under DIR (default .carry) next
# to itself, executable: two host-built binaries (~32 MB each) exceed a
# call's carry limit, compressed they are ~3 MB each. Usage:
# scripts/device_unpack.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
find "${1:-.carry}" -name '*.xz' | while read -r f; do
  xz -dc "$f" > "${f%.xz}"
  chmod +x "${f%.xz}"
done
