#!/usr/bin/env bash
# One PyTorch model's measured steps under several configurations, in ROUNDS rounds of one process
# each, the order rotated by one every round so that a drift of the machine falls on every
# configuration alike (issue 22: one process of a host-bound model moves by +-15%, so a ratio needs
# rounds, each paired with its own plain process). No perf, no profiler: the step as a user sees it.
# Each process is bench/torch/modules_table.py's worker; its JSON (OUT/CONFIG.ROUND.json) has the
# step's wall and CPU times, the stepping thread's faults and context switches and, for the
# DataLoader's model, the wait for each batch and the worker processes' CPU time. Prints one table
# last (step_rounds_table.py): per configuration the median of each field and the median of the
# rounds' step ratios to their plain process, with their range.
#
# CONFIGS (default "plain cupti_records off_untimed off modules"):
#   plain            the worker alone
#   hooks            the module hooks with a no-op Python sink, no tool
#   cupti_records    CUPTI's kernel records alone, nothing of launchwatch (the kernel counter as
#                    CUDA's injection): the floor any CUPTI-timed tool pays
#   off_untimed      launchwatch run --torch off --timing none (CUPTI's launch callbacks and the
#                    attribution, no hooks, no timing)
#   off              launchwatch run --torch off
#   modules_untimed  launchwatch run --torch modules --timing none
#   modules_untimed_node_hooks  the same with graph-node hooks for backward, not the sequence route
#   modules_untimed_noop  the same with the hooks' sink a no-op: no forward range reaches
#                    launchwatch (the sequence route, started at install before the sink is
#                    swapped, still opens backward ranges where it runs: the worker says so)
#   modules_untimed_noop_node_hooks  both: the hooks run under run, and no range at all reaches
#                    launchwatch (its launches are unscoped)
#   modules          launchwatch run --torch modules
# Usage: OUT=dir [BUILD=build/gpu] [MODEL=resnet18-dataloader-train] [STEPS=100] [ROUNDS=3]
#        [CONFIGS=...] [PYTHON=python3] [DEVICE=cuda] [TIMEOUT=120] bench/torch/step_rounds.sh
set -u
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-build/step-rounds}
BUILD=${BUILD:-build/gpu}
python=${PYTHON:-python3}
launchwatch=$BUILD/apps/launchwatch/launchwatch
counter=$BUILD/bench/runtimes/liblaunchwatch_kernel_counter.so
read -r -a configs <<<"${CONFIGS:-plain cupti_records off_untimed off modules}"
export NCCL_NVLS_ENABLE=0
mkdir -p "$OUT"
runs=$(mktemp -d)
for ((round = 1; round <= ${ROUNDS:-3}; round++)); do
  for ((i = 0; i < ${#configs[@]}; i++)); do
    config=${configs[(i + round - 1) % ${#configs[@]}]}
    json=$OUT/$config.$round.json
    worker=("$python" bench/torch/modules_table.py --worker "${MODEL:-resnet18-dataloader-train}"
            --python-package "$BUILD/python" --device "${DEVICE:-cuda}" --steps "${STEPS:-100}"
            --json "$json")
    tool=()
    case $config in
      plain) ;;
      hooks) worker+=(--sink noop) ;;
      cupti_records)
        tool=(env CUDA_INJECTION64_PATH="$counter" KERNEL_COUNTER_WHOLE=1
              KERNEL_COUNTER_OUT="$runs/counter-$config.$round.json") ;;
      off_untimed)
        tool=("$launchwatch" run --torch off --timing none --out "$runs/$config.$round" --) ;;
      off) tool=("$launchwatch" run --torch off --out "$runs/$config.$round" --) ;;
      modules_untimed)
        tool=("$launchwatch" run --torch modules --timing none --out "$runs/$config.$round" --) ;;
      modules_untimed_node_hooks)
        tool=(env LAUNCHWATCH_TORCH_BACKWARD=node-hooks "$launchwatch" run --torch modules
              --timing none --out "$runs/$config.$round" --) ;;
      modules_untimed_noop)
        worker+=(--sink noop)
        tool=("$launchwatch" run --torch modules --timing none --out "$runs/$config.$round" --) ;;
      modules_untimed_noop_node_hooks)
        worker+=(--sink noop)
        tool=(env LAUNCHWATCH_TORCH_BACKWARD=node-hooks "$launchwatch" run --torch modules
              --timing none --out "$runs/$config.$round" --) ;;
      modules) tool=("$launchwatch" run --torch modules --out "$runs/$config.$round" --) ;;
      *) echo "unknown configuration $config" >&2; continue ;;
    esac
    if ! timeout -k 10 "${TIMEOUT:-120}" "${tool[@]}" "${worker[@]}" \
        >"$OUT/$config.$round.log" 2>&1; then
      echo "round $round: $config failed (see $OUT/$config.$round.log)" >&2
    fi
  done
done
rm -rf "$runs"
"$python" bench/torch/step_rounds_table.py "$OUT" "${configs[@]}"
