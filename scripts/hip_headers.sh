#!/usr/bin/env bash
# Copies HIP's headers (Debian's libamdhip64-dev: HIP 5.2, MIT licence, its copyright file beside
# them) into build/hip-include, for a machine that has none: the GPU machine runs
# scripts/device_hip.sh with that folder carried along (it is ignored by git, so a device run must
# name it). HIP's NVIDIA platform needs only these headers and CUDA.
# Usage: scripts/hip_headers.sh [destination]   (default build/hip-include)
set -euo pipefail
cd "$(dirname "$0")/.."
destination=${1:-build/hip-include}
source scripts/ensure_packages.sh
ensure_packages
if [ ! -f /usr/include/hip/hip_runtime_api.h ]; then
  echo "hip_headers.sh: /usr/include/hip is missing: install libamdhip64-dev" >&2
  exit 1
fi
rm -rf "$destination/hip"
mkdir -p "$destination"
cp -r /usr/include/hip "$destination/hip"
cp /usr/share/doc/libamdhip64-dev/copyright "$destination/hip/COPYRIGHT.debian"
echo "HIP $(grep -E '^#define HIP_VERSION_(MAJOR|MINOR) ' /usr/include/hip/hip_version.h |
  awk '{print $3}' | paste -sd.) headers in $destination ($(du -sh "$destination" | cut -f1))"
