#!/usr/bin/env python3
"""PyTorch training steps watched by `launchwatch run` and, in another process, by torch.profiler
(CUPTI has one subscriber, so never both in one process): kernel count and total kernel time side
by side, and launchwatch's per-NVTX-scope table, which the profiler's kernel list does not give.

    bench/torch/run_vs_profiler.py --launchwatch build/cuda/apps/launchwatch/launchwatch [--steps 20]

Prints a markdown table for docs/benchmarks.md. Both runs execute the same script
(examples/torch_nvtx_train.py) with the same arguments; launchwatch's numbers come from its
summary.json, the profiler's from the kernel events of its trace (memcpy and memset are no kernel
launches). Then the kernels by name, where the two disagree.
"""

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "examples", "torch_nvtx_train.py")


def timed(command):
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.monotonic() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done, wall


def rows(nodes, prefix="", depth=2):
    for node in nodes:
        if node["kind"] != "scope":
            continue
        path = prefix + node["name"]
        yield path, node["launches"], node["total_ns"]
        if depth > 1:
            yield from rows(node["children"], path + "/", depth - 1)


def kernels_by_name(nodes, into):
    """launchwatch's kernels, by name, summed over every scope (and outside)."""
    for node in nodes:
        if node["kind"] == "kernel":
            count, ns = into.get(node["name"], (0, 0))
            into[node["name"]] = (count + node["launches"], ns + node["total_ns"])
        else:
            kernels_by_name(node.get("children", []), into)
    return into


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launchwatch", required=True)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--out", default="launchwatch-run-vs-profiler")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    workload = [sys.executable, SCRIPT, "--steps", str(args.steps)]

    watched, watched_wall = timed([args.launchwatch, "run", "--out", os.path.join(args.out, "run"), "--"] + workload)
    plain, plain_wall = timed(workload)
    profiler_json = os.path.join(args.out, "profiler.json")
    _, profiled_wall = timed(workload + ["--profiler", "--json", profiler_json,
                                         "--trace", os.path.join(args.out, "profiler-trace.json")])

    with open(os.path.join(args.out, "run", "summary.json")) as f:
        summary = json.load(f)
    with open(profiler_json) as f:
        profiler = json.load(f)

    lw_kernels, lw_ns = summary["launches"], summary["kernel_ns"]
    pf_kernels, pf_ns = profiler["kernels"], profiler["kernel_ns"]
    print(f"{args.steps} training steps (examples/torch_nvtx_train.py), one process each\n")
    print("| | launchwatch run | torch.profiler | launchwatch / profiler |")
    print("| --- | --- | --- | --- |")
    print(f"| kernels | {lw_kernels} | {pf_kernels} | {lw_kernels / pf_kernels:.3f} |")
    print(f"| total kernel time | {lw_ns / 1e3:.1f} us | {pf_ns / 1e3:.1f} us | {lw_ns / pf_ns:.3f} |")
    print(f"| process wall (plain run: {plain_wall:.2f} s) | {watched_wall:.2f} s | {profiled_wall:.2f} s | "
          f"{watched_wall / profiled_wall:.3f} |")
    print(f"| kernels outside any NVTX scope | {summary['outside_scopes']['launches']} | (no scopes) | |")
    print("\nlaunchwatch's table by NVTX scope (two levels):\n")
    print("| scope | kernels | device time |")
    print("| --- | --- | --- |")
    for path, launches, total_ns in rows(summary["scopes"]):
        print(f"| {path} | {launches} | {total_ns / 1e3:.1f} us |")
    ours = kernels_by_name(summary["scopes"] + [summary["outside_scopes"]], {})
    theirs = {name: (v["kernels"], v["kernel_ns"]) for name, v in profiler["by_name"].items()}
    print("\nKernels by name where the counts differ, or the time by more than 5% (and 1 us):\n")
    print("| kernel | launchwatch | torch.profiler | time launchwatch | time profiler |")
    print("| --- | --- | --- | --- | --- |")
    differ = 0
    for name in sorted(set(ours) | set(theirs)):
        (n1, t1), (n2, t2) = ours.get(name, (0, 0)), theirs.get(name, (0, 0))
        if n1 != n2 or abs(t1 - t2) > max(0.05 * max(t1, t2), 1000):
            differ += 1
            print(f"| {name[:100]} | {n1} | {n2} | {t1 / 1e3:.1f} us | {t2 / 1e3:.1f} us |")
    print(f"\n{differ} of {len(set(ours) | set(theirs))} kernel names differ.")
    print("\nlaunchwatch run's own output:\n")
    print(watched.stdout)


if __name__ == "__main__":
    main()
