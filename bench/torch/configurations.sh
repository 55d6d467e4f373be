# The configurations a PyTorch model's measured steps are compared under, one process each, shared
# by bench/torch/step_rounds.sh and scripts/perf_steps.sh (source this file). Names:
#   plain            the worker alone
#   hooks            the module hooks with a no-op Python sink, no tool
#   cupti_records    CUPTI's kernel records alone, nothing of launchwatch (the kernel counter as
#                    CUDA's injection): the floor any CUPTI-timed tool pays
#   off_untimed      launchwatch run --torch off --timing none (CUPTI's launch callbacks and the
#                    attribution, no hooks, no timing)
#   off              launchwatch run --torch off
#   modules_untimed  launchwatch run --torch modules --timing none
#   modules          launchwatch run --torch modules
#   probe_dynamo_import, probe_call_wrapper, probe_call_wrapper_dynamo
#                    one part of what the hooks' install does, alone, no hook, no tool (the
#                    worker's --probe: Dynamo's eval_frame imported; Module.__call__ wrapped in a
#                    Python pass-through; the same with the Dynamo check on every call)
# and, after modules or modules_untimed:
#   _node_hooks      graph-node hooks for backward, not the sequence route
#                    (LAUNCHWATCH_TORCH_BACKWARD=node-hooks)
#   _noop            the hooks' sink a no-op: no forward range reaches launchwatch (the sequence
#                    route, started at install before the sink is swapped, still opens backward
#                    ranges where it runs: the worker says so)
#   _noop_node_hooks both: the hooks run under run, and no range at all reaches launchwatch
#
# configuration_command NAME RUN_OUT LAUNCHWATCH COUNTER WORKER...: sets the array `command` to
# WORKER (the worker's command line) as configuration NAME runs it, `launchwatch run`'s output (or
# the counter's JSON) going to RUN_OUT; returns 1 for an unknown NAME.
configuration_command() {
  local name=$1 run_out=$2 launchwatch=$3 counter=$4
  shift 4
  local worker=("$@") run=() variables=()
  case $name in
    plain) ;;
    hooks) worker+=(--sink noop) ;;
    probe_dynamo_import) worker+=(--probe dynamo-import) ;;
    probe_call_wrapper) worker+=(--probe call-wrapper) ;;
    probe_call_wrapper_dynamo) worker+=(--probe call-wrapper-dynamo) ;;
    cupti_records)
      variables=(CUDA_INJECTION64_PATH="$counter" KERNEL_COUNTER_WHOLE=1
                 KERNEL_COUNTER_OUT="$run_out.json") ;;
    off_untimed) run=(--torch off --timing none) ;;
    off) run=(--torch off) ;;
    modules_untimed | modules_untimed_*) run=(--torch modules --timing none) ;;
    modules | modules_*) run=(--torch modules) ;;
    *) return 1 ;;
  esac
  case $name in
    modules_untimed | modules) ;;
    modules_untimed_node_hooks | modules_node_hooks)
      variables=(LAUNCHWATCH_TORCH_BACKWARD=node-hooks) ;;
    modules_untimed_noop | modules_noop) worker+=(--sink noop) ;;
    modules_untimed_noop_node_hooks | modules_noop_node_hooks)
      worker+=(--sink noop)
      variables=(LAUNCHWATCH_TORCH_BACKWARD=node-hooks) ;;
    modules_*) return 1 ;;
  esac
  command=(env "${variables[@]}")
  if [ ${#run[@]} -gt 0 ]; then
    command+=("$launchwatch" run "${run[@]}" --out "$run_out" --)
  fi
  command+=("${worker[@]}")
}
