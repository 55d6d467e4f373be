#!/usr/bin/env python3
"""Splits a `perf record --call-graph dwarf` profile of launchwatch_cuda_bridge_bench by case.

Reads `perf script` text on stdin and prints, per case of the bench (a block's lambda and its loop),
the host time its launching thread spent, and within it the time under launchwatch's CUPTI callback
(`cuda_bridge_engine::on_callback`, with what it calls) and each library's own (self) time. Divide by
the case's launches for a per-launch figure: where a bridge's share over CUPTI's floor goes.

Usage: perf script -F comm,tid,period,ip,sym,dso -i perf.data | perf_cases.py [sample period ns]
"""
import collections
import re
import sys

BLOCKS = {
    "main::{lambda()#1}": "bridge",
    "main::{lambda()#2}": "as run",
    "main::{lambda()#3}": "windows",
    "main::{lambda()#4}": "records on",
}


def case_of(frames):
    symbols = [sym for _, sym in frames]
    if any("deferred_loop" in sym for sym in symbols):
        loop = "deferred"
    elif any("cupti_floor_loop" in sym for sym in symbols):
        loop = "floor"
    elif any("launch_loop" in sym for sym in symbols):
        loop = "launches"
    elif any(dso.startswith("launchwatch_launch_loop") for dso, _ in frames):
        # launchwatch_launch_loop (launch_loop.cu) under `launchwatch run`: its loop is main's own.
        return "program / launches"
    else:
        return None
    block = "floor" if loop == "floor" else "main"
    for sym in symbols:
        for key, name in BLOCKS.items():
            if key in sym:
                block = name
    return f"{block} / {loop}"


def main():
    samples = collections.Counter()
    under_callback = collections.Counter()
    self_dso = collections.defaultdict(collections.Counter)
    callback_leaves = collections.defaultdict(collections.Counter)
    frames = []
    head = None

    def flush():
        nonlocal frames, head
        if head is not None and frames:
            case = case_of(frames)
            if case is not None:
                samples[case] += 1
                if any("cuda_bridge_engine::on_callback" in s for _, s in frames):
                    under_callback[case] += 1
                    leaf_dso, leaf = frames[0]
                    # The first of launchwatch's frames from the leaf: who called the library.
                    caller = next((s for d, s in frames if "launchwatch" in s), "")
                    callback_leaves[case][(leaf_dso, leaf[:60], caller[:70])] += 1
                self_dso[case][frames[0][0]] += 1
        frames = []
        head = None

    for line in sys.stdin:
        if not line.strip():
            flush()
            continue
        if not line.startswith((" ", "\t")):
            flush()
            head = line
            continue
        m = re.match(r"\s*[0-9a-f]+\s+(.*)\s+\(([^()]*)\)\s*$", line)
        if m:
            frames.append((m.group(2).rsplit("/", 1)[-1], m.group(1)))
    flush()
    period_ns = float(sys.argv[1]) if len(sys.argv) > 1 else 1e9 / 1999
    print(f"{'case':<26} {'samples':>8} {'host ms':>9} {'under callback ms':>18}  self by library")
    for case, n in sorted(samples.items()):
        libs = ", ".join(f"{d} {c * period_ns / 1e6:.1f}"
                         for d, c in self_dso[case].most_common(5))
        print(f"{case:<26} {n:>8} {n * period_ns / 1e6:>9.1f} "
              f"{under_callback[case] * period_ns / 1e6:>18.1f}  {libs}")
    for case, leaves in sorted(callback_leaves.items()):
        print(f"\nunder the callback, {case}: samples by leaf (library, symbol, launchwatch's frame)")
        for (dso, leaf, caller), c in leaves.most_common(30):
            print(f"  {c:>5}  {dso:<30} {leaf:<60} {caller}")


if __name__ == "__main__":
    main()
