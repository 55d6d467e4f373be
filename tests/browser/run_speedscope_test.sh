#!/usr/bin/env bash
# The ctest entry for the browser test: runs the demo into a scratch folder (one pass: more would add
# time but no names), then opens its files in speedscope in headless chromium (speedscope.test.mjs).
# Exits 77, which ctest reads as SKIP, when chromium, node or the npm packages are absent;
# scripts/test installs all three.
# Usage: run_speedscope_test.sh LAUNCHWATCH_PROGRAM SCRATCH_FOLDER
set -euo pipefail
program=$1
scratch=$2
here=$(cd "$(dirname "$0")" && pwd)
chromium=${LAUNCHWATCH_CHROMIUM:-/usr/bin/chromium}

skip() {
  echo "SKIP: $*" >&2
  exit 77
}
[ -x "$chromium" ] || skip "no chromium at $chromium (apt-get install chromium, or set LAUNCHWATCH_CHROMIUM)"
command -v node >/dev/null 2>&1 || skip "no node (apt-get install nodejs npm)"
[ -d "$here/node_modules/speedscope" ] && [ -d "$here/node_modules/playwright-core" ] ||
  skip "no npm packages in $here (run: npm ci --prefix $here)"

rm -rf "$scratch"
"$program" demo --passes 1 --out "$scratch" --no-progress >"$scratch.log" 2>&1 || {
  cat "$scratch.log" >&2
  echo "the demo failed; its output is above" >&2
  exit 1
}
LAUNCHWATCH_DEMO_DIR=$scratch LAUNCHWATCH_CHROMIUM=$chromium exec node --test "$here/speedscope.test.mjs"
