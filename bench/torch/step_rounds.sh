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
# CONFIGS (default "plain cupti_records off_untimed off modules"): names of
# bench/torch/configurations.sh, which lists them.
# Usage: OUT=dir [BUILD=build/gpu] [MODEL=resnet18-dataloader-train] [STEPS=100] [ROUNDS=3]
#        [CONFIGS=...] [PYTHON=python3] [DEVICE=cuda] [TIMEOUT=120] bench/torch/step_rounds.sh
set -u
cd "$(dirname "$0")/../.." || exit 1
source bench/torch/configurations.sh
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
    if ! configuration_command "$config" "$runs/$config.$round" "$launchwatch" "$counter" \
        "${worker[@]}"; then
      echo "unknown configuration $config" >&2
      continue
    fi
    if ! timeout -k 10 "${TIMEOUT:-120}" "${command[@]}" >"$OUT/$config.$round.log" 2>&1; then
      echo "round $round: $config failed (see $OUT/$config.$round.log)" >&2
    fi
  done
done
rm -rf "$runs"
"$python" bench/torch/step_rounds_table.py "$OUT" "${configs[@]}"
