#!/usr/bin/env bash
# Unobserved launches from 1, 2, 4 and 16 threads, measured side by side in one run for two builds
# of launchwatch: BASE (a source tree, e.g. `git archive <commit> | tar -x -C DIR`) and this tree.
# Both are built (CPU backend, Release) and installed into build/, the benchmark
# (bench/runtime/threaded_launch_bench.cpp, of this tree) is built against each, and the two binaries
# run in turn, ROUNDS times each, so drifts of the machine hit both alike.
#
# Usage: scripts/bench_before_after.sh BASE_SOURCE_DIR [ROUNDS] [-- BENCH_ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
base=$(realpath "$1"); shift
rounds=${1:-3}; [ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
jobs=${LAUNCHWATCH_JOBS:-$(nproc)}
out=build/before_after
mkdir -p "$out"

build_one() {  # name source
  local name=$1 source=$2
  cmake -S "$source" -B "$out/$name-lib" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLAUNCHWATCH_CUDA=OFF \
    -DLAUNCHWATCH_BUILD_TESTS=OFF -DLAUNCHWATCH_BUILD_BENCHMARKS=OFF -DLAUNCHWATCH_BUILD_APPS=OFF >/dev/null
  cmake --build "$out/$name-lib" -j "$jobs" >/dev/null
  cmake --install "$out/$name-lib" --prefix "$out/$name-prefix" >/dev/null
  cmake -S bench/runtime/standalone -B "$out/$name-bench" -G Ninja \
    -DCMAKE_PREFIX_PATH="$(realpath "$out/$name-prefix")" >/dev/null
  cmake --build "$out/$name-bench" -j "$jobs" >/dev/null
}

build_one before "$base"
build_one after .
for r in $(seq "$rounds"); do
  for name in before after; do
    echo "== $name, round $r"
    "$out/$name-bench/launchwatch_threaded_launch_bench" "$@" | tee "$out/$name-$r.txt"
  done
done
# The summary: per thread count, the median over rounds of each build's figure, and after/before.
python3 - "$out" "$rounds" <<'PY'
import statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def read(name):
    rows = {}
    for r in range(1, rounds + 1):
        for line in open(f"{out}/{name}-{r}.txt"):
            parts = line.split()
            if len(parts) == 3 and parts[0].isdigit():
                rows.setdefault(int(parts[0]), []).append(float(parts[1]))
    return {k: statistics.median(v) for k, v in rows.items()}
before, after = read("before"), read("after")
print("\nunobserved launch, ns per launch (median of rounds)")
print(f"{'threads':>8}  {'before':>9}  {'after':>9}  {'after/before':>12}  {'before vs 1':>11}  {'after vs 1':>10}")
for t in sorted(before):
    print(f"{t:>8}  {before[t]:>9.1f}  {after[t]:>9.1f}  {after[t]/before[t]:>11.2f}x"
          f"  {before[t]/before[min(before)]:>10.2f}x  {after[t]/after[min(after)]:>9.2f}x")
PY
