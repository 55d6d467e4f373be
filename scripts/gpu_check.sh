#!/usr/bin/env bash
# Checks the CUDA backend on a GPU machine, in one go: builds with the `cuda` preset for sm_90 (H100,
# H200), runs the CUDA tests (ctest label `gpu`, the conformance suite on the CUDA fixture among
# them) and the backend's host-only tests, runs the CUDA measurements, runs the GPU tests again
# under compute-sanitizer (scripts/gpu_sanitize.sh: memcheck over every GPU test, racecheck and
# synccheck over the conformance suite; one process per test), and prints a short table last.
#
# Usage: scripts/gpu_check.sh            (from anywhere; builds in build/gpu-check)
#   BUILD=dir JOBS=n OUT=dir SANITIZE=0 BENCH=0 QUICK=1 scripts/gpu_check.sh
# Logs go to $OUT (default: the build directory), six files at most. Exit status: 0 when every step passed.
set -uo pipefail

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build/gpu-check}
JOBS=${JOBS:-$(nproc)}
OUT=${OUT:-$BUILD}
SANITIZE=${SANITIZE:-1}
BENCH=${BENCH:-1}
QUICK=${QUICK:-0}
mkdir -p "$OUT"

TEST_TARGETS=(launchwatch_conformance_cuda_test launchwatch_conformance_cuda_concurrency_test launchwatch_cuda_timing_budget_test launchwatch_cuda_deferred_timing_test launchwatch_cuda_launch_stress_test
              launchwatch_cuda_timing_batch_test launchwatch_cuda_timing_batch_state_test
              launchwatch_cuda_backend_test launchwatch_cuda_host_test
              launchwatch_cuda_bridge_test launchwatch_cuda_bridge_stress_test launchwatch_cuda_bridge_host_test
              launchwatch_cuda_bridge_core_test launchwatch_cuda_bridge_run_exit_test launchwatch_bridge_exit_program
              launchwatch launchwatch_inject launchwatch_cuda_bridge_scopes launchwatch_run_gpu_test)
BENCH_TARGETS=(launchwatch_timing_mechanism_bench launchwatch_launch_cost_bench)

rows=()
row() { rows+=("$(printf '%-34s | %-4s | %s' "$1" "$2" "$3")"); }
seconds_since() { echo $(( $(date +%s) - $1 )); }
failed=0

echo "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader || true
nvcc --version | tail -1

echo "== configure and build (${JOBS} jobs)"
t=$(date +%s)
if cmake --preset cuda -B "$BUILD" -DCMAKE_CUDA_ARCHITECTURES=90 >"$OUT/build.log" 2>&1 &&
   ninja -C "$BUILD" -j"$JOBS" "${TEST_TARGETS[@]}" "${BENCH_TARGETS[@]}" >>"$OUT/build.log" 2>&1; then
  row "build (cuda preset, sm_90)" ok "$(seconds_since "$t") s"
else
  grep -E "error|Error" -A3 "$OUT/build.log" | head -60
  row "build (cuda preset, sm_90)" FAIL "see build.log"
  printf '\n==== gpu_check ====\n'; printf '%s\n' "${rows[@]}"
  exit 1
fi

echo "== GPU tests (label gpu)"
t=$(date +%s)
ctest --test-dir "$BUILD" -L gpu --no-tests=error --output-on-failure --timeout 180 -j 8 \
  >"$OUT/ctest_gpu.log" 2>&1
status=$?
summary=$(grep -E 'tests passed|tests failed' "$OUT/ctest_gpu.log" | tail -1)
skipped=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*\*\*\*Skipped' "$OUT/ctest_gpu.log" || true)
if [[ $status -eq 0 ]]; then
  row "ctest -L gpu" ok "$summary, $skipped skipped, $(seconds_since "$t") s"
else
  failed=1
  grep -E '\*\*\*Failed|Timeout|Not Run|Exception' "$OUT/ctest_gpu.log" | head -20
  row "ctest -L gpu" FAIL "$summary (ctest_gpu.log)"
fi

echo "== host-only CUDA tests"
if "$BUILD/tests/cuda/launchwatch_cuda_host_test" >"$OUT/host_test.log" 2>&1; then
  row "cuda host tests (no GPU needed)" ok "$(grep -E '^\[  PASSED' "$OUT/host_test.log" | head -1)"
else
  failed=1
  tail -30 "$OUT/host_test.log"
  row "cuda host tests (no GPU needed)" FAIL "host_test.log"
fi

if [[ $BENCH == 1 ]]; then
  echo "== measurements"
  t=$(date +%s)
  args=()
  [[ $QUICK == 1 ]] && args+=(--quick)
  if "$BUILD/bench/cuda/launchwatch_timing_mechanism_bench" "${args[@]}" >"$OUT/timing_mechanism.log" 2>&1; then
    row "timing mechanism bench" ok "$(seconds_since "$t") s (timing_mechanism.log)"
  else
    failed=1
    tail -20 "$OUT/timing_mechanism.log"
    row "timing mechanism bench" FAIL "timing_mechanism.log"
  fi
  t=$(date +%s)
  if "$BUILD/bench/cuda/launchwatch_launch_cost_bench" "${args[@]}" >"$OUT/launch_cost.log" 2>&1; then
    row "launch cost bench" ok "$(seconds_since "$t") s (launch_cost.log)"
  else
    failed=1
    tail -20 "$OUT/launch_cost.log"
    row "launch cost bench" FAIL "launch_cost.log"
  fi
fi

if [[ $SANITIZE == 1 ]]; then
  # scripts/gpu_sanitize.sh: memcheck over every GPU test, racecheck and synccheck over the
  # conformance suite, each test in its own process; its rows join this table.
  sanitized=$(BUILD="$BUILD" OUT="$OUT" JOBS=8 scripts/gpu_sanitize.sh 2>&1) || failed=1
  sed '/^==== gpu_sanitize ====$/,$d' <<<"$sanitized"
  while IFS= read -r line; do rows+=("$line"); done < <(sed -n '/^==== gpu_sanitize ====$/,$p' <<<"$sanitized" | tail -n +2)
fi

if [[ $BENCH == 1 ]]; then
  sed -n '/==== timing mechanism summary/,$p' "$OUT/timing_mechanism.log"
  sed -n '/==== launch cost/,$p' "$OUT/launch_cost.log"
fi
printf '\n==== gpu_check ====\n'
printf '%s\n' "${rows[@]}"
exit $failed
