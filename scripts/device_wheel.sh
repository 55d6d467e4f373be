#!/usr/bin/env bash
# The CUDA wheel on a GPU machine, in one command (docs/design.md, "The wheel"): builds the wheel's
# binaries with CUDA (the `wheel` preset: the CUDA runtime linked in, CUPTI opened at run time) and
# packs the wheel; installs it with `pip install --no-deps` into a fresh virtual environment that
# sees the machine's PyTorch; then, with the CUDA toolkit taken off PATH and LD_LIBRARY_PATH (and
# CUDA_HOME, CUDA_PATH unset), checks the installed binaries load from the environment and the base
# system alone and runs `launchwatch run -- python3 tests/wheel/small_train.py`. It checks that the
# report has CUDA kernels with device times under the model's modules, and that CUPTI came from
# the environment's nvidia-cuda-cupti wheel (site-packages/nvidia/...). Prints a short table last.
# Logs and the report under $OUT; nothing is downloaded.
#
# Usage: OUT=dir [BUILD=dir] [TORCH_PYTHON=python] [STEPS=30] scripts/device_wheel.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source=$PWD
OUT=${OUT:-build/device-out}
BUILD=${BUILD:-/tmp/lw-wheel}
TORCH_PYTHON=${TORCH_PYTHON:-/opt/torch/.venv/bin/python3}
STEPS=${STEPS:-30}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
fail() { echo "device wheel: FAILED: $*"; exit 1; }
[ -x "$TORCH_PYTHON" ] || TORCH_PYTHON=$(command -v python3)

echo "== build the wheel's binaries ($BUILD)"
t=$(date +%s)
source scripts/find_cupti.sh  # only CUPTI's headers are used: the binaries link no CUPTI
if ! { cmake --preset wheel -B "$BUILD" -DCMAKE_CUDA_ARCHITECTURES=90 "${cupti_args[@]}" &&
       cmake --build "$BUILD" -j"$(nproc)" --target launchwatch launchwatch_inject; } \
     >"$OUT/build.log" 2>&1; then
  grep -E "error|Error" -A3 "$OUT/build.log" | head -40
  fail "the build failed (build.log)"
fi
grep -q "CUDA bridge (CUPTI) ON" "$OUT/build.log" ||
  fail "configured without the CUDA bridge (build.log)"
echo "built in $(( $(date +%s) - t )) s"

echo "== pack and install"
wheel=$("$TORCH_PYTHON" scripts/wheel_pack.py "$BUILD" "$OUT/dist" 2>"$OUT/pack.log") ||
  fail "wheel_pack.py: $(cat "$OUT/pack.log")"
echo "wheel: $(basename "$wheel")"
venv=/tmp/lw-wheel-venv
rm -rf "$venv"
pip=("$venv/bin/python" -m pip)
if ! "$TORCH_PYTHON" -m venv --system-site-packages "$venv" >"$OUT/venv.log" 2>&1; then
  # A Python without ensurepip: the environment without pip, filled by the machine's own pip.
  rm -rf "$venv"
  "$TORCH_PYTHON" -m venv --system-site-packages --without-pip "$venv" >>"$OUT/venv.log" 2>&1 ||
    fail "could not make a virtual environment: $(cat "$OUT/venv.log")"
  pip=("$TORCH_PYTHON" -m pip --python "$venv/bin/python")
fi
"${pip[@]}" install --quiet --no-index --no-deps "$wheel" >"$OUT/install.log" 2>&1 ||
  fail "pip install: $(cat "$OUT/install.log")"
# A venv made from a venv's python sees the base interpreter's site-packages, not the parent
# venv's: then the machine's PyTorch environment is added by a .pth file, as a user would.
if ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
  torch_site=$("$TORCH_PYTHON" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  venv_site=$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  echo "$torch_site" >"$venv_site/machine_pytorch.pth"
  echo "the environment does not see PyTorch through --system-site-packages; added $torch_site"
fi

echo "== the toolkit off the paths"
without_cuda() { tr ':' '\n' <<<"$1" | grep -v -e '^$' -e '/cuda' | paste -sd: -; }
export PATH="$venv/bin:$(without_cuda "$PATH")"
export LD_LIBRARY_PATH=$(without_cuda "${LD_LIBRARY_PATH:-}")
unset CUDA_HOME CUDA_PATH LAUNCHWATCH_CUPTI_LIBRARY LAUNCHWATCH_PYTHON_SITE_PACKAGES PYTHONPATH
echo "PATH=$PATH"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
site=$(python -c "import launchwatch, os; print(os.path.dirname(launchwatch.__file__))")
bins=("$site/_bin/launchwatch" "$site/_bin/liblaunchwatch_inject.so")
loads=ok
python "$source/tests/wheel/check_libraries.py" "$venv" "${bins[@]}" >"$OUT/libraries.log" 2>&1 ||
  loads="needs more: $(tr '\n' ' ' <"$OUT/libraries.log")"
ldd "${bins[@]}" >>"$OUT/libraries.log" 2>&1
readelf -d "${bins[@]}" | grep NEEDED >>"$OUT/libraries.log" 2>&1
version=$(launchwatch --version)

echo "== launchwatch run -- python3 tests/wheel/small_train.py $STEPS"
rm -rf "$OUT/run"
t=$(date +%s)
cd /tmp
launchwatch run --out "$OUT/run" -- python3 "$source/tests/wheel/small_train.py" "$STEPS" \
  >"$OUT/run.log" 2>&1
status=$?
seconds=$(( $(date +%s) - t ))
cd "$source"
cat "$OUT/run.log" | tail -40
cupti=$(sed -n 's|^cupti \(/.*\)|\1|p' "$OUT/run.log" | head -1)
cupti_at_import=$(sed -n 's/^cupti at import: //p' "$OUT/run.log")
cudart=$(sed -n 's/^cudart //p' "$OUT/run.log" | paste -sd' ' -)

python - "$OUT/run/summary.json" >"$OUT/summary-check.log" 2>&1 <<'CHECK'
import json, sys
summary = json.load(open(sys.argv[1]))
cuda = [d for d in summary["devices"] if d["backend"] == "cuda"]
def names(nodes):
    for node in nodes:
        yield node["name"]
        yield from names(node.get("children", []))
scopes = set(names(summary["scopes"]))
print("launches", summary["launches"])
print("timed", summary["timed_launches"])
print("device_stamped", summary["measurements"]["device_stamped"])
print("kernel_ms", round(sum(d["kernel_ns"] for d in cuda) / 1e6, 3))
print("cuda_devices", len(cuda))
print("module_scopes", int("SmallNet" in scopes and "features" in scopes))
CHECK
value() { sed -n "s/^$1 //p" "$OUT/summary-check.log"; }
launchwatch report --depth 3 "$OUT/run/summary.json" >"$OUT/report.txt" 2>&1

problems=()
[ "$status" -eq 0 ] || problems+=("launchwatch run exited $status")
[ "$loads" = ok ] || problems+=("the binaries $loads")
[[ $version == *"(CUDA built,"* ]] || problems+=("the wheel has no CUDA: $version")
[[ $cupti == */site-packages/nvidia/* ]] ||
  problems+=("CUPTI was not the environment's wheel: '${cupti:-none}'")
[ "$(value cuda_devices)" -ge 1 ] 2>/dev/null || problems+=("no CUDA device in the report")
[ "$(value timed)" -gt 0 ] 2>/dev/null || problems+=("no launch was timed")
[ "$(value device_stamped)" -gt 0 ] 2>/dev/null || problems+=("no device time was read")
[ "$(value module_scopes)" = 1 ] || problems+=("the model's modules are not scopes")
grep -q "not watched" "$OUT/run.log" && problems+=("$(grep "not watched" "$OUT/run.log" | head -1)")

echo
echo "== the report (launchwatch report --depth 3)"
head -30 "$OUT/report.txt"
echo
echo "| check | value |"
echo "| --- | --- |"
echo "| wheel | $(basename "$wheel") |"
echo "| launchwatch --version | $version |"
echo "| binaries load with the environment and base system only | $loads |"
echo "| CUPTI loaded from | ${cupti:-none} |"
echo "| CUPTI mapped by \`import torch\` alone | ${cupti_at_import:-unknown} |"
echo "| CUDA runtimes mapped | ${cudart:-none} |"
echo "| run: exit status, seconds | $status, $seconds |"
echo "| launches / timed / device-stamped |" \
  "$(value launches) / $(value timed) / $(value device_stamped) |"
echo "| CUDA kernel time, ms | $(value kernel_ms) |"
if [ ${#problems[@]} -eq 0 ]; then
  echo "| result | passed |"
else
  echo "| result | FAILED: $(IFS=';'; echo "${problems[*]}") |"
  exit 1
fi
