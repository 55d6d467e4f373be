#!/usr/bin/env bash
# Issue 22's table on a GPU machine in one command: builds launchwatch with CUDA (the `cuda`
# preset, sm_90) and its Python package, then runs bench/torch/modules_table.py (five real models,
# each under `launchwatch run --torch modules`, under torch.profiler with the same hooks, and
# plain) and prints the table for docs/benchmarks.md. No network: the models are built from
# configs.
# Usage: OUT=dir BUILD=dir [MODELS=a,b] [VARIANTS=a,b] [VARIANT_ROUNDS=n] [TIMEOUT=s] [TABLE_TIMEOUT=s] [BUDGET=s]
#        [MEASURED_STEPS=n] [SKIP_BUILD=1] bench/torch/modules_table.sh
# Writes OUT/build.log, OUT/table.md, and OUT/modules-table: each model's processes' results,
# kernel_diff.csv and launchwatch's summaries (the traces stay in BUILD/modules-table).
# VARIANTS: the models whose step wall is split (modules_table.py --variants), VARIANT_ROUNDS how
# many rounds of those processes (--variant-rounds, default 1); COUNTER: the CUPTI-only kernel
# counter library (--counter: a fourth process per model, counted by CUPTI alone, and with VARIANTS
# the variant timed by CUPTI's kernel records alone); MEASURED_STEPS: the measured steps of every
# model (--steps; default each model's own); BLOCKS: --blocks (launchwatch's own share inside one
# process, VARIANT_ROUNDS rounds of two processes of it per model), BLOCK_TIMING their `run
# --timing` (--blocks-timing; default run's own); TIMEOUT: seconds
# per process (240); TABLE_TIMEOUT: seconds for the whole table (540), BUDGET: seconds after which
# it starts no more processes (modules_table.py --budget). SKIP_BUILD=1 runs the table
# on an earlier build, so the build and the table can be two commands of a machine that limits
# each.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-build/device-out}
BUILD=${BUILD:-build/gpu}
ALL=resnet50-train,gpt2-train,vit-compile-infer,resnet50-cudagraph-infer,resnet18-dataloader-train
MODELS=${MODELS:-$ALL}
mkdir -p "$OUT"
source scripts/find_cupti.sh
t=$(date +%s)
if [ -z "${SKIP_BUILD:-}" ]; then
  if ! { cmake --preset cuda -B "$BUILD" -DCMAKE_CUDA_ARCHITECTURES=90 "${cupti_args[@]}" &&
         ninja -C "$BUILD" -j"$(nproc)" launchwatch launchwatch_inject
       } >"$OUT/build.log" 2>&1; then
    grep -E "error" -A3 "$OUT/build.log" | head -60
    exit 1
  fi
  echo "build: $(( $(date +%s) - t )) s"
fi
python3 -c "import sys, torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
timeout "${TABLE_TIMEOUT:-540}" python3 bench/torch/modules_table.py \
  --launchwatch "$BUILD/apps/launchwatch/launchwatch" --models "$MODELS" \
  --variants "${VARIANTS:-}" --variant-rounds "${VARIANT_ROUNDS:-1}" --timeout "${TIMEOUT:-240}" \
  ${BUDGET:+--budget "$BUDGET"} ${COUNTER:+--counter "$COUNTER"} \
  ${MEASURED_STEPS:+--steps "$MEASURED_STEPS"} ${BLOCKS:+--blocks "$BLOCKS"} \
  ${BLOCK_TIMING:+--blocks-timing "$BLOCK_TIMING"} \
  --out "$BUILD/modules-table" 2>&1 | tee "$OUT/table.md"
status=${PIPESTATUS[0]}
mkdir -p "$OUT/modules-table"
(cd "$BUILD/modules-table" && find . \( -name '*.csv' -o -name '*.json' \) ! -name trace.json \
   -exec cp --parents {} "$OUT/modules-table" \;) 2>/dev/null || true
exit "$status"
