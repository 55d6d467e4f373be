#!/usr/bin/env bash
# Checks the CUDA backend on a GPU machine, in one go: builds with the `cuda` preset for sm_90 (H100,
# H200), runs the CUDA tests (ctest label `gpu`, the conformance suite on the CUDA fixture among
# them) and the backend's host-only tests, runs the CUDA measurements, runs the GPU tests again
# under compute-sanitizer (memcheck over every GPU test, racecheck and synccheck over the
# conformance suite; one process per test), and prints a short table last.
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

TEST_TARGETS=(launchwatch_conformance_cuda_test launchwatch_conformance_cuda_concurrency_test launchwatch_cuda_timing_budget_test launchwatch_cuda_launch_stress_test
              launchwatch_cuda_backend_test launchwatch_cuda_host_test)
BENCH_TARGETS=(launchwatch_timing_mechanism_bench launchwatch_launch_cost_bench)
# Left out of the sanitizer pass, run only in the plain one: tests that fault on purpose (memcheck
# rightly reports their faults), and the one that needs two streams' kernels running at once (under
# memcheck on an H200 the read waited for the other stream's kernel: it does not run them together).
INTENDED_FAULTS='Fault|Failure|AReadWaitsOnlyForTheLaunchesThatReferencedItsBuffer'

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
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  export sanitizer
  : >"$OUT/sanitizer.log"
  # Writes `binary test` lines for the tests of the binaries named, INTENDED_FAULTS left out, to $1.
  list_tests() {
    local list=$1; shift
    : >"$list.all"
    for bin in "$@"; do
      "$BUILD/tests/cuda/$bin" --gtest_list_tests | awk -v bin="$BUILD/tests/cuda/$bin" '
        /^[^ ]/ { sub(/ *#.*/, ""); suite = $0; next }
        /^  / { name = $1; print bin " " suite name }' >>"$list.all"
    done
    grep -Ev "\.[A-Za-z]*(${INTENDED_FAULTS})" "$list.all" >"$list" || true
  }
  # Runs compute-sanitizer --tool $1 over the tests listed in $2, each in its own process as under
  # ctest (a test's once-per-process state stays its own), 8 at a time, and adds a row.
  sanitize() {
    local tool=$1 list=$2 t
    t=$(date +%s)
    echo "== GPU tests under compute-sanitizer ($tool), one process per test"
    local total left_out bad
    total=$(wc -l <"$list")
    left_out=$(( $(wc -l <"$list.all") - total ))
    export tool
    xargs -P 8 -L 1 bash -c '
      out=$("$sanitizer" --tool "$tool" --error-exitcode 86 --print-limit 20 "$0" \
            --gtest_filter="$1" 2>&1); rc=$?
      if [[ $rc -ne 0 ]]; then printf "[%s] FAILED %s (exit %s)\n%s\n" "$tool" "$1" "$rc" "$out"
      else echo "[$tool] ok $1"; fi
    ' <"$list" >>"$OUT/sanitizer.log" 2>&1
    bad=$(grep -c "^\[$tool\] FAILED" "$OUT/sanitizer.log" || true)
    if [[ $bad -eq 0 && $total -gt 0 ]]; then
      row "compute-sanitizer $tool" ok "$total tests clean, $left_out left out (see INTENDED_FAULTS), $(seconds_since "$t") s"
    else
      failed=1
      grep -A12 "^\[$tool\] FAILED" "$OUT/sanitizer.log" | head -60
      row "compute-sanitizer $tool" FAIL "$bad of $total failed (sanitizer.log)"
    fi
  }
  # memcheck over every GPU test binary; racecheck (shared-memory hazards) and synccheck (barrier
  # misuse) cost more per test and look only inside kernels, so over the conformance suite, whose
  # kernels are the backend's every launch path.
  list_tests "$BUILD/sanitized_tests.txt" launchwatch_conformance_cuda_test \
    launchwatch_conformance_cuda_concurrency_test launchwatch_cuda_backend_test
  sanitize memcheck "$BUILD/sanitized_tests.txt"
  list_tests "$BUILD/sanitized_conformance.txt" launchwatch_conformance_cuda_test
  sanitize racecheck "$BUILD/sanitized_conformance.txt"
  sanitize synccheck "$BUILD/sanitized_conformance.txt"
fi

if [[ $BENCH == 1 ]]; then
  sed -n '/==== timing mechanism summary/,$p' "$OUT/timing_mechanism.log"
  sed -n '/==== launch cost/,$p' "$OUT/launch_cost.log"
fi
printf '\n==== gpu_check ====\n'
printf '%s\n' "${rows[@]}"
exit $failed
