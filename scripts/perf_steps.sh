#!/usr/bin/env bash
# perf over a PyTorch model's measured steps only, one process per configuration, on a GPU machine:
# where a watched step's time goes (docs/benchmarks.md, "CUPTI zeroed each buffer on the launching
# thread"). Each configuration runs bench/torch/modules_table.py's worker under `perf record
# --control`, which the worker turns on for its measured steps alone (LAUNCHWATCH_BENCH_PERF_CTL),
# and leaves the step's wall and CPU times (JSON) and perf's reports by thread and library, by
# library and symbol (with sample counts), in $OUT/perf-steps. The GPU machine has no perf: carry
# the kit scripts/perf_kit.sh makes (the device tool's `carry: ["build/perfkit"]`).
#
# CONFIGS (default "plain hooks modules_untimed modules"):
#   plain            the worker alone
#   hooks            the module hooks with a no-op Python sink, no tool
#   modules_untimed  launchwatch run --torch modules --timing none
#   modules          launchwatch run --torch modules
#   modules_node_hooks  the same with LAUNCHWATCH_TORCH_BACKWARD=node-hooks (graph-node hooks for
#                    backward, not the sequence route)
#   off_untimed      launchwatch run --torch off --timing none (CUPTI's launch callbacks and the
#                    attribution, no hooks, no timing)
#   NAME_g           any of these with call graphs and Python's perf trampolines
#                    (PYTHONPERFSUPPORT=1): perf names each Python function (modules_g, hooks_g)
# Usage: OUT=dir [PERF_OUT=$OUT/perf-steps] [BUILD=build/gpu] [MODEL=resnet18-train] [STEPS=200] [CONFIGS=...]
#        [PERF_KIT=build/perfkit] [PYTHON=python3] [DEVICE=cuda] [COMMS="python3 pt_autograd_0"]
#        scripts/perf_steps.sh
# (COMMS: also reports of each of these threads alone.)
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-build/device-out}
BUILD=${BUILD:-build/gpu}
perf=${PERF_KIT:-build/perfkit}/run_perf.sh
launchwatch=$BUILD/apps/launchwatch/launchwatch
worker="${PYTHON:-python3} bench/torch/modules_table.py --worker ${MODEL:-resnet18-train} --python-package $BUILD/python --device ${DEVICE:-cuda} --steps ${STEPS:-200}"
export NCCL_NVLS_ENABLE=0
out=${PERF_OUT:-$OUT/perf-steps}
mkdir -p "$out"
fifos=$(mktemp -d)
for config in ${CONFIGS:-plain hooks modules_untimed modules}; do
  # A configuration named again, or already measured in this folder, keeps the earlier reports:
  # this one's are NAME.2, NAME.3, ...
  name=$config round=2
  while [ -e "$out/$name.json" ] || [ -e "$out/$name.err" ]; do
    name=$config.$round round=$((round + 1))
  done
  rm -f "$fifos/ctl" "$fifos/ack"
  mkfifo "$fifos/ctl" "$fifos/ack"
  graph="" prefix=""
  case $config in
    *_g) graph="-g" prefix="env PYTHONPERFSUPPORT=1" ;;
  esac
  case ${config%_g} in
    plain) command="$prefix $worker --json $out/$name.json" ;;
    hooks) command="$prefix $worker --sink noop --json $out/$name.json" ;;
    modules_untimed) command="$prefix $launchwatch run --torch modules --timing none --out $fifos/run-$name -- $worker --json $out/$name.json" ;;
    modules) command="$prefix $launchwatch run --torch modules --out $fifos/run-$name -- $worker --json $out/$name.json" ;;
    modules_node_hooks) command="env LAUNCHWATCH_TORCH_BACKWARD=node-hooks $prefix $launchwatch run --torch modules --out $fifos/run-$name -- $worker --json $out/$name.json" ;;
    off_untimed) command="$prefix $launchwatch run --torch off --timing none --out $fifos/run-$name -- $worker --json $out/$name.json" ;;
    *) echo "unknown configuration $config"; continue ;;
  esac
  # shellcheck disable=SC2086  # the commands are word lists
  LAUNCHWATCH_BENCH_PERF_CTL=$fifos/ctl,$fifos/ack timeout 150 "$perf" record $graph -e cpu-clock \
    -F 2999 -D -1 --control "fifo:$fifos/ctl,$fifos/ack" -o "$fifos/$name.data" -- $command \
    >/dev/null 2>"$out/$name.err"
  echo "$name $(python3 -c "import json; d = json.load(open('$out/$name.json')); print('step %.2f ms, stepping thread CPU %.2f ms, process CPU %.2f ms' % (d['step_ms'], d['step_thread_cpu_ms'], d['step_process_cpu_ms']))" 2>/dev/null || echo failed: see "$out/$name.err")"
  report() { "$perf" report -i "$fifos/$name.data" --stdio "$@" 2>/dev/null | grep -v '^#' | grep -v '^$'; }
  if [ -z "$graph" ]; then
    report --no-children --sort comm,dso | head -30 >"$out/$name.comm_dso.txt"
    report --no-children --sort comm,dso,sym | head -150 >"$out/$name.sym.txt"
    report --no-children --sort dso,sym -n | head -200 >"$out/$name.dsosym.txt"
    for comm in ${COMMS:-}; do
      report --no-children --comms "$comm" --sort dso,sym -n | head -300 >"$out/$name.$comm.dsosym.txt"
    done
  else
    report --children --sort sym -g none | head -250 >"$out/$name.children.txt"
    # Each of COMMS's threads (comm names) alone, inclusive time by symbol: the stepping thread
    # (python3) and autograd's (pt_autograd_0) apart from the DataLoader's workers.
    for comm in ${COMMS:-}; do
      report --children --comms "$comm" --sort sym -g none | head -400 >"$out/$name.$comm.children.txt"
    done
  fi
done
rm -rf "$fifos"
