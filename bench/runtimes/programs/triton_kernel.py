#!/usr/bin/env python3
"""A standalone Triton kernel for bench/runtimes: Triton's own launcher calls the driver API's
cuLaunchKernel directly (its tensors come from PyTorch, which launches nothing in the range)."""

import sys

from common import Skip, require, run


def setup(args):
    torch = require("torch")
    triton = require("triton")
    tl = require("triton.language")
    if not torch.cuda.is_available():
        raise Skip("PyTorch sees no CUDA device")

    @triton.jit
    def add_scaled(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, 2.0 * x + y, mask=mask)

    n = 1 << 24
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    grid = (triton.cdiv(n, 1024),)

    def step():
        add_scaled[grid](x, y, out, n, BLOCK=1024)

    return step, torch.cuda.synchronize


if __name__ == "__main__":
    sys.exit(run(setup, __doc__.splitlines()[0], steps=100))
