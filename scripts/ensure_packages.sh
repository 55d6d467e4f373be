#!/usr/bin/env bash
# Installs the Debian packages launchwatch builds with (and, for scripts/test, those its tests run
# with), when they are missing. Sourced by the two README commands, so a fresh Debian machine needs
# nothing done by hand.
set -euo pipefail

launchwatch_packages=(
  cmake ninja-build g++ python3 binutils
  ccache  # one preset reuses what another compiled the same way (cmake/launchwatch_ccache.cmake)
  libspdlog-dev libfmt-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-dev  # the fuzz preset: clang++ and its libFuzzer
  libvulkan-dev glslang-tools  # the Vulkan backend: its headers, and GLSL to SPIR-V at build time
  python3-dev  # Python's headers: the Python package's C extension (python/launchwatch/_c_api.c)
  # The HIP backend, compiled and linked for AMD GPUs (gfx90a, gfx942) by the release preset: HIP
  # 5.2's headers, runtime and device libraries with hipcc, and clang 19 with its linker (lld-19),
  # offload bundler (clang-tools-19) and llvm-as (llvm-19), since clang 15 (hipcc's) crashes on
  # GoogleTest files in C++20 HIP mode and only clang 17 or newer knows gfx942; llvm-as makes the
  # gfx942 device-library file HIP 5.2 predates (cmake/launchwatch_hip_device_libs.cmake).
  hipcc libamdhip64-dev clang-19 lld-19 clang-tools-19 llvm-19
)

# What only the tests need: chromium for the browser test (tests/browser), Mesa's lavapipe (Vulkan on
# the CPU) for the Vulkan tests and the demo on Vulkan, and node with npm for its npm packages; Debian's nodejs and npm only where no node is on PATH already (NodeSource's has npm).
launchwatch_test_packages=(chromium mesa-vulkan-drivers)  # mesa-vulkan-drivers: lavapipe
# The Python package's tests (tests/python): pytest, and torch for the PyTorch hooks on the CPU.
launchwatch_test_packages+=(python3-pytest python3-torch)
# The wheel's check (tests/wheel, run by .ci/run): scripts/wheel writes it with python3-wheel and
# the check installs it into a virtual environment (python3-venv).
launchwatch_test_packages+=(python3-wheel python3-venv)
command -v npm >/dev/null 2>&1 || launchwatch_test_packages+=(nodejs npm)

# Installs launchwatch_packages and any packages named as arguments, when missing.
ensure_packages() {
  local missing=()
  for package in "${launchwatch_packages[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$package")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "launchwatch: installing missing Debian packages: ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo=(sudo)
    else
      echo "launchwatch: not root and no sudo; install them first: apt-get install ${missing[*]}" >&2
      return 1
    fi
  fi
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# Installs a folder's npm packages exactly as its package-lock.json pins them, when node_modules is
# missing or older than the lock file.
ensure_npm_packages() {
  local folder=$1
  if [ ! -f "$folder/node_modules/.package-lock.json" ] ||
    [ "$folder/package-lock.json" -nt "$folder/node_modules/.package-lock.json" ]; then
    echo "launchwatch: installing the npm packages of $folder"
    (cd "$folder" && npm ci --no-audit --no-fund)
  fi
}

# Configures and builds one CMake preset. Configured every time (a few seconds on a configured
# folder): the preset's cache values are set again, so a folder configured under an older preset
# (say, with the HIP backend on where the preset now turns it off) builds what the preset says.
build_preset() {
  local preset=$1
  shift
  if [ -f "build/$preset/build.ninja" ]; then
    local warnings
    warnings=$(cmake --preset "$preset" "$@" 2>&1 >/dev/null) || { echo "$warnings" >&2; return 1; }
    [ -z "$warnings" ] || echo "$warnings" >&2
    # A preset whose compiler changed (debug-asan's became clang) makes CMake delete the cache and
    # configure without the preset's variables (CUDA and the benchmarks back on): start afresh.
    if [[ $warnings == *"require your cache to be deleted"* ]]; then
      cmake --preset "$preset" --fresh "$@"
    fi
  else
    cmake --preset "$preset" "$@"
  fi
  cmake --build --preset "$preset"
}
