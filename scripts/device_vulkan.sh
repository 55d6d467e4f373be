#!/usr/bin/env bash
# The Vulkan backend's checks on a GPU machine, in one command: builds the `cuda` preset (for the raw
# cudaLaunchKernel comparison) with the Vulkan backend, then runs the Vulkan tests (conformance
# suite, timestamp budget, backend tests) on the GPU's driver, the demo on Vulkan against the host
# reference, and the Vulkan launch bench. For machines without a Vulkan loader (the lent H200 has
# none), DEBS names a folder with Debian's .debs: gl/ (libvulkan1 and glvnd, unpacked into / as
# the device README says) and dev/ (libvulkan-dev and glslang-tools, unpacked into /tmp/vkroot).
#
# Then the Vulkan timing bench: deferred timing by the shader clock against timestamp queries
# (pass wall and durations, docs/benchmarks.md's "Vulkan timing by the shader clock").
# STEPS picks what runs after the build (default: all of "tests demo launch timing").
#
# Usage: DEBS=dir OUT=dir [STEPS="tests demo launch timing"] scripts/device_vulkan.sh [--quick]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/device-out}
BUILD=${BUILD:-/tmp/lw-vulkan}
mkdir -p "$OUT"
cmake_args=()
if [ -n "${DEBS:-}" ]; then
  if ! ldconfig -p | grep -q libvulkan.so.1; then
    for f in "$DEBS"/gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
  fi
  mkdir -p /tmp/vkroot
  for f in "$DEBS"/dev/*.deb; do dpkg -x "$f" /tmp/vkroot; done
  cmake_args+=(-DLAUNCHWATCH_VULKAN_INCLUDE_DIR=/tmp/vkroot/usr/include
               -DLAUNCHWATCH_GLSLANG=/tmp/vkroot/usr/bin/glslangValidator)
fi
if ! ls /usr/share/vulkan/icd.d/nvidia* /etc/vulkan/icd.d/nvidia* >/dev/null 2>&1 &&
   [ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
fi
export LAUNCHWATCH_REQUIRE_VULKAN=1
echo "== configure and build ($BUILD)"
t=$(date +%s)
source scripts/find_cupti.sh
STEPS=${STEPS:-tests demo launch timing}
targets=(launchwatch_conformance_vulkan_test launchwatch_conformance_vulkan_concurrency_test
         launchwatch_vulkan_timestamp_budget_test launchwatch_vulkan_backend_test
         launchwatch_vulkan_environment_test launchwatch_vulkan_shader_clock_test
         launchwatch_vulkan_timing_fallback_test launchwatch_vulkan_clock_calibration_test
         launchwatch launchwatch_demo_model_test launchwatch_vulkan_launch_bench
         launchwatch_vulkan_timing_bench)
cmake --preset cuda -B "$BUILD" -DCMAKE_CUDA_ARCHITECTURES=90 -DLAUNCHWATCH_VULKAN=ON "${cupti_args[@]}" \
  "${cmake_args[@]}" >"$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
ninja -C "$BUILD" -j"$(nproc)" "${targets[@]}" >"$OUT/build.log" 2>&1 ||
  { grep -E "error" -A3 "$OUT/build.log" | head -60; exit 1; }
echo "built in $(( $(date +%s) - t )) s"
step() { [[ " $STEPS " == *" $1 "* ]]; }
if step tests; then
  echo "== Vulkan tests"
  # Each test's output kept in $OUT (a run cut off by the device's time limit keeps what it had),
  # and a test that hangs on this driver fails after 120 s instead of holding the run up.
  ctest --test-dir "$BUILD" -L vulkan --no-tests=error -j8 --timeout 120 --output-on-failure \
    >"$OUT/vulkan_ctest.log" 2>&1
  tail -25 "$OUT/vulkan_ctest.log"
  ctest --test-dir "$BUILD" -R 'ClockCalibration' --no-tests=error 2>&1 | tail -3
  ctest --test-dir "$BUILD" -R 'demo_on_vulkan|DemoModel.Vulkan' --no-tests=error \
    --output-on-failure 2>&1 | tail -6
fi
if step demo; then
  echo "== demo on Vulkan"
  "$BUILD/apps/launchwatch/launchwatch" demo --backend vulkan --no-progress \
    --out "$OUT/demo-vulkan" 2>&1 | head -12
fi
if step launch; then
  echo "== Vulkan launch bench"
  "$BUILD/bench/vulkan/launchwatch_vulkan_launch_bench" "$@" 2>&1
fi
if step timing; then
  echo "== Vulkan timing bench"
  "$BUILD/bench/vulkan/launchwatch_vulkan_timing_bench" "$@" 2>&1 |
    tee "$OUT/vulkan_timing_bench.txt"
fi
