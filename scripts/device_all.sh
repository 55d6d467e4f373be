#!/usr/bin/env bash
# Everything launchwatch checks and measures on a GPU machine, in one command: builds once for sm_90
# (the `cuda` preset), then runs the CUDA tests and conformance suite (scripts/gpu_check.sh: plain,
# then under compute-sanitizer, plus the timing-mechanism and launch-cost benchmarks), the peers
# harness (issue 6), the demo on the GPU, and the CPU-side micro-benchmarks on this host's cores.
# Prints a short table last.
#
# Usage: OUT=dir scripts/device_all.sh [step ...]   (OUT defaults to build/device-out)
#   steps: checks (gpu_check.sh), demo, peers, cpu, threads, timing; all but threads and timing by
#   default. timing runs launchwatch_deferred_timing_bench (issue 10's targets; LONG=N adds one
#   attribute_pass of N deferred-timed launches). threads
#   runs scripts/bench_before_after.sh against the source tree in $BASE_SRC (unobserved launches
#   from 1, 2, 4 and 16 threads on this host's cores, a base commit against this tree). The build is incremental,
#   so a machine kept warm between two calls builds once: `... checks demo` then `... peers cpu`.
# Outputs: $OUT/summary.txt, $OUT/demo_cuda.txt, $OUT/peers.json, $OUT/peers_launch_cost.svg, and
# every log in $OUT/logs.tar.gz (a device run brings back at most 8 files).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/device-out}
BUILD=${BUILD:-build/gpu}
JOBS=${JOBS:-$(nproc)}
logs=$BUILD/logs
mkdir -p "$OUT" "$logs"
steps=" ${*:-checks demo peers cpu} "
want() { [[ $steps == *" $1 "* ]]; }
rows=()
row() { rows+=("$(printf '%-30s | %-4s | %s' "$1" "$2" "$3")"); }
started=$(date +%s)

echo "== configure and build everything the run uses (-j$JOBS)"
t=$(date +%s)
targets=(launchwatch_conformance_cuda_test launchwatch_conformance_cuda_concurrency_test launchwatch_cuda_timing_budget_test launchwatch_cuda_deferred_timing_test launchwatch_cuda_launch_stress_test
         launchwatch_cuda_backend_test launchwatch_cuda_host_test
         launchwatch_cuda_bridge_test launchwatch_cuda_bridge_stress_test launchwatch_cuda_bridge_host_test
         launchwatch_inject launchwatch_cuda_bridge_scopes launchwatch_run_gpu_test
         launchwatch_timing_mechanism_bench launchwatch_launch_cost_bench launchwatch_peers_bench
         launchwatch_deferred_timing_bench
         launchwatch launchwatch_observer_bench launchwatch_attribution_bench launchwatch_launch_bench)
source scripts/find_cupti.sh
if cmake --preset cuda -B "$BUILD" -DCMAKE_CUDA_ARCHITECTURES=90 "${cupti_args[@]}" >"$logs/configure.log" 2>&1 &&
   ninja -C "$BUILD" -j"$JOBS" "${targets[@]}" >"$logs/build.log" 2>&1; then
  row "build (cuda, sm_90)" ok "$(( $(date +%s) - t )) s"
else
  grep -E "error" -A3 "$logs/build.log" "$logs/configure.log" | head -60
  row "build (cuda, sm_90)" FAIL "logs/build.log"
fi

if want checks; then
  echo "== CUDA tests, compute-sanitizer, timing benchmarks (scripts/gpu_check.sh)"
  BUILD=$BUILD OUT=$logs JOBS=$JOBS QUICK=${QUICK:-1} timeout 360 scripts/gpu_check.sh >"$logs/gpu_check.txt" 2>&1
  status=$?
  sed -n '/==== gpu_check ====/,$p' "$logs/gpu_check.txt" | tail -n +2 >"$logs/gpu_check_rows.txt"
  while IFS= read -r line; do rows+=("$line"); done <"$logs/gpu_check_rows.txt"
  [[ $status -eq 0 ]] || row "gpu_check.sh" FAIL "exit $status (logs/gpu_check.txt)"
fi

if want demo; then
echo "== demo on the GPU"
t=$(date +%s)
if timeout 60 "$BUILD/apps/launchwatch/launchwatch" demo --backend cuda --no-progress --out "$logs/demo-cuda" \
     >"$OUT/demo_cuda.txt" 2>&1; then
  row "launchwatch demo --backend cuda" ok "$(grep -o 'numerics:.*' "$OUT/demo_cuda.txt"), $(( $(date +%s) - t )) s"
else
  row "launchwatch demo --backend cuda" FAIL "demo_cuda.txt"
fi
fi

if want peers; then
echo "== peers harness"
t=$(date +%s)
if timeout 200 "$BUILD/bench/peers/launchwatch_peers_bench" --json "$OUT/peers.json" --max-seconds 170 ${PEERS_ARGS:-} \
     >"$logs/peers_tables.txt" 2>&1; then
  python3 scripts/plot_benchmarks.py "$OUT/peers.json" --svg "$OUT/peers_launch_cost.svg" --summary \
    >"$logs/peers_summary.txt" 2>&1
  row "peers harness" ok "$(( $(date +%s) - t )) s"
else
  row "peers harness" FAIL "logs/peers_tables.txt"
fi
fi

if want timing; then
echo "== deferred timing against its targets"
t=$(date +%s)
if timeout 500 "$BUILD/bench/peers/launchwatch_deferred_timing_bench" ${LONG:+--long $LONG} \
     >"$OUT/deferred_timing.txt" 2>&1; then
  row "deferred timing bench" ok "deferred_timing.txt, $(( $(date +%s) - t )) s"
else
  row "deferred timing bench" FAIL "deferred_timing.txt"
fi
fi

if want threads; then
echo "== threaded launches, before and after (scripts/bench_before_after.sh $BASE_SRC)"
t=$(date +%s)
if [[ -d ${BASE_SRC:-} ]] && timeout 400 scripts/bench_before_after.sh "$BASE_SRC" 3 >"$logs/threads.txt" 2>&1; then
  sed -n '/unobserved launch, ns per launch/,$p' "$logs/threads.txt" >"$OUT/threads.txt"
  row "threaded launches before/after" ok "threads.txt, $(( $(date +%s) - t )) s"
else
  row "threaded launches before/after" FAIL "logs/threads.txt (BASE_SRC=${BASE_SRC:-unset})"
fi
fi

if want cpu; then
echo "== CPU micro-benchmarks on this host"
for bench in core/launchwatch_observer_bench attribute/launchwatch_attribution_bench runtime/launchwatch_launch_bench; do
  name=$(basename "$bench")
  if timeout 60 "$BUILD/bench/$bench" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
       >"$logs/$name.txt" 2>&1; then
    row "$name" ok "logs/$name.txt"
  else
    row "$name" FAIL "logs/$name.txt"
  fi
done
fi

tar -czf "$OUT/logs_$(echo $steps | tr ' ' '_').tar.gz" -C "$BUILD" logs
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
  sed -n '/Summary/,$p' "$logs/launchwatch_observer_bench.txt" 2>/dev/null | head -30
  cat "$logs/peers_summary.txt" 2>/dev/null
  cat "$OUT/threads.txt" 2>/dev/null
  printf '\n==== device_all (%s s) ====\n' "$(( $(date +%s) - started ))"
  printf '%s\n' "${rows[@]}"
} | tee "$OUT/summary.txt"
