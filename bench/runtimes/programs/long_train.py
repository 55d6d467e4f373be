#!/usr/bin/env python3
"""A long PyTorch training run for bench/runtimes (--long-run): an MLP trained for --seconds under
NVTX ranges, every step in `step`, and steps --window-from to --window-from + --window-steps
inside a `window` range too, so a report's `window` scope holds exactly those steps' kernels.
Prints its resident memory (launchwatch's included, when it runs under `launchwatch run`) as
`rss: <seconds> s <MB> MB` ten times over the run, and `steps: N` at the end.

--profile-window: instead, run only until the window ends, with torch.profiler over the window's
steps, and print `profiler: {"kernels": N}`: the reference for the window's kernel count."""

import argparse
import json
import os
import sys
import tempfile
import time

from common import Skip, require


def rss_mb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=480)
    parser.add_argument("--window-from", type=int, default=1000)
    parser.add_argument("--window-steps", type=int, default=50)
    parser.add_argument("--profile-window", action="store_true")
    args = parser.parse_args()
    try:
        torch = require("torch")
        if not torch.cuda.is_available():
            raise Skip("PyTorch sees no CUDA device")
    except Skip as why:
        print(f"skipped: {why}")
        return 77
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.GELU(),
                                torch.nn.Linear(2048, 512), torch.nn.LayerNorm(512)).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    inputs = torch.randn(256, 512, device="cuda")
    targets = torch.randn(256, 512, device="cuda")
    nvtx = torch.cuda.nvtx
    window_end = args.window_from + args.window_steps

    def step():
        with nvtx.range("step"):
            loss = torch.nn.functional.mse_loss(model(inputs), targets)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

    if args.profile_window:
        from torch.profiler import ProfilerActivity, profile

        for _ in range(args.window_from):
            step()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            with nvtx.range("window"):
                for _ in range(args.window_steps):
                    step()
            torch.cuda.synchronize()
        path = os.path.join(tempfile.mkdtemp(), "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            kernels = sum(1 for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel")
        print("profiler: " + json.dumps({"kernels": kernels}))
        return 0

    began = time.monotonic()
    next_report = 0.0
    steps = 0
    while True:
        elapsed = time.monotonic() - began
        if elapsed >= next_report:
            print(f"rss: {elapsed:.0f} s {rss_mb():.0f} MB", flush=True)
            next_report += args.seconds / 10
        if steps >= window_end and elapsed >= args.seconds:
            break
        if steps == args.window_from:
            torch.cuda.synchronize()
            with nvtx.range("window"):
                for _ in range(args.window_steps):
                    step()
                torch.cuda.synchronize()
            steps += args.window_steps
            continue
        step()
        steps += 1
    torch.cuda.synchronize()
    print(f"rss: {time.monotonic() - began:.0f} s {rss_mb():.0f} MB")
    print(f"steps: {steps}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
