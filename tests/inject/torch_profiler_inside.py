#!/usr/bin/env python3
"""A PyTorch program that profiles some of its own training steps with torch.profiler, for
launchwatch run's GPU test (run_gpu_test.cpp): steps before, during and after the profiler's
window. Prints `profiler kernels: N`, the kernels torch.profiler recorded in its window (the kernel
events of its trace), and `done`. Nothing in it knows about launchwatch.

Options: --before N, --profiled N, --after N (steps; default 3 each).
"""

import argparse
import json
import os
import sys
import tempfile

import torch
from torch.profiler import ProfilerActivity, profile


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("before", "profiled", "after"):
        parser.add_argument(f"--{name}", type=int, default=3)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("torch_profiler_inside: no CUDA device for PyTorch", file=sys.stderr)
        return 1
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(),
                                torch.nn.Linear(1024, 256)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    inputs = torch.randn(128, 256, device="cuda")
    targets = torch.randn(128, 256, device="cuda")

    def steps(count):
        for _ in range(count):
            loss = torch.nn.functional.mse_loss(model(inputs), targets)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        torch.cuda.synchronize()

    steps(args.before)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        steps(args.profiled)
    steps(args.after)
    path = os.path.join(tempfile.mkdtemp(), "trace.json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        kernels = sum(1 for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel")
    print(f"profiler kernels: {kernels}")
    print("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
