#!/usr/bin/env bash
# The one command for a GPU machine: builds launchwatch's peers harness for the H200 (sm_90) and
# runs it, then draws the plot and prints a short table last.
#
# Usage: scripts/bench_gpu.sh [harness options...]   e.g. --rounds 15 --launches 20000
# Outputs go to $OUT when it is set (the device tool's folder), else build/gpu-out:
#   peers.json           every figure of the run (bench/peers/results.hpp says what is in it)
#   peers_launch_cost.svg  cost per launch by method, with p10-p90 whiskers
#   peers_tables.txt     the harness's full tables
#   nvidia_smi.txt       the card's state before the run
# Exits 0 without running anything where no CUDA device is visible (the harness says so).
set -euo pipefail
cd "$(dirname "$0")/.."

out=${OUT:-build/gpu-out}
build=${LAUNCHWATCH_GPU_BUILD:-build/gpu}
jobs=${LAUNCHWATCH_JOBS:-16}
mkdir -p "$out"

started=$(date +%s)
source scripts/find_cupti.sh

echo "=== configure ($build) ==="
# Tests and apps are not needed for the harness; leaving them out keeps the configure and build to
# what the run uses.
cmake --preset cuda -B "$build" -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DLAUNCHWATCH_BUILD_TESTS=OFF -DLAUNCHWATCH_BUILD_APPS=OFF "${cupti_args[@]}" >"$out/configure.log" 2>&1 \
  || { tail -n 40 "$out/configure.log"; exit 1; }
echo "=== build launchwatch_peers_bench (-j$jobs) ==="
ninja -C "$build" -j"$jobs" launchwatch_peers_bench >"$out/build.log" 2>&1 \
  || { grep -E "error|Error" "$out/build.log" | head -n 40; tail -n 20 "$out/build.log"; exit 1; }
echo "built in $(( $(date +%s) - started )) s"

if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,pstate \
    --format=csv >"$out/nvidia_smi.txt" 2>&1 || true
else
  echo "nvidia-smi not found" >"$out/nvidia_smi.txt"
fi
cat "$out/nvidia_smi.txt"

echo "=== run ==="
status=0
# The harness gives up by itself past --max-seconds (a measurement that never resolves must not
# eat the device lease); later arguments override earlier ones.
"$build/bench/peers/launchwatch_peers_bench" --json "$out/peers.json" --max-seconds 240 "$@" | tee "$out/peers_tables.txt" \
  || status=$?

if [ -s "$out/peers.json" ]; then
  python3 scripts/plot_benchmarks.py "$out/peers.json" --svg "$out/peers_launch_cost.svg" --summary \
    || { [ "$status" -ne 0 ] || status=1; }
fi
echo "total $(( $(date +%s) - started )) s, harness exit status $status"
exit "$status"
