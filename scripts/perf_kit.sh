#!/usr/bin/env bash
# Packs this machine's perf with every library it loads (and the dynamic loader) into one folder,
# so perf runs on a GPU machine that has none: carry the folder there (the device tool's `carry`)
# and run DIR/run_perf.sh as perf. The GPU machine allowed sampling at perf_event_paranoid 2
# (cpu-clock and cycles; no instruction counts). Installs Debian's linux-perf when perf is missing.
# Usage: scripts/perf_kit.sh [DIR, default build/perfkit]
set -euo pipefail
cd "$(dirname "$0")/.."
kit=${1:-build/perfkit}
if ! command -v perf >/dev/null; then
  source scripts/ensure_packages.sh
  ensure_packages linux-perf
fi
perf=$(readlink -f "$(command -v perf)")
mkdir -p "$kit/lib"
cp -L "$perf" "$kit/perf"
ldd "$perf" | awk '/=>/ { print $3 }' | while read -r library; do cp -L "$library" "$kit/lib/"; done
cp -L /lib64/ld-linux-x86-64.so.2 "$kit/lib/"
cat >"$kit/run_perf.sh" <<'RUN'
#!/usr/bin/env bash
# perf through the loader and libraries packed beside it (scripts/perf_kit.sh).
kit=$(cd "$(dirname "$0")" && pwd)
exec "$kit/lib/ld-linux-x86-64.so.2" --library-path "$kit/lib" "$kit/perf" "$@"
RUN
chmod +x "$kit/run_perf.sh"
"$kit/run_perf.sh" --version
echo "perf kit in $kit ($(du -sh "$kit" | cut -f1)); carry it and run $kit/run_perf.sh"
