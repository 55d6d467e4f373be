#!/usr/bin/env bash
# The HIP backend on an NVIDIA GPU through HIP's NVIDIA platform (issue 26), in one command: builds
# the `hip-nvidia` preset for sm_90 (the CUDA backend and the HIP backend over CUDA, nvcc compiling
# both's kernels), then runs the HIP tests (the conformance suite on the HIP fixture, its
# concurrency tests, the deferred-timing budget and full-device tests, the host-only tests), the
# CUDA backend's GPU tests (the two backends share backend/gpu), `launchwatch demo --backend hip`,
# and the deferred-timing bench for HIP and for CUDA in the same run (pass wall deferred/untimed:
# the perturbation rows; durations against CUPTI's records: the fidelity rows). Prints a short
# table last.
#
# HIP's headers: LAUNCHWATCH_HIP_INCLUDE_DIR, else /usr/include when it holds hip/, else
# build/hip-include (made by scripts/hip_headers.sh on a machine with libamdhip64-dev, and carried).
# Usage: OUT=dir scripts/device_hip.sh [step ...]   (OUT defaults to build/device-hip-out)
#   steps: build tests demo bench, all by default; the build is incremental, so a machine kept
#   warm between two calls builds once (`... build tests demo`, then `... bench`).
#   BUILD=dir JOBS=n ROUNDS=r
# Outputs: $OUT/summary_<steps>.txt (the table), $OUT/deferred_timing_hip.txt and
# $OUT/deferred_timing_cuda.txt, $OUT/demo_hip.txt, and every log in $OUT/logs_hip_<steps>.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/device-hip-out}
BUILD=${BUILD:-build/hip-nvidia}
JOBS=${JOBS:-$(nproc)}
ROUNDS=${ROUNDS:-5}
logs=$BUILD/logs
mkdir -p "$OUT" "$logs"
steps=" ${*:-build tests demo bench} "
want() { [[ $steps == *" $1 "* ]]; }
rows=()
row() { rows+=("$(printf '%-44s | %-4s | %s' "$1" "$2" "$3")"); }
since() { echo $(( $(date +%s) - $1 )); }
started=$(date +%s)

headers=${LAUNCHWATCH_HIP_INCLUDE_DIR:-}
if [[ -z $headers ]]; then
  if [[ -f /usr/include/hip/hip_runtime_api.h ]]; then headers=/usr/include; else headers=$PWD/build/hip-include; fi
fi
[[ -f $headers/hip/hip_runtime_api.h ]] ||
  echo "device_hip.sh: no HIP headers in $headers: run scripts/hip_headers.sh where libamdhip64-dev is, and carry build/hip-include" >&2

echo "== machine"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | tee "$logs/machine.txt"
nvcc --version | tail -1 | tee -a "$logs/machine.txt"

hip_tests=(launchwatch_conformance_hip_test launchwatch_conformance_hip_concurrency_test
           launchwatch_hip_timing_budget_test launchwatch_hip_deferred_timing_test
           launchwatch_hip_host_test)
cuda_tests=(launchwatch_conformance_cuda_test launchwatch_conformance_cuda_concurrency_test
            launchwatch_cuda_timing_budget_test launchwatch_cuda_deferred_timing_test
            launchwatch_cuda_backend_test launchwatch_cuda_host_test launchwatch_cuda_launch_stress_test)
echo "== configure and build (-j$JOBS; HIP headers from $headers)"
# Always: the steps after it need its targets, and it does nothing when they are up to date.
t=$(date +%s)
source scripts/find_cupti.sh
if cmake --preset hip-nvidia -B "$BUILD" -DCMAKE_CUDA_ARCHITECTURES=90 \
     -DLAUNCHWATCH_HIP_INCLUDE_DIR="$headers" "${cupti_args[@]}" >"$logs/configure.log" 2>&1 &&
   ninja -C "$BUILD" -j"$JOBS" "${hip_tests[@]}" "${cuda_tests[@]}" launchwatch \
     launchwatch_deferred_timing_bench >"$logs/build.log" 2>&1; then
  row "build (hip-nvidia preset, sm_90)" ok "$(since "$t") s"
else
  grep -E "error|Error" -A3 "$logs/build.log" "$logs/configure.log" | head -80
  row "build (hip-nvidia preset, sm_90)" FAIL "logs/build.log"
fi

# One ctest run per set, its pass count in the table; GPU tests skip (***Skipped) without a device.
run_ctest() {
  local name=$1 regex=$2 log=$logs/$3
  local t; t=$(date +%s)
  ctest --test-dir "$BUILD" -R "$regex" -E NOT_BUILT --no-tests=error --output-on-failure \
    --timeout 300 -j 8 \
    >"$log" 2>&1
  local status=$? summary skipped
  summary=$(grep -E 'tests passed|tests failed' "$log" | tail -1)
  skipped=$(grep -cE '\*\*\*Skipped' "$log" || true)
  if [[ $status -eq 0 ]]; then
    row "$name" ok "$summary, $skipped skipped, $(since "$t") s"
  else
    row "$name" FAIL "$summary ($3)"
    grep -E '\*\*\*Failed|\(Failed\)|Timeout' "$log" | head -20
  fi
}
# ctest names a typed test after its prefix and fixture (`hip.<Test><...hip_backend>` with CMake
# 3.25; newer CMake names it otherwise), so the HIP fixture's GPU tests are those naming `hip` as a
# word; placeholders of targets this script does not build (*_NOT_BUILT) are left out.
hip_gpu='(^|[^A-Za-z])hip([^A-Za-z]|_backend)'
timing='WhenEverySlotIsInFlight|TheFirstTimedLaunchReturns'
ctest --test-dir "$BUILD" -N 2>/dev/null | grep -E "$hip_gpu" | head -3
if want tests; then
echo "== HIP tests (HIP over CUDA)"
run_ctest "HIP GPU tests (conformance, concurrency, timing)" "$hip_gpu" ctest_hip_gpu.log
run_ctest "  of them: timing budget, full device" "(($hip_gpu).*($timing))|(($timing).*($hip_gpu))" \
  ctest_hip_timing.log
run_ctest "HIP host-only tests" '^Hip' ctest_hip_host.log
echo "== CUDA tests (the shared backend/gpu, on CUDA)"
run_ctest "CUDA GPU and host tests" \
  '(^|[^A-Za-z])cuda([^A-Za-z]|_backend)|^Cuda|^DeviceClockMapping|^GridOverhead|^TimingSlots' \
  ctest_cuda.log
fi

if want demo; then
echo "== demo on HIP"
t=$(date +%s)
if timeout 120 "$BUILD/apps/launchwatch/launchwatch" demo --backend hip --no-progress \
     --out "$logs/demo-hip" >"$OUT/demo_hip.txt" 2>&1; then
  row "launchwatch demo --backend hip" ok "$(grep -o 'numerics:.*' "$OUT/demo_hip.txt"), $(since "$t") s"
else
  row "launchwatch demo --backend hip" FAIL "demo_hip.txt"
fi
fi

want bench && for backend in hip cuda; do
  echo "== deferred timing bench, $backend (perturbation and fidelity rows)"
  t=$(date +%s)
  if timeout 300 "$BUILD/bench/peers/launchwatch_deferred_timing_bench" --backend "$backend" \
       --rounds "$ROUNDS" >"$OUT/deferred_timing_$backend.txt" 2>&1; then
    first=$(grep -m1 'no outputs' "$OUT/deferred_timing_$backend.txt" | awk '{print $(NF-1)}')
    diff=$(grep -o 'median diff over shapes: [^ ]* us' "$OUT/deferred_timing_$backend.txt")
    row "deferred timing, $backend" ok "5us x 132 wall ${first:-?}, $diff, $(since "$t") s"
  else
    row "deferred timing, $backend" FAIL "deferred_timing_$backend.txt"
  fi
done

tar -czf "$OUT/logs_hip_$(echo $steps | tr ' ' '_').tar.gz" -C "$BUILD" logs
{
  cat "$logs/machine.txt"
  printf '%-44s | %-4s | %s\n' step ok detail
  printf '%s\n' "${rows[@]}"
  echo "total $(since "$started") s"
} | tee "$OUT/summary_$(echo $steps | tr ' ' '_').txt"
