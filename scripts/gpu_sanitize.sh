#!/usr/bin/env bash
# Runs the GPU tests of a built tree under compute-sanitizer, each test in a process of its own as
# under ctest (a test's once-per-process state stays its own, and a sticky fault ends only its own
# process), JOBS at a time: memcheck over every GPU test binary; racecheck (shared-memory hazards)
# and synccheck (barrier misuse), which look only inside kernels and cost more per test, over the
# conformance suite, whose kernels go through every launch path. Called by scripts/gpu_check.sh
# after it built the tests; prints a row per tool last, after a `==== gpu_sanitize ====` line.
#
# Usage: BUILD=dir OUT=dir scripts/gpu_sanitize.sh [tool ...]   (tools: memcheck racecheck
#   synccheck, all three by default). JOBS=n processes at once (default 8). Writes
#   $OUT/sanitizer.log. Exit status: 0 when every tool found every test it ran clean.
set -uo pipefail

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build/gpu-check}
OUT=${OUT:-$BUILD}
JOBS=${JOBS:-8}
tools=("$@")
[[ ${#tools[@]} -gt 0 ]] || tools=(memcheck racecheck synccheck)
mkdir -p "$OUT"

# Left out: tests that fault on purpose (the sanitizer rightly reports their faults; their names say
# Fault or Failure), and the one that needs two streams' kernels running at once (under memcheck on
# an H200 the read waited for the other stream's kernel: it does not run them together).
INTENDED_FAULTS='Fault|Failure|AReadWaitsOnlyForTheLaunchesThatReferencedItsBuffer'
MEMCHECK_BINARIES=(launchwatch_conformance_cuda_test launchwatch_conformance_cuda_concurrency_test
                   launchwatch_cuda_backend_test)
KERNEL_CHECK_BINARIES=(launchwatch_conformance_cuda_test)

sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
export sanitizer
log=$OUT/sanitizer.log
: >"$log"
rows=()
failed=0

# Writes `binary suite.test` lines for every test of the binaries named to $1.all, and those not
# left out to $1.
list_tests() {
  local list=$1 bin
  shift
  : >"$list.all"
  for bin in "$@"; do
    "$BUILD/tests/cuda/$bin" --gtest_list_tests | awk -v bin="$BUILD/tests/cuda/$bin" '
      /^[^ ]/ { sub(/ *#.*/, ""); suite = $0; next }
      /^  / { name = $1; print bin " " suite name }' >>"$list.all"
  done
  grep -Ev "\.[A-Za-z]*(${INTENDED_FAULTS})" "$list.all" >"$list" || true
}

# Runs compute-sanitizer --tool $1 over the tests listed in $2 and adds a row.
sanitize() {
  local tool=$1 list=$2 started total left_out bad
  started=$(date +%s)
  echo "== GPU tests under compute-sanitizer ($tool), one process per test, $JOBS at a time"
  total=$(wc -l <"$list")
  left_out=$(( $(wc -l <"$list.all") - total ))
  export tool
  xargs -P "$JOBS" -L 1 bash -c '
    out=$("$sanitizer" --tool "$tool" --error-exitcode 86 --print-limit 20 "$0" \
          --gtest_filter="$1" 2>&1); rc=$?
    if [[ $rc -ne 0 ]]; then printf "[%s] FAILED %s (exit %s)\n%s\n" "$tool" "$1" "$rc" "$out"
    else echo "[$tool] ok $1"; fi
  ' <"$list" >>"$log" 2>&1
  bad=$(grep -c "^\[$tool\] FAILED" "$log" || true)
  if [[ $bad -eq 0 && $total -gt 0 ]]; then
    rows+=("$(printf '%-34s | %-4s | %s' "compute-sanitizer $tool" ok \
      "$total tests clean, $left_out left out (INTENDED_FAULTS), $(( $(date +%s) - started )) s")")
  else
    failed=1
    grep -A12 "^\[$tool\] FAILED" "$log" | head -60
    rows+=("$(printf '%-34s | %-4s | %s' "compute-sanitizer $tool" FAIL \
      "$bad of $total failed (sanitizer.log)")")
  fi
}

for tool in "${tools[@]}"; do
  case $tool in
    memcheck) binaries=("${MEMCHECK_BINARIES[@]}") ;;
    racecheck | synccheck) binaries=("${KERNEL_CHECK_BINARIES[@]}") ;;
    *) echo "gpu_sanitize.sh: unknown tool '$tool' (memcheck, racecheck, synccheck)" >&2; exit 2 ;;
  esac
  list_tests "$BUILD/sanitized_${tool}.txt" "${binaries[@]}"
  sanitize "$tool" "$BUILD/sanitized_${tool}.txt"
done

printf '==== gpu_sanitize ====\n'
printf '%s\n' "${rows[@]}"
exit $failed
