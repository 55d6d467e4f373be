#!/usr/bin/env bash
# Installs the Debian packages launchwatch builds with, when they are missing. Sourced by the two
# README commands, so a fresh Debian machine needs nothing done by hand.
set -euo pipefail

launchwatch_packages=(
  cmake ninja-build g++ python3 binutils
  libspdlog-dev libfmt-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-dev  # the fuzz preset: clang++ and its libFuzzer
)

ensure_packages() {
  local missing=()
  for package in "${launchwatch_packages[@]}"; do
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

# Configures (once) and builds one CMake preset.
build_preset() {
  local preset=$1
  shift
  if [ ! -f "build/$preset/build.ninja" ]; then
    cmake --preset "$preset" "$@"
  fi
  cmake --build --preset "$preset"
}
