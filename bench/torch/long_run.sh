#!/usr/bin/env bash
# `launchwatch run` over a long PyTorch training loop on a GPU machine (issue 20): for each step
# count, the kernels the report counted, the peak resident memory of the program under `run`, the
# trace's size, and the time from the loop's end to `launchwatch run` having printed its report.
# Memory must be bounded by distinct (scope, kernel) pairs, not launches: compare the rows.
# Usage: LAUNCHWATCH=path/to/launchwatch OUT=dir bench/torch/long_run.sh STEPS...
set -uo pipefail
cd "$(dirname "$0")/../.."
LAUNCHWATCH=${LAUNCHWATCH:-build/gpu/apps/launchwatch/launchwatch}
OUT=${OUT:-build/long-run}
mkdir -p "$OUT"
printf '| steps | kernels in the report | peak RSS (MB) | trace.json (MB) | loop end to report (s) |\n'
printf '| --- | --- | --- | --- | --- |\n'
for steps in "$@"; do
  folder="$OUT/run-$steps"
  rm -rf "$folder"
  python3 - "$LAUNCHWATCH" "$folder" "$steps" <<'PY'
import json, resource, subprocess, sys, time, os
launchwatch, folder, steps = sys.argv[1], sys.argv[2], sys.argv[3]
ended = folder + ".ended"
log = open(folder + ".log", "w")
status = subprocess.run([launchwatch, "run", "--out", folder, "--", sys.executable,
                         "bench/torch/long_run.py", "--steps", steps, "--ended", ended],
                        stdout=log, stderr=subprocess.STDOUT).returncode
done = time.time()
rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
summary = json.load(open(os.path.join(folder, "summary.json")))
trace_mb = os.path.getsize(os.path.join(folder, "trace.json")) / 1e6
exit_s = done - float(open(ended).read())
print(f"| {steps} | {summary['launches']} | {rss_mb:.0f} | {trace_mb:.0f} | {exit_s:.2f} |"
      + ("" if status == 0 else f" (exit {status})"))
PY
done
