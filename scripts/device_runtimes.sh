#!/usr/bin/env bash
# Every runtime on a GPU machine (issue 23): builds with the `cuda` preset for sm_90 what
# bench/runtimes/runtimes_table.py needs (launchwatch, its injection, the reference kernel
# counter, the C++ program of launch forms, the exit program), then runs the table; arguments go
# to the table (--only NAMES, --exit-runs N, --long-run SECONDS; see its --help).
#
# Usage: OUT=dir [BUILD=build/gpu] [PYTHON=python3] scripts/device_runtimes.sh [TABLE ARGS...]
# Logs go to $OUT: build.log, runtimes.log (the table, also printed). Exit status: the table's.
set -uo pipefail

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build/gpu}
JOBS=${JOBS:-$(nproc)}
OUT=${OUT:-$BUILD}
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT"
TARGETS=(launchwatch launchwatch_inject launchwatch_kernel_counter launchwatch_runtime_forms
         launchwatch_bridge_exit_program)

echo "== machine"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
"$PYTHON" - <<'PY' || true
import importlib
for name in ("torch", "jax", "jaxlib", "cupy", "triton", "numba"):
    try:
        module = importlib.import_module(name)
        print(f"{name} {getattr(module, '__version__', '?')}")
    except Exception as error:  # noqa: BLE001 - a row saying why
        print(f"{name}: {error.__class__.__name__}: {error}")
PY

echo "== build (${JOBS} jobs)"
t=$(date +%s)
if ! { cmake --preset cuda -B "$BUILD" -DCMAKE_CUDA_ARCHITECTURES=90 >"$OUT/build.log" 2>&1 &&
       ninja -C "$BUILD" -j"$JOBS" "${TARGETS[@]}" >>"$OUT/build.log" 2>&1; }; then
  grep -E "error|Error" -A3 "$OUT/build.log" | head -40
  echo "build failed (build.log)"
  exit 1
fi
echo "built in $(( $(date +%s) - t )) s"

echo "== runtimes"
"$PYTHON" bench/runtimes/runtimes_table.py --build "$BUILD" --python "$PYTHON" \
  --out "$OUT/runtimes-work" "$@" 2>&1 | tee "$OUT/runtimes.log"
status=${PIPESTATUS[0]}
# The runs' folders are large (traces): keep only the table's log and the summaries.
find "$OUT/runtimes-work" -name trace.json -delete 2>/dev/null || true
exit "$status"
