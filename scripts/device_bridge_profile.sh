#!/usr/bin/env bash
# Where the CUDA bridge's share of a launch goes on a GPU host (issue 24; docs/benchmarks.md, "The
# bridge's own time on the launching thread, profiled"). Builds the `cuda` preset's bridge bench for
# sm_90 and writes to $OUT: the host's topology; the bench pinned to four cores of one L3 cache
# (ROUNDS rounds, default 25; 0 skips it), then unpinned and pinned again unless PINNED_ONLY is set;
# and, where perf is installed or carried, one profile per PERF_BLOCKS entry (the bench's blocks,
# default "as-run floor callbacks"; PERF_ROUNDS rounds, PERF_HZ samples a second) with DWARF call
# stacks, split by case by bench/cuda_bridge/perf_cases.py: the launching thread's time, the part
# under launchwatch's CUPTI callback, and that part by leaf function.
#
# A GPU machine without perf: carry Debian's (PERF=.perf/perf, with `.perf` in the run's carry and
# in .git/info/exclude), made here once:
#   apt-get download linux-perf && dpkg-deb -x linux-perf_*.deb /tmp/perf && mkdir -p .perf/lib &&
#   cp /tmp/perf/usr/bin/perf .perf/ && ldd .perf/perf | awk '$3 ~ /^\// {print $3}' |
#     grep -vE 'lib(c|m|gcc_s|stdc\+\+|z|zstd|lzma|bz2|pthread|dl|rt)\.so|ld-linux' | xargs -I{} cp -L {} .perf/lib/
# Usage: OUT=dir [ROUNDS=25] [PINNED_ONLY=1] [PERF=path] [PERF_BLOCKS=...] [BEFORE=dir [PERF_PAIRS=n]]
#          [RUN_LOOP=1 [RUN_PAIRS=n]] scripts/device_bridge_profile.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/device-out}; BUILD=${BUILD:-build/gpu}; mkdir -p "$OUT"
source scripts/find_cupti.sh
# With RUN_LOOP (below), the same build also makes launchwatch, its injected library and the loop.
build_bench() {  # source-tree build-dir log
  local apps=OFF targets=(launchwatch_cuda_bridge_bench)
  [ -n "${RUN_LOOP:-}" ] && apps=ON && targets+=(launchwatch launchwatch_inject launchwatch_launch_loop)
  (cd "$1" && cmake --preset cuda -B "$2" -DCMAKE_CUDA_ARCHITECTURES=90 -DLAUNCHWATCH_BUILD_TESTS=OFF \
    -DLAUNCHWATCH_BUILD_APPS=$apps "${cupti_args[@]}" >"$3" 2>&1 &&
    ninja -C "$2" -j16 "${targets[@]}" >>"$3" 2>&1) || { tail -30 "$3"; exit 1; }
}
t=$(date +%s)
build_bench . "$(realpath -m "$BUILD")" "$OUT/build.log"
echo "built in $(( $(date +%s) - t )) s"
bench=$BUILD/bench/cuda_bridge/launchwatch_cuda_bridge_bench
# BEFORE=dir: another source tree (`git archive <commit> | tar -x -C dir`), whose bench is built too
# and profiled beside this one's, alternating, so the two are compared on one host in one run.
versions=after
if [ -n "${BEFORE:-}" ]; then
  t=$(date +%s)
  build_bench "$BEFORE" "$(realpath -m "$BUILD-before")" "$OUT/build_before.log"
  echo "built BEFORE ($BEFORE) in $(( $(date +%s) - t )) s"
  versions="before after"
fi
bench_of() { [ "$1" = before ] && echo "$BUILD-before/bench/cuda_bridge/launchwatch_cuda_bridge_bench" || echo "$bench"; }
{ lscpu; echo; lscpu -p=CPU,CORE,SOCKET,NODE,CACHE; echo; cat /sys/fs/cgroup/cpuset.cpus.effective 2>/dev/null;
  taskset -pc $$; command -v perf numactl; nvidia-smi -q | grep -iE "numa|affinity|Bus Id" ; } >"$OUT/topology.txt" 2>&1
allowed=$(taskset -pc $$ | sed 's/.*: //')
first=$(python3 - "$allowed" <<'PY'
import sys,subprocess
spec=sys.argv[1]; cpus=[]
for part in spec.split(','):
    a,_,b=part.partition('-'); cpus+=range(int(a),int(b or a)+1)
rows=[l.split(',') for l in subprocess.run(['lscpu','-p=CPU,CORE,SOCKET,NODE,CACHE'],capture_output=True,text=True).stdout.splitlines() if not l.startswith('#')]
l3={int(r[0]):r[4].split(':')[-1] if len(r)>4 else '' for r in rows}
core={int(r[0]):r[1] for r in rows}
c0=cpus[0]; same=[c for c in cpus if l3.get(c)==l3.get(c0)]
seen=set(); pick=[]
for c in same:
    if core[c] not in seen: seen.add(core[c]); pick.append(c)
print(','.join(map(str,pick[:4])))
PY
)
echo "allowed $allowed; pinned run on $first" | tee -a "$OUT/topology.txt"
rounds=${ROUNDS:-25}
if [ "$rounds" -gt 0 ] && [ -n "${BEFORE:-}" ]; then
  for version in $versions; do
    timeout 200 taskset -c "$first" "$(bench_of "$version")" 20000 "$rounds" >"$OUT/pinned_$version.log" 2>&1
    echo "pinned $version rc=$?"
  done
elif [ "$rounds" -gt 0 ]; then
  timeout 200 taskset -c "$first" "$bench" 20000 "$rounds" >"$OUT/pinned.log" 2>&1; echo "pinned rc=$?"
fi
[ -n "${PINNED_ONLY:-}" ] || [ "$rounds" -le 0 ] || {
timeout 200 "$bench" 20000 "$rounds" >"$OUT/unpinned.log" 2>&1; echo "unpinned rc=$?"
timeout 200 taskset -c "$first" "$bench" 20000 "$rounds" >"$OUT/pinned2.log" 2>&1; echo "pinned2 rc=$?"; }
# perf, where installed or carried (PERF=path/to/perf, its libraries in lib/ beside it).
perf=${PERF:-$(command -v perf)}
[ -n "$perf" ] && perf=$(realpath -m "$perf")  # RUN_LOOP runs it from another directory
if [ -n "$perf" ] && [ -x "$perf" ]; then
  export LD_LIBRARY_PATH=$(dirname "$perf")/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  cat /proc/sys/kernel/perf_event_paranoid >"$OUT/perf_paranoid.txt" 2>&1
  # One profile per block list (PERF_BLOCKS, space-separated lists), each split by case.
  # With BEFORE, each block list is profiled PERF_PAIRS times (default 1) for each tree in turn.
  # PERF_BLOCKS=none: no profile of the bench (RUN_LOOP's profiles only).
  for blocks in ${PERF_BLOCKS:-as-run floor callbacks}; do
  [ "$blocks" = none ] && continue
  for pair in $(seq "${PERF_PAIRS:-1}"); do
  for version in $versions; do
    tag=$blocks; [ -n "${BEFORE:-}" ] && tag=${version}_${blocks}_$pair
    timeout 150 taskset -c "$first" "$perf" record -e cpu-clock -F "${PERF_HZ:-1999}" --call-graph dwarf,8192 \
      -o "$OUT/perf.data" "$(bench_of "$version")" 20000 "${PERF_ROUNDS:-6}" "$blocks" >"$OUT/perf_bench_$tag.log" 2>&1
    echo "perf record $tag rc=$?"
    "$perf" script -F comm,tid,period,ip,sym,dso -i "$OUT/perf.data" 2>/dev/null |
      python3 bench/cuda_bridge/perf_cases.py "$((1000000000 / ${PERF_HZ:-1999}))" >"$OUT/perf_cases_$tag.txt"
    "$perf" report -i "$OUT/perf.data" --stdio --no-children --sort symbol -g none \
      --dsos launchwatch_cuda_bridge_bench --percent-limit 0.05 2>/dev/null >"$OUT/perf_launchwatch_$tag.txt"
  done; done; done
  rm -f "$OUT/perf.data"
  unset LD_LIBRARY_PATH
fi
# RUN_LOOP=1: the same launches as a user runs them, `launchwatch run` injecting
# liblaunchwatch_inject.so into launchwatch_launch_loop (the program's own <<<>>> loop, timed by
# itself): plain, `run --timing none` and `run` (deferred) in turn RUN_PAIRS times (default 3) for
# each tree, then `run` under perf once per tree, split as above.
if [ -n "${RUN_LOOP:-}" ]; then
  run_dir() { [ "$1" = before ] && realpath -m "$BUILD-before" || realpath -m "$BUILD"; }
  work=$(mktemp -d); results=$OUT/run_loop.txt; : >"$results"
  for pair in $(seq "${RUN_PAIRS:-3}"); do
    for version in $versions; do
      dir=$(run_dir "$version"); loop=$dir/bench/cuda_bridge/launchwatch_launch_loop; lw=$dir/apps/launchwatch/launchwatch
      for form in plain none deferred; do
        case $form in
          plain) cmd=("$loop" 20000 10) ;;
          none) cmd=("$lw" run --timing none -- "$loop" 20000 10) ;;
          deferred) cmd=("$lw" run -- "$loop" 20000 10) ;;
        esac
        median=$(cd "$work" && timeout 120 taskset -c "$first" "${cmd[@]}" 2>/dev/null | grep -i median | grep -oE "[0-9]+\.[0-9]+" | head -1)
        echo "$pair $version $form ${median:-failed}" | tee -a "$results"
      done
    done
  done
  if [ -n "$perf" ] && [ -x "$perf" ]; then
    export LD_LIBRARY_PATH=$(dirname "$perf")/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    for version in $versions; do
      dir=$(run_dir "$version")
      (cd "$work" && timeout 200 taskset -c "$first" "$perf" record -e cpu-clock -F "${PERF_HZ:-1999}" \
        --call-graph dwarf,8192 -o "$work/perf.data" "$dir/apps/launchwatch/launchwatch" run -- \
        "$dir/bench/cuda_bridge/launchwatch_launch_loop" 20000 10 >"$OUT/perf_bench_run_$version.log" 2>&1)
      echo "perf record run $version rc=$?"
      "$perf" script -F comm,tid,period,ip,sym,dso -i "$work/perf.data" 2>/dev/null |
        python3 bench/cuda_bridge/perf_cases.py "$((1000000000 / ${PERF_HZ:-1999}))" >"$OUT/perf_cases_run_$version.txt"
    done
    rm -f "$work/perf.data"
    unset LD_LIBRARY_PATH
  fi
  rm -rf "$work"
  echo "== run loop (pair tree form median-us)"; cat "$results"
fi
for f in "$OUT"/perf_cases_*.txt; do [ -f "$f" ] && { echo "== $f"; cat "$f"; log=${f/perf_cases_/perf_bench_}; grep -E "us/launch|^(raw|names|deferred|CUPTI)" "${log%.txt}.log"; }; done
for f in "$OUT"/perf_launchwatch_*.txt; do [ -f "$f" ] && { echo "== $f"; grep -v "^#" "$f" | grep -v "^$" | head -25 | cut -c1-140; }; done
for f in pinned pinned_before pinned_after unpinned pinned2; do [ -f "$OUT/$f.log" ] || continue; echo "== $f"; grep -E "^(raw|names only|deferred|CUPTI)" "$OUT/$f.log" | cut -c1-60; grep -E "minus|asked alone|missing" "$OUT/$f.log"; done
