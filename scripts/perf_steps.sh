#!/usr/bin/env bash
# perf over a PyTorch model's measured steps only, one process per configuration, on a GPU machine:
# where a watched step's time goes (docs/benchmarks.md, "CUPTI zeroed each buffer on the launching
# thread"). Each configuration runs bench/torch/modules_table.py's worker under `perf record
# --control`, which the worker turns on for its measured steps alone (LAUNCHWATCH_BENCH_PERF_CTL),
# and leaves the step's wall and CPU times (JSON) and perf's reports by thread and library, by
# library and symbol (with sample counts), in $OUT/perf-steps. The GPU machine has no perf: carry
# the kit scripts/perf_kit.sh makes (the device tool's `carry: ["build/perfkit"]`).
#
# CONFIGS (default "plain hooks modules_untimed modules"): names of bench/torch/configurations.sh,
# which lists them, and
#   NAME_g           any of these with call graphs and Python's perf trampolines
#                    (PYTHONPERFSUPPORT=1): perf names each Python function (modules_g, hooks_g)
# Usage: OUT=dir [PERF_OUT=$OUT/perf-steps] [BUILD=build/gpu] [MODEL=resnet18-train] [STEPS=200] [CONFIGS=...]
#        [PERF_KIT=build/perfkit] [PYTHON=python3] [DEVICE=cuda] [COMMS="python3 pt_autograd_0"]
#        scripts/perf_steps.sh
# (COMMS: also reports of each of these threads alone.)
set -u
cd "$(dirname "$0")/.." || exit 1
source bench/torch/configurations.sh
OUT=${OUT:-build/device-out}
BUILD=${BUILD:-build/gpu}
perf=${PERF_KIT:-build/perfkit}/run_perf.sh
launchwatch=$BUILD/apps/launchwatch/launchwatch
counter=$BUILD/bench/runtimes/liblaunchwatch_kernel_counter.so
worker=("${PYTHON:-python3}" bench/torch/modules_table.py --worker "${MODEL:-resnet18-train}"
        --python-package "$BUILD/python" --device "${DEVICE:-cuda}" --steps "${STEPS:-200}")
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
  graph=""
  if ! configuration_command "${config%_g}" "$fifos/run-$name" "$launchwatch" "$counter" \
      "${worker[@]}" --json "$out/$name.json"; then
    echo "unknown configuration $config"
    continue
  fi
  case $config in
    *_g) graph="-g" command=(env PYTHONPERFSUPPORT=1 "${command[@]}") ;;
  esac
  # shellcheck disable=SC2086  # $graph is empty or one word
  LAUNCHWATCH_BENCH_PERF_CTL=$fifos/ctl,$fifos/ack timeout 150 "$perf" record $graph -e cpu-clock \
    -F 2999 -D -1 --control "fifo:$fifos/ctl,$fifos/ack" -o "$fifos/$name.data" -- "${command[@]}" \
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
