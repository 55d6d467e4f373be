#!/usr/bin/env python3
"""Which of this machine's CPUs slow each other down: a fixed task's time on one CPU, alone and then
with a busy loop on each other CPU in turn.

Why (issue 22): on the GPU machines the host-bound models' step ran at one of two speeds, about
1.6x apart, in every configuration including plain, and sometimes switched within one process; the
stepping thread's CPU time moved with the wall and it was almost never switched out. Two virtual
CPUs that share one physical core (hyperthreads the guest is not told about: its topology says one
thread a core) would do exactly that: the stepping thread runs slower whenever anything runs on
its hidden sibling. This finds such pairs, or shows there are none, in a few seconds. It also reads
the guest's steal time (/proc/stat) over the probe: CPU time the hypervisor gave to someone else.

Usage: bench/host/cpu_pairs.py [--cpus 0,8] [--task-ms 40] [--json FILE]
Prints, per probed CPU, the task's time alone and its ratio with a busy loop on each other CPU,
and names the CPUs whose busy loop slowed it by more than 1.2x.
"""
import argparse
import json
import multiprocessing
import os
import platform
import statistics
import time


def task(iterations):
    """A fixed piece of pure-Python work: the kind of instruction stream a host-bound step runs."""
    value = 0
    for i in range(iterations):
        value = (value * 31 + i) & 0xFFFF
    return value


def timed(iterations, repeats=5):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        task(iterations)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def spin(cpu, ready, stop):
    os.sched_setaffinity(0, {cpu})
    ready.set()
    value = 0
    while not stop.is_set():
        for i in range(10000):
            value = (value * 31 + i) & 0xFFFF


def steal_ticks():
    """The guest's steal time so far, summed over its CPUs (/proc/stat, USER_HZ ticks)."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8]) if len(fields) > 8 else 0
    except OSError:
        return 0


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpus", default="0", help="the CPUs to probe, comma-separated")
    parser.add_argument("--task-ms", type=float, default=40.0,
                        help="about how long one timing of the task takes alone")
    parser.add_argument("--json", help="also write every measurement here")
    args = parser.parse_args()
    allowed = sorted(os.sched_getaffinity(0))
    probed = [int(c) for c in args.cpus.split(",") if int(c) in allowed]
    if not probed or len(allowed) < 2:
        raise SystemExit(f"cpu_pairs: needs 2 or more CPUs and a probed one among {allowed}")
    os.sched_setaffinity(0, {probed[0]})
    iterations = 100000
    iterations = int(iterations * args.task_ms / max(timed(iterations, 3), 1e-3))
    steal_before, wall_before = steal_ticks(), time.monotonic()
    context = multiprocessing.get_context("fork")
    result = {"cpu_model": cpu_model(), "cpus": allowed, "probes": []}
    print(f"cpu_pairs: {result['cpu_model']}, {len(allowed)} CPUs allowed")
    for cpu in probed:
        os.sched_setaffinity(0, {cpu})
        alone = timed(iterations)
        rows = []
        for other in allowed:
            if other == cpu:
                continue
            ready, stop = context.Event(), context.Event()
            spinner = context.Process(target=spin, args=(other, ready, stop))
            spinner.start()
            ready.wait()
            time.sleep(0.005)
            loaded = timed(iterations)
            stop.set()
            spinner.join()
            rows.append({"busy_cpu": other, "ms": loaded, "ratio": loaded / alone})
        again = timed(iterations)
        slowed = [r["busy_cpu"] for r in rows if r["ratio"] > 1.2]
        result["probes"].append({"cpu": cpu, "alone_ms": alone, "alone_again_ms": again,
                                 "with_busy": rows, "slowed_by": slowed})
        print(f"cpu {cpu}: alone {alone:.2f} ms (again at the end {again:.2f} ms)")
        print("  busy cpu: " + " ".join(f"{r['busy_cpu']:>5}" for r in rows))
        print("  ratio:    " + " ".join(f"{r['ratio']:5.2f}" for r in rows))
        print(f"  slowed by more than 1.2x by a busy loop on: {slowed or 'none'}")
    ticks = os.sysconf("SC_CLK_TCK")
    result["steal_s"] = (steal_ticks() - steal_before) / ticks
    result["wall_s"] = time.monotonic() - wall_before
    print(f"steal time over the probe: {result['steal_s']:.2f} s of CPU in {result['wall_s']:.1f} s")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=1)


if __name__ == "__main__":
    main()
