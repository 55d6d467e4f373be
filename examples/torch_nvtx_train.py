#!/usr/bin/env python3
"""A PyTorch training step whose NVTX ranges name its work, for `launchwatch run`:

    launchwatch run -- python3 examples/torch_nvtx_train.py

launchwatch turns each torch.cuda.nvtx range into a scope, so its report says how many kernels,
and how much device time, the forward pass, the loss, the backward pass and the optimizer took in
each step; every CUDA kernel the step launches (cuBLAS, cuDNN, PyTorch's own) is in it. Nothing in
the script knows about launchwatch: the ranges are the ones Nsight Systems shows too.

Options: --steps N (default 5), --batch N, --width N, --profiler (run the same steps under
torch.profiler instead and print its kernel count and total kernel time, for comparison; see
docs/benchmarks.md), --json FILE (write those numbers as JSON).
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


def profiled(steps, batch, width):
    """The same run under torch.profiler: its kernel count and total kernel time (ns)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        run(steps, batch, width)
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
               and not e.name.startswith(("Memcpy", "Memset"))]
    total_us = sum(e.time_range.elapsed_us() for e in kernels)
    return {"kernels": len(kernels), "kernel_ns": int(total_us * 1000)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--profiler", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("torch_nvtx_train: no CUDA device for PyTorch", file=sys.stderr)
        return 1
    if args.profiler:
        numbers = profiled(args.steps, args.batch, args.width)
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
