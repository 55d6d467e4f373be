#!/usr/bin/env bash
# The wheel works for a Python user (docs/design.md, "The wheel"): scripts/wheel builds it (reusing
# build/wheel), it installs into a fresh virtual environment (no system site-packages, no index),
# and from there `launchwatch --version` and `launchwatch.__version__` give the wheel's version
# (built with CUDA where nvcc is), `launchwatch demo` runs on the CPU, `launchwatch run` watches a
# Python program that imports launchwatch (finding the injection library and the Python package
# inside the environment), the Python package's tests pass against the installed package, and the
# installed binaries load with nothing but the environment and the base system: no CUDA toolkit
# (its runtime is linked in, CUPTI is opened at run time), whatever LD_LIBRARY_PATH says.
# Skips (exit 0, saying why) where Python has no venv/ensurepip (Debian's python3-venv).
# Usage: tests/wheel/check_wheel.sh   (run by .ci/run after scripts/test)
set -euo pipefail
cd "$(dirname "$0")/../.."
source=$PWD
python=/usr/bin/python3
[ -x "$python" ] || python=python3
if ! "$python" -c "import ensurepip, venv" 2>/dev/null; then
  echo "wheel check: SKIPPED: $python has no venv/ensurepip (apt-get install python3-venv)"
  exit 0
fi

fail() { echo "wheel check: FAILED: $*" >&2; exit 1; }
# Where nvcc is, the `wheel` preset builds CUDA, so the wheel must say it was.
with_cuda=no
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then with_cuda=yes; fi

wheel=$(scripts/wheel | sed -n 's/^launchwatch: wrote //p')
[ -f "$wheel" ] || fail "scripts/wheel did not say which wheel it wrote"
version=$(basename "$wheel" | cut -d- -f2)

work=$(mktemp -d /tmp/launchwatch-wheel-check.XXXXXX)
trap 'rm -rf "$work"' EXIT
venv=$work/venv
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --no-index --no-deps "$wheel"

# From outside the source tree, with nothing of launchwatch's on the paths but the environment.
cd "$work"
unset PYTHONPATH LD_LIBRARY_PATH LAUNCHWATCH_INJECTION_LIBRARY
export PATH="$venv/bin:/usr/bin:/bin"

shown=$(launchwatch --version)
[[ $shown == "launchwatch $version "* ]] || fail "launchwatch --version says '$shown', not $version"
if [ "$with_cuda" = yes ]; then
  [[ $shown == *"(CUDA built,"* ]] || fail "nvcc is here, but the wheel has no CUDA: '$shown'"
fi
imported=$(python -c "import launchwatch; print(launchwatch.__version__)")
[ "$imported" = "$version" ] || fail "launchwatch.__version__ is $imported, not $version"

launchwatch demo --layers 1 --passes 1 --no-progress --out "$work/demo" > "$work/demo.log" ||
  fail "launchwatch demo failed: $(cat "$work/demo.log")"
for report in trace.json flame.folded summary.json; do
  [ -s "$work/demo/$report" ] || fail "launchwatch demo wrote no $report"
done

# The program says what it imported and what `run` gave it: the injection library and, first on
# its path, the Python package's sitecustomize, both found inside the environment.
launchwatch run --out "$work/run" -- python -c "$(cat <<'PROGRAM'
import os, launchwatch
print("imported", launchwatch.__version__, launchwatch.__file__)
print("injection", os.environ.get("NVTX_INJECTION64_PATH"))
print("path", os.environ.get("PYTHONPATH", "").split(":")[0])
PROGRAM
)" > "$work/run.log" 2>&1 || fail "launchwatch run failed: $(cat "$work/run.log")"
site=$(python -c "import launchwatch, os; print(os.path.dirname(launchwatch.__file__))")
for line in "imported $version $site/__init__.py" "injection $site/_bin/liblaunchwatch_inject.so" \
  "path $site/_site"; do
  grep -qxF "$line" "$work/run.log" ||
    fail "under launchwatch run, the program did not print '$line': $(cat "$work/run.log")"
done

# The Python package's C extension, where the wheel has one, loads in the environment's Python.
if compgen -G "$site/_c_api*.so" >/dev/null; then
  python -c "from launchwatch import _c_api" 2>"$work/c_api.log" ||
    fail "the wheel's launchwatch._c_api does not load: $(cat "$work/c_api.log")"
fi

# The Python package's tests (tests/python, as ctest runs them) against the installed package:
# run by the Python the environment was made from, which has pytest (and torch) where ctest has.
status=0
tests=("$source"/tests/python/test_{scope,sitecustomize,torch_hooks,cli}.py)
LAUNCHWATCH_PYTHON_DIR=$(dirname "$site") LAUNCHWATCH_VERSION=$version PYTHONDONTWRITEBYTECODE=1 \
  "$python" "$source/tests/python/run_pytest.py" "${tests[@]}" > "$work/pytest.log" 2>&1 ||
  status=$?
if [ "$status" -eq 77 ]; then
  echo "wheel check: the Python package's tests SKIPPED: $(tail -1 "$work/pytest.log")"
elif [ "$status" -ne 0 ]; then
  fail "the Python package's tests failed against the installed package: $(cat "$work/pytest.log")"
fi

"$python" "$source/tests/wheel/check_libraries.py" "$venv" \
  "$site/_bin/launchwatch" "$site/_bin/liblaunchwatch_inject.so" ||
  fail "the installed binaries need libraries outside the environment and the base system"
echo "wheel check: passed ($(basename "$wheel"))"
