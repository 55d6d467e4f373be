#!/usr/bin/env python3
"""What launchwatch's torch hooks cost per module call, on the CPU: the same model timed plain (no
hooks), with the hooks and a sink that records nothing (the hooks' own Python), and under
`launchwatch run` (the hooks and the injection's C API through ctypes), side by side.

    bench/torch/hook_cost.py --launchwatch build/cpu/apps/launchwatch/launchwatch

Models: 200 nn.Identity modules in a Sequential (nothing but the module call: the hooks' cost per
call), and 50 nn.Linear(64, 64) + ReLU on a batch of 32, forward and backward (a small real step).
Also the C API's own cost (a push and a pop_to through ctypes) and launchwatch.scope with no tool.
Prints one markdown table for docs/benchmarks.md. Internally the same file measures one
configuration: `hook_cost.py --measure plain|noop|run`.
"""

import argparse
import json
import os
import subprocess
import sys
import timeit


def best_ns(fn, number, repeat=7):
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e9


def measure(mode):
    import torch
    from torch import nn

    torch.set_num_threads(1)
    import launchwatch
    from launchwatch import _sink

    if mode == "noop":
        class ActiveNothing(_sink.NullSink):
            active = True

        _sink.set_sink(ActiveNothing())
        import launchwatch.torch

        launchwatch.torch.install("modules")
    sink = _sink.get()
    if mode == "run" and not sink.active:
        sys.exit("hook_cost: --measure run outside launchwatch run (no injection)")
    identities = nn.Sequential(*[nn.Identity() for _ in range(200)])
    x = torch.zeros(1)
    with torch.no_grad():
        forward_ns = best_ns(lambda: identities(x), number=50) / 201  # the Sequential itself too
    linears = nn.Sequential(*[m for _ in range(50) for m in (nn.Linear(64, 64), nn.ReLU())])
    batch = torch.randn(32, 64)

    def train_step():
        linears(batch).sum().backward()

    step_us = best_ns(train_step, number=5) / 1e3
    result = {"mode": mode, "identity_call_ns": forward_ns, "linear_step_us": step_us,
              "modules_per_step": 101}
    result["scope_ns"] = best_ns(lambda: launchwatch.scope("x").__enter__().__exit__(),
                                 number=20000)
    if sink.active and mode == "run":
        def push_pop():
            sink.pop_to(sink.push(b"x"))

        result["c_api_push_pop_ns"] = best_ns(push_pop, number=20000)
    print(json.dumps(result))
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launchwatch")
    parser.add_argument("--measure", choices=["plain", "noop", "run"], help=argparse.SUPPRESS)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    if args.measure:
        return measure(args.measure)
    if not args.launchwatch:
        parser.error("--launchwatch PATH is needed")
    launchwatch = os.path.abspath(args.launchwatch)
    package = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(launchwatch))), "python")
    me = [args.python, os.path.abspath(__file__), "--measure"]
    environment = dict(os.environ, PYTHONPATH=package)
    results = {}
    for mode, command in (("plain", me + ["plain"]), ("noop", me + ["noop"]),
                          ("run", [launchwatch, "run", "--out", "hook-cost-run", "--"]
                           + me + ["run"])):
        done = subprocess.run(command, env=environment, capture_output=True, text=True, check=True)
        line = next(line for line in done.stdout.splitlines() if line.startswith("{"))
        results[mode] = json.loads(line)
    call = {mode: results[mode]["identity_call_ns"] for mode in results}
    step = {mode: results[mode]["linear_step_us"] for mode in results}
    print("| | plain | hooks, no tool | hooks under launchwatch run |")
    print("| --- | --- | --- | --- |")
    print(f"| nn.Identity call | {call['plain']:.0f} ns | {call['noop']:.0f} ns "
          f"({call['noop'] / call['plain']:.1f}x) | {call['run']:.0f} ns "
          f"({call['run'] / call['plain']:.1f}x) |")
    print(f"| hooks' cost per module call | | {call['noop'] - call['plain']:.0f} ns | "
          f"{call['run'] - call['plain']:.0f} ns |")
    print(f"| 50 x (Linear 64 + ReLU), batch 32, forward + backward | {step['plain']:.0f} us | "
          f"{step['noop']:.0f} us ({step['noop'] / step['plain']:.2f}x) | "
          f"{step['run']:.0f} us ({step['run'] / step['plain']:.2f}x) |")
    print(f"| launchwatch.scope enter + exit | {results['plain']['scope_ns']:.0f} ns (no tool) | | "
          f"{results['run']['scope_ns']:.0f} ns |")
    c_api = results["run"].get("c_api_push_pop_ns", float("nan"))
    print(f"| C API push + pop_to through ctypes | | | {c_api:.0f} ns |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
