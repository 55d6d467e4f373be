#!/usr/bin/env python3
"""What launchwatch's torch hooks cost per module call, on the CPU: the same model timed plain (no
hooks), with the hooks and a sink that records nothing (the hooks' own Python), and under
`launchwatch run` (the hooks and the injection's C API through ctypes), side by side.

    bench/torch/hook_cost.py --launchwatch build/cpu/apps/launchwatch/launchwatch

Models: 200 nn.Identity modules in a Sequential (nothing but the module call: the hooks' cost per
call), 50 nn.Linear(64, 64) + ReLU on a batch of 32, forward and backward (a small real step), and
a host-bound ResNet-like stack, 30 x (Conv2d(8, 8, 3) + BatchNorm2d + ReLU) in Sequentials on one
8x4x4 image, a training step (forward and backward) and inference under no_grad. Configurations:
plain, the hooks with a Python sink that records nothing (their Python alone), the hooks with a
sink of no-op C functions through ctypes (libc's, argtypes set as the injection's are: the hooks
and the ctypes calls, without launchwatch's C++), and under `launchwatch run` (everything).
Also the C API's own cost (a push and a pop_to through ctypes) and launchwatch.scope with no tool.
Prints one markdown table for docs/benchmarks.md. Internally the same file measures one
configuration: `hook_cost.py --measure plain|noop|ctypes|run`. `--package DIR` measures another
copy of the Python package (an earlier commit's, for a before-and-after).
"""

import argparse
import json
import os
import subprocess
import sys
import timeit


def best_ns(fn, number, repeat=7):
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e9


def c_no_op_sink():
    """A sink whose members are C functions that do nothing launchwatch does (libc's strlen, abs,
    getpid), typed as the injection's C API is: what the ctypes calls themselves cost."""
    import ctypes
    import ctypes.util

    libc = ctypes.CDLL(ctypes.util.find_library("c"))

    class CNoOp:
        active = True

    sink = CNoOp()
    sink.push = libc.strlen
    sink.push.argtypes, sink.push.restype = [ctypes.c_char_p], ctypes.c_int
    sink.push_under = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint32, ctypes.c_char_p)(
        ("abs", libc))
    sink.pop_to = libc.abs
    sink.pop_to.argtypes, sink.pop_to.restype = [ctypes.c_int], ctypes.c_int
    sink.current_path = libc.getpid
    sink.current_path.argtypes, sink.current_path.restype = [], ctypes.c_uint32
    return sink


def measure(mode):
    import torch
    from torch import nn

    torch.set_num_threads(1)
    import launchwatch
    from launchwatch import _sink

    if mode in ("noop", "ctypes"):
        class ActiveNothing(_sink.NullSink):
            active = True

        _sink.set_sink(ActiveNothing() if mode == "noop" else c_no_op_sink())
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
    torch.manual_seed(0)
    stack = nn.Sequential(*[nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8),
                                          nn.ReLU(inplace=True)) for _ in range(30)])
    image = torch.randn(1, 8, 4, 4)

    def conv_train():
        stack(image).sum().backward()

    def conv_infer():
        with torch.no_grad():
            stack(image)

    result = {"mode": mode, "identity_call_ns": forward_ns, "linear_step_us": step_us,
              "modules_per_step": 101, "conv_train_us": best_ns(conv_train, number=10) / 1e3,
              "conv_infer_us": best_ns(conv_infer, number=10) / 1e3}
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
    parser.add_argument("--measure", choices=["plain", "noop", "ctypes", "run"],
                        help=argparse.SUPPRESS)
    parser.add_argument("--package", help="the Python package's folder (default: the build's)")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    if args.measure:
        return measure(args.measure)
    if not args.launchwatch:
        parser.error("--launchwatch PATH is needed")
    launchwatch = os.path.abspath(args.launchwatch)
    package = args.package or os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(launchwatch))), "python")
    me = [args.python, os.path.abspath(__file__), "--measure"]
    environment = dict(os.environ, PYTHONPATH=package)
    results = {}
    for mode, command in (("plain", me + ["plain"]), ("noop", me + ["noop"]),
                          ("ctypes", me + ["ctypes"]),
                          ("run", [launchwatch, "run", "--out", "hook-cost-run", "--"]
                           + me + ["run"])):
        done = subprocess.run(command, env=environment, capture_output=True, text=True, check=True)
        line = next(line for line in done.stdout.splitlines() if line.startswith("{"))
        results[mode] = json.loads(line)
    modes = ("plain", "noop", "ctypes", "run")

    def row(what, key, unit, digits=0):
        plain = results["plain"][key]
        cells = [f"{plain:.{digits}f} {unit}"] + [
            f"{results[m][key]:.{digits}f} {unit} ({results[m][key] / plain:.2f}x)"
            for m in modes[1:]]
        print(f"| {what} | " + " | ".join(cells) + " |")

    print("| | plain | hooks, Python no-op sink | hooks, C no-op sink (ctypes) "
          "| hooks under launchwatch run |")
    print("| --- | --- | --- | --- | --- |")
    row("nn.Identity call", "identity_call_ns", "ns")
    per_call = [results[m]["identity_call_ns"] - results["plain"]["identity_call_ns"]
                for m in modes[1:]]
    print("| hooks' cost per module call | | " + " | ".join(f"{c:.0f} ns" for c in per_call) + " |")
    row("50 x (Linear 64 + ReLU), batch 32, forward + backward", "linear_step_us", "us")
    row("30 x (Conv2d 8 + BatchNorm2d + ReLU), 8x4x4, forward + backward", "conv_train_us", "us")
    row("the same, inference under no_grad", "conv_infer_us", "us")
    print(f"| launchwatch.scope enter + exit | {results['plain']['scope_ns']:.0f} ns (no tool) "
          f"| | | {results['run']['scope_ns']:.0f} ns |")
    c_api = results["run"].get("c_api_push_pop_ns", float("nan"))
    print(f"| C API push + pop_to through ctypes | | | | {c_api:.0f} ns |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
