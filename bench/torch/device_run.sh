#!/usr/bin/env bash
# `launchwatch run` on a GPU machine in one command: builds what it needs for sm_90 (the `cuda`
# preset), runs its tests (the GPU ones: the C++ and PyTorch examples under `launchwatch run`, the
# profiler capture range; and the CPU ones: arguments, exit status, signals), then the PyTorch
# comparison with torch.profiler (bench/torch/run_vs_profiler.py) for docs/benchmarks.md.
# Usage: OUT=dir BUILD=dir bench/torch/device_run.sh   (writes OUT/build.log, OUT/tests.log, OUT/bench.md)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-build/device-out}
BUILD=${BUILD:-build/gpu}
STEPS=${STEPS:-20}
mkdir -p "$OUT"
source scripts/find_cupti.sh
t=$(date +%s)
if ! { cmake --preset cuda -B "$BUILD" -DCMAKE_CUDA_ARCHITECTURES=90 "${cupti_args[@]}" &&
       ninja -C "$BUILD" -j"$(nproc)" launchwatch launchwatch_inject launchwatch_cuda_bridge_scopes \
         launchwatch_run_gpu_test launchwatch_run_command_test; } >"$OUT/build.log" 2>&1; then
  grep -E "error" -A3 "$OUT/build.log" | head -60
  exit 1
fi
echo "build: $(( $(date +%s) - t )) s"
timeout 100 ctest --test-dir "$BUILD" -R "RunOnGpu|RunCommand" --output-on-failure --no-tests=error \
  >"$OUT/tests.log" 2>&1
tests=$?
tail -30 "$OUT/tests.log"
timeout 100 python3 bench/torch/run_vs_profiler.py --launchwatch "$BUILD/apps/launchwatch/launchwatch" \
  --steps "$STEPS" --out "$BUILD/run-vs-profiler" >"$OUT/bench.md" 2>&1
bench=$?
cat "$OUT/bench.md"
exit $(( tests != 0 || bench != 0 ))
