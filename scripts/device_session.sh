#!/usr/bin/env bash
# The GPU runs still owed by issues 22, 23 and 24, in one device command (each part bounded by
# `timeout`, so one that hangs costs only its own minutes). Builds once for sm_90 (the `cuda`
# preset), then, as STEPS says (default: all but long and floor):
#   probe    bench/runtimes/child_graph_probe: what CUPTI says of child graphs' nodes (issue 23)
#   toggle   bench/cuda_bridge/activity_toggle_stress: 10,000 on/off cycles of CUPTI's kernel records
#            while 8 threads launch (issue 24's timing windows depend on it)
#   checks   scripts/gpu_check.sh QUICK=1 without the sanitizer (the CUDA suite, with finding 4's
#            CudaTimingBatch tests)
#   runtimes bench/runtimes/runtimes_table.py over every runtime, then --exit-runs 200 (issue 23)
#   torch    bench/torch/modules_table.sh on the two host-bound models with --variants (issue 22)
#   hostcost launchwatch's own host cost on this host's CPU (bench/runtime/gpu_launch_path_bench,
#            over the host-emulated runtime) beside the driver's: the launch-cost bench's raw
#            cudaLaunchKernel of a plain kernel and of launchwatch's entry signature (issue 24)
#   native   bench/peers/deferred_timing.cu: the CUDA backend's deferred timing against its targets,
#            its host row (client.launch untimed and deferred against raw cudaLaunchKernel) the
#            one issue 24 names (the wall ratios and durations of issue 10 in the same run)
#   windows  timing windows (issue 24): the bridge's GPU tests (CudaBridgeTimingWindows among them)
#            and the exit tests, then bench/cuda_bridge/cuda_bridge_bench in 25 rounds (its
#            `windows 20/80` row beside names-only and deferred, and the bridge's share of a
#            deferred launch over CUPTI's floors, whose noise was +-0.3 us in 9 rounds)
#   range    the bridge's GPU tests of CUPTI's kernel records turned off and on while threads launch:
#            by the profiler API range's Stop (inside CUPTI's callback of the stop call) and Start,
#            by timing windows, and a graph's replays in the range; then run's capture-range tests
#            (the launches inside and outside, and the note when the range never opened)
#   split    bench/torch/modules_table.sh on ResNet-18 with and without its DataLoader, with
#            --variants in 3 rounds (issue 22: the workers' share against the launches' and the
#            hooks', each paired with its round's plain process)
#   floor    bench/torch/modules_table.sh on ResNet-18 (no DataLoader) with --variants in 2 rounds of
#            300 measured steps, CUPTI's kernel records alone and timing windows among them (issue
#            22: the floor any CUPTI-timed tool pays on a host-bound step, beside launchwatch's rows)
#   blocks   bench/torch/modules_table.sh on ResNet-18 (no DataLoader) with --blocks 25 in 2
#            rounds of 2 processes of 300 measured steps: launchwatch's own share of the step over
#            CUPTI's floor, watched and unwatched blocks paired inside each process, the unwatched
#            ones without the module hooks in one process of a round and with them in the other
#            (the launches' attribution and timing alone) (issue 22); BLOCK_MODELS names other
#            models (resnet18-dataloader-train: its dataset holds the 600 steps), BLOCK_TIMING
#            the processes' `run --timing` (none: the timing's share, beside a run without it)
#   counts   bench/torch/modules_table.sh on the two models whose kernel counts differed from the
#            profiler's (ViT under torch.compile, ResNet-50 as a CUDA graph), with a fourth process
#            counted by CUPTI alone: kernel_diff.csv names the kernels that differ (issue 22)
#   vulkan   scripts/device_vulkan.sh (issue 24's shader-clock timing on the H200; the H200 has no
#            Vulkan loader: DEBS names the carried folder of Debian's .debs that script describes);
#            VULKAN_STEPS picks its steps (default all: tests demo launch timing)
#   long     runtimes_table.py --long-run ${LONG:-450} (issue 23; a command of its own)
#   hooks    the Python package's tests on this torch (ctest -L python: the torch hooks' tests
#            against torch 2.x, Dynamo's among them), then bench/torch/hook_cost.py --split on
#            the host-bound stack, the build's package and, where HOOKS_BEFORE names a copy of an
#            earlier package, that one in turn, twice (issue 22: a graph node's hook through its
#            hook dict against register_prehook). HOOKS_BEFORE is a folder holding launchwatch/,
#            carried: `git archive COMMIT python/launchwatch | tar -x -C DIR --strip-components=1`
#            and the build's launchwatch/_version.py beside it; its _c_api.abi3.so is compiled
#            here from its own _c_api.c and _c_hooks.c when it has none
#   sequence ResNet-18 training (10 steps) under run with LAUNCHWATCH_TORCH_BACKWARD=sequence (the
#            default) and node-hooks, launches per scope path (scope_launches_diff.py), then
#            ResNet-18's blocks (as `blocks`, one round) under each (issue 22: the sequence route)
#   checkpoint GPT-2 training with activation checkpointing (reentrant, then not; 10 steps) under
#            run with the sequence route and with node-hooks, launches per scope path compared,
#            then both models' modules_table.sh rows against torch.profiler (issue 22)
#   compiled ResNet-18 training under torch.compile (10 steps) under run with the sequence route
#            and with node-hooks, launches per scope path compared, then its modules_table.sh row
#            against torch.profiler (issue 22: a compiled training step's backward in its scope)
#   perf     perf over ResNet-18's measured steps (scripts/perf_steps.sh; carry the perf kit,
#            scripts/perf_kit.sh's build/perfkit): plain, under run with the sequence route (also
#            with call graphs) and with the node hooks; then fed by its DataLoader, plain, `run
#            --torch off --timing none` and run (issue 22: where the hooks' share of a host-bound
#            step goes, and why the DataLoader's workers make CUPTI's callbacks cost 1.24x there;
#            first bench/torch/h2d_copy.py plain and under run, untimed and timed: whether a CUPTI
#            subscriber slows the batch's copy from host memory, the one thing that step does
#            that the others do not)
#   rounds   bench/torch/step_rounds.sh: ResNet-18 fed by its DataLoader, 100 measured steps under
#            plain, CUPTI's kernel records alone, `run --torch off` untimed and timed, and `run`, in
#            3 rotated rounds (each step split into the wait for the batch and the rest, with the
#            workers' CPU); then ResNet-50's training step plain and under run in 3 rounds (issue
#            22: the two models over 1.10x, each ratio paired with its round's plain process);
#            ROUND_CONFIGS picks the DataLoader model's configurations (step_rounds.sh's CONFIGS),
#            ROUND_ROUNDS their rounds (3); ROUND_RESNET50=0 leaves ResNet-50 out
#   cpupairs bench/host/cpu_pairs.py on CPUs 0, 1, 7 and 8: which of the host's virtual CPUs slow
#            each other down (hidden hyperthreads), and the guest's steal time (issue 22: the
#            host's two speeds)
#   corebench bench/cuda_bridge/bridge_core_bench on this host's CPU, three runs each with run's
#            fold as run decides (a thread where 4 cores are allowed) and inline, in turn: the
#            attribution's part of a launch, names-only and deferred (issue 24)
# Usage: OUT=dir [BUILD=build/gpu] [STEPS="probe toggle ..."] [PACK=1] scripts/device_session.sh
# (STEPS=build only builds; HOOK_SPLIT=0 leaves hook_cost.py out of `hooks`, TABLES=0 the
# modules_table.sh rows out of `checkpoint` and `compiled`.)
# Prints a row per step last; every log is under $OUT. PACK=1 then packs $OUT into one file,
# $OUT/session.tar.gz, in place of what it holds: the device tool returns at most 8 files.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/device-out}
BUILD=${BUILD:-build/gpu}
JOBS=${JOBS:-$(nproc)}
steps=" ${STEPS:-probe toggle checks hostcost native runtimes torch windows split counts vulkan} "
want() { [[ $steps == *" $1 "* ]]; }
mkdir -p "$OUT"
rows=()
row() { rows+=("$(printf '%-10s | %-4s | %s' "$1" "$2" "$3")"); }
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

t=$(date +%s)
targets=(launchwatch launchwatch_inject launchwatch_child_graph_probe
         launchwatch_activity_toggle_stress launchwatch_kernel_counter launchwatch_runtime_forms
         launchwatch_bridge_exit_program launchwatch_gpu_launch_path_bench
         launchwatch_launch_cost_bench launchwatch_deferred_timing_bench launchwatch_cuda_bridge_test
         launchwatch_cuda_bridge_run_exit_test launchwatch_cuda_bridge_bench
         launchwatch_cuda_bridge_core_bench)
source scripts/find_cupti.sh
python_targets() {  # the package's C extension, where this Python's headers let CMake make it
  ninja -C "$BUILD" -t targets all 2>/dev/null | grep -o '^launchwatch_python_c_api:' | tr -d :
}
if cmake --preset cuda -B "$BUILD" -DCMAKE_CUDA_ARCHITECTURES=90 "${cupti_args[@]}" \
     -DLAUNCHWATCH_TEST_PYTHON="$(command -v python3)" \
     >"$OUT/build.log" 2>&1 && ninja -C "$BUILD" -j"$JOBS" "${targets[@]}" $(python_targets) \
     >>"$OUT/build.log" 2>&1; then
  row build ok "$(( $(date +%s) - t )) s"
else
  grep -E "error" -A3 "$OUT/build.log" | head -40
  row build FAIL "build.log"
fi

step() {  # step NAME SECONDS COMMAND...: runs it bounded, logs to OUT/NAME.log, adds a row
  local name=$1 limit=$2
  shift 2
  local started status
  started=$(date +%s)
  timeout -k 10 "$limit" "$@" >"$OUT/$name.log" 2>&1
  status=$?
  if [ $status -eq 0 ]; then
    row "$name" ok "$(( $(date +%s) - started )) s"
  else
    row "$name" FAIL "exit $status after $(( $(date +%s) - started )) s ($name.log)"
  fi
}

want cpupairs && step cpupairs 120 python3 bench/host/cpu_pairs.py --cpus 0,1,7,8 \
  --json "$OUT/cpu_pairs.json"
want probe && step probe 60 "$BUILD/bench/runtimes/launchwatch_child_graph_probe"
want toggle && step toggle 240 "$BUILD/bench/cuda_bridge/launchwatch_activity_toggle_stress" 10000 8
want checks && step checks 300 env BUILD="$BUILD" OUT="$OUT/checks" JOBS="$JOBS" SANITIZE=0 \
  BENCH=0 QUICK=1 scripts/gpu_check.sh
want hostcost && step hostcost 120 bash -c "'$BUILD/bench/runtime/launchwatch_gpu_launch_path_bench' \
  --rounds 60 --launches 4000 && '$BUILD/bench/cuda/launchwatch_launch_cost_bench'"
want native && step native 240 "$BUILD/bench/peers/launchwatch_deferred_timing_bench" --rounds 5
want runtimes && step runtimes 240 env OUT="$OUT/runtimes" BUILD="$BUILD" \
  scripts/device_runtimes.sh --exit-runs 200
want torch && step torch 330 env OUT="$OUT/torch" BUILD="$BUILD" SKIP_BUILD=1 \
  MODELS=resnet50-train,resnet18-dataloader-train \
  VARIANTS=resnet50-train,resnet18-dataloader-train TIMEOUT=90 TABLE_TIMEOUT=320 BUDGET=280 \
  bench/torch/modules_table.sh
want windows && step windows 240 bash -c "LAUNCHWATCH_EXIT_RUNS=20 ctest --test-dir '$BUILD' \
  -R 'CudaBridge|RunEndsWhileCudaWorks' --no-tests=error --output-on-failure && \
  '$BUILD/bench/cuda_bridge/launchwatch_cuda_bridge_bench' 20000 25"
want range && step range 180 bash -c "'$BUILD/tests/cuda_bridge/launchwatch_cuda_bridge_test' \
  --gtest_filter='CudaBridgeProfilerRange*:CudaBridgeReplaysInProfilerRange*:CudaBridgeTimingWindows*' \
  && ninja -C '$BUILD' launchwatch_run_gpu_test launchwatch_cuda_bridge_scopes >/dev/null && \
  ctest --test-dir '$BUILD' -R 'RunOnGpu.*(CaptureRange|ProfilerApi)' --no-tests=error --output-on-failure"
want split && step split 420 env OUT="$OUT/split" BUILD="$BUILD" SKIP_BUILD=1 \
  MODELS=resnet18-train,resnet18-dataloader-train VARIANTS=resnet18-train,resnet18-dataloader-train \
  VARIANT_ROUNDS=3 TIMEOUT=60 TABLE_TIMEOUT=410 BUDGET=380 bench/torch/modules_table.sh
want floor && step floor 420 env OUT="$OUT/floor" BUILD="$BUILD" SKIP_BUILD=1 \
  MODELS=resnet18-train VARIANTS=resnet18-train VARIANT_ROUNDS=2 MEASURED_STEPS=300 TIMEOUT=60 \
  TABLE_TIMEOUT=410 BUDGET=360 COUNTER="$BUILD/bench/runtimes/liblaunchwatch_kernel_counter.so" \
  bench/torch/modules_table.sh
want blocks && step blocks 300 env OUT="$OUT/blocks" BUILD="$BUILD" SKIP_BUILD=1 \
  MODELS="${BLOCK_MODELS:-resnet18-train}" VARIANT_ROUNDS=2 BLOCKS=25 MEASURED_STEPS=300 \
  TIMEOUT=90 TABLE_TIMEOUT=290 BUDGET=240 bench/torch/modules_table.sh
want counts && step counts 290 env OUT="$OUT/counts" BUILD="$BUILD" SKIP_BUILD=1 \
  MODELS=vit-compile-infer,resnet50-cudagraph-infer TIMEOUT=90 TABLE_TIMEOUT=280 BUDGET=220 \
  COUNTER="$BUILD/bench/runtimes/liblaunchwatch_kernel_counter.so" bench/torch/modules_table.sh
want vulkan && step vulkan 240 env OUT="$OUT/vulkan" DEBS="${DEBS:-}" \
  STEPS="${VULKAN_STEPS:-tests demo launch timing}" scripts/device_vulkan.sh
hook_split() {  # the --split table of the build's package, and of HOOKS_BEFORE's in turn
  local round package before=${HOOKS_BEFORE:+$HOOKS_BEFORE/launchwatch}
  if [ -n "$before" ] && [ ! -e "$before/_c_api.abi3.so" ]; then
    cc $(python3-config --includes) -O2 -fPIC -fvisibility=hidden -std=gnu11 -shared \
      -o "$before/_c_api.abi3.so" "$before/_c_api.c" "$before/_c_hooks.c" -ldl || return
  fi
  for round in 1 2; do
    for package in "$BUILD/python" ${HOOKS_BEFORE:+"$HOOKS_BEFORE"}; do
      echo "== round $round, package $package"
      python3 bench/torch/hook_cost.py --launchwatch "$BUILD/apps/launchwatch/launchwatch" \
        --split "${HOOK_ROUNDS:-100}" --package "$package" || return
    done
  done
}
export -f hook_split
want hooks && step hooks 300 env BUILD="$BUILD" HOOKS_BEFORE="${HOOKS_BEFORE:-}" \
  HOOK_SPLIT="${HOOK_SPLIT:-1}" bash -c \
  'ctest --test-dir "$BUILD" -L python --no-tests=error --output-on-failure &&
   { [ "${HOOK_SPLIT:-1}" = 0 ] || hook_split; }'
backward_routes() {  # backward_routes MODEL DIR [LINES]: 10 steps under run with the sequence
  local model=$1 dir=$2 mode  # route and with the node hooks, launches per scope path compared
  for mode in sequence node-hooks; do
    rm -rf "$dir/$mode"
    LAUNCHWATCH_TORCH_BACKWARD=$mode timeout 150 "$BUILD/apps/launchwatch/launchwatch" run \
      --out "$dir/$mode" -- python3 bench/torch/modules_table.py --worker "$model" \
      --steps 10 --device cuda --python-package "$BUILD/python" \
      --json "$dir/$mode.json" > "$dir/$mode.txt" 2>&1
    echo "== $model, $mode: exit $?"
  done
  python3 bench/torch/scope_launches_diff.py "$dir/sequence/summary.json" \
    "$dir/node-hooks/summary.json" | tail -n "${3:-+1}"  # its last LINES (default all)
}
export -f backward_routes
sequence_check() {  # the sequence route against the node hooks: one program's scopes, then blocks
  local mode
  backward_routes resnet18-train "$OUT/sequence"
  for mode in sequence node-hooks; do
    echo "== blocks, $mode"
    LAUNCHWATCH_TORCH_BACKWARD=$mode OUT="$OUT/sequence/blocks-$mode" BUILD="$BUILD" SKIP_BUILD=1 \
      MODELS=resnet18-train VARIANT_ROUNDS=1 BLOCKS=25 MEASURED_STEPS=300 TIMEOUT=90 \
      TABLE_TIMEOUT=150 BUDGET=120 timeout 160 bench/torch/modules_table.sh | grep -A4 "watched /"
  done
}
export -f sequence_check
want sequence && mkdir -p "$OUT/sequence" && step sequence 480 env BUILD="$BUILD" OUT="$OUT" \
  bash -c sequence_check
checkpoint_check() {  # the route under activation checkpointing, against the node hooks
  local model
  for model in gpt2-checkpoint-train gpt2-checkpoint-nonreentrant-train; do
    mkdir -p "$OUT/checkpoint/$model"
    backward_routes "$model" "$OUT/checkpoint/$model" 16
  done
  [ "${TABLES:-1}" = 0 ] && return
  OUT="$OUT/checkpoint/table" BUILD="$BUILD" SKIP_BUILD=1 TIMEOUT=120 TABLE_TIMEOUT=280 \
    BUDGET=240 MODELS=gpt2-checkpoint-train,gpt2-checkpoint-nonreentrant-train \
    bench/torch/modules_table.sh | grep -v '^| `'
}
export -f checkpoint_check
want checkpoint && mkdir -p "$OUT/checkpoint" && step checkpoint 560 env BUILD="$BUILD" \
  OUT="$OUT" TABLES="${TABLES:-1}" bash -c checkpoint_check
compiled_check() {  # a compiled training step under the route, against the node hooks
  mkdir -p "$OUT/compiled/routes"
  backward_routes resnet18-compile-train "$OUT/compiled/routes"
  [ "${TABLES:-1}" = 0 ] && return
  OUT="$OUT/compiled/table" BUILD="$BUILD" SKIP_BUILD=1 TIMEOUT=200 TABLE_TIMEOUT=400 \
    BUDGET=360 MODELS=resnet18-compile-train bench/torch/modules_table.sh | grep -v '^| `'
}
export -f compiled_check
want compiled && step compiled 560 env BUILD="$BUILD" OUT="$OUT" TABLES="${TABLES:-1}" \
  bash -c compiled_check
perf_check() {  # where the host-bound costs go: a batch's copy, then perf over the steps
  local how
  for how in plain untimed timed; do
    echo "== h2d, $how"
    case $how in
      plain) python3 bench/torch/h2d_copy.py ;;
      untimed) "$BUILD/apps/launchwatch/launchwatch" run --torch off --timing none \
        --out "$OUT/perf/h2d-$how" -- python3 bench/torch/h2d_copy.py ;;
      timed) "$BUILD/apps/launchwatch/launchwatch" run --torch off --out "$OUT/perf/h2d-$how" \
        -- python3 bench/torch/h2d_copy.py ;;
    esac 2>&1 | grep '^{'
  done
  PERF_OUT="$OUT/perf/resnet18-train" MODEL=resnet18-train \
    CONFIGS="plain modules modules_node_hooks modules_g" scripts/perf_steps.sh
  # 30 steps, as in the seventeenth session's profile this one is compared with.
  PERF_OUT="$OUT/perf/resnet18-dataloader-train" MODEL=resnet18-dataloader-train STEPS=30 \
    CONFIGS="plain off_untimed modules" scripts/perf_steps.sh
}
export -f perf_check
want perf && mkdir -p "$OUT/perf" && step perf 480 env BUILD="$BUILD" OUT="$OUT" bash -c perf_check
want rounds && step rounds 460 bash -c "OUT='$OUT/rounds' BUILD='$BUILD' \
  MODEL=resnet18-dataloader-train STEPS=100 ROUNDS=${ROUND_ROUNDS:-3} \
  CONFIGS='${ROUND_CONFIGS:-plain cupti_records off_untimed off modules}' \
  bench/torch/step_rounds.sh && { [ '${ROUND_RESNET50:-1}' != 1 ] || \
  OUT='$OUT/rounds-resnet50' BUILD='$BUILD' MODEL=resnet50-train STEPS=60 ROUNDS=3 \
  CONFIGS='plain modules' bench/torch/step_rounds.sh; }"
want corebench && step corebench 200 bash -c "for round in 1 2 3; do for fold in auto inline; do \
  echo \"== round \$round, fold \$fold\"; \
  '$BUILD/bench/cuda_bridge/launchwatch_cuda_bridge_core_bench' 60000 15 0 -1 \$fold; done; done"
want long && step long 560 env OUT="$OUT/long" BUILD="$BUILD" \
  scripts/device_runtimes.sh --only none --long-run "${LONG:-450}"

echo "==== device_session ===="
printf '%s\n' "${rows[@]}"
for name in cpupairs probe toggle hostcost native windows range split vulkan hooks sequence checkpoint \
    compiled perf rounds corebench; do
  [ -f "$OUT/$name.log" ] && { echo "== $name"; tail -40 "$OUT/$name.log"; }
done
if [ -n "${PACK:-}" ]; then
  packed=$(mktemp --suffix=.tar.gz)
  tar czf "$packed" -C "$OUT" . && rm -rf "${OUT:?}"/* && mv "$packed" "$OUT/session.tar.gz"
  echo "packed: $OUT/session.tar.gz"
fi
