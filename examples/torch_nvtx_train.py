#!/usr/bin/env python3
"""A PyTorch training step whose NVTX ranges name its work, for `launchwatch run`:

    launchwatch run -- python3 examples/torch_nvtx_train.py

launchwatch turns each torch.cuda.nvtx range into a scope, so its report says how many kernels,
and how much device time, the forward pass, the loss, the backward pass and the optimizer took in
each step; every CUDA kernel the step launches (cuBLAS, cuDNN, PyTorch's own) is in it. Nothing in
the script knows about launchwatch: the ranges are the ones Nsight Systems shows too.

Options: --steps N (default 5), --batch N, --width N, --profiler (run the same steps under
torch.profiler instead and print its kernel count and total kernel time, for comparison; see
docs/benchmarks.md), --json FILE (write those numbers, and the same per kernel name, as JSON),
--trace FILE (keep the profiler's trace there).
"""

import argparse
import json
import sys

import torch
from torch.cuda import nvtx


def build(width, device):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(width, 4 * width),
        torch.nn.GELU(),
        torch.nn.Linear(4 * width, width),
        torch.nn.LayerNorm(width),
    ).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    return model, optimizer


def train_step(model, optimizer, inputs, targets):
    with nvtx.range("step"):
        with nvtx.range("forward"):
            outputs = model(inputs)
        with nvtx.range("loss"):
            loss = torch.nn.functional.mse_loss(outputs, targets)
        with nvtx.range("backward"):
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
        with nvtx.range("optimizer"):
            optimizer.step()
    return loss


def run(steps, batch, width):
    device = torch.device("cuda")
    # Setup launches kernels too (initialisation, copies): a range of its own, so no kernel of
    # the run is outside a scope.
    with nvtx.range("setup"):
        model, optimizer = build(width, device)
        inputs = torch.randn(batch, width, device=device)
        targets = torch.randn(batch, width, device=device)
    for _ in range(steps):
        loss = train_step(model, optimizer, inputs, targets)
    with nvtx.range("read loss"):
        value = loss.item()
    torch.cuda.synchronize()
    return value


def profiled(steps, batch, width, trace=None):
    """The same run under torch.profiler: its kernel count and total kernel time (ns), and per
    kernel name, from the kernel events of the profiler's trace (what Perfetto or TensorBoard show).
    `trace`, when given, keeps that trace file."""
    import os
    import tempfile

    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        run(steps, batch, width)
    path = trace or os.path.join(tempfile.mkdtemp(), "profiler-trace.json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    by_name = {}
    for event in events:
        if event.get("cat") != "kernel":
            continue
        count, ns = by_name.get(event["name"], (0, 0))
        by_name[event["name"]] = (count + 1, ns + round(float(event["dur"]) * 1000))  # dur in us
    return {
        "kernels": sum(count for count, _ in by_name.values()),
        "kernel_ns": sum(ns for _, ns in by_name.values()),
        "by_name": {name: {"kernels": count, "kernel_ns": ns} for name, (count, ns) in by_name.items()},
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--profiler", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--trace")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("torch_nvtx_train: no CUDA device for PyTorch", file=sys.stderr)
        return 1
    if args.profiler:
        numbers = profiled(args.steps, args.batch, args.width, args.trace)
        print(f"torch.profiler: {numbers['kernels']} kernels, {numbers['kernel_ns'] / 1e3:.1f} us of kernel time")
    else:
        numbers = {"loss": run(args.steps, args.batch, args.width)}
        print(f"loss after {args.steps} steps: {numbers['loss']:.4f}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(numbers, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
