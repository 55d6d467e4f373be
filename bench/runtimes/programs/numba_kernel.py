#!/usr/bin/env python3
"""A Numba-CUDA kernel for bench/runtimes: compiled by Numba, launched through the driver API."""

import sys

from common import Skip, require, run


def setup(args):
    np = require("numpy")
    if not hasattr(np, "row_stack"):
        # numba-cuda 0.68 still calls np.row_stack, which NumPy 2.x removed; it was an alias of
        # vstack, so the alias is put back for Numba's sake (the kernel does not use it).
        np.row_stack = np.vstack
    cuda = require("numba.cuda")
    if not cuda.is_available():
        raise Skip("Numba sees no CUDA device")

    @cuda.jit
    def saxpy(a, x, y, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a * x[i] + y[i]

    n = 1 << 22
    x = cuda.to_device(np.random.rand(n).astype(np.float32))
    y = cuda.to_device(np.random.rand(n).astype(np.float32))
    out = cuda.device_array_like(x)
    blocks = (n + 255) // 256

    def step():
        saxpy[blocks, 256](np.float32(2.0), x, y, out)

    return step, cuda.synchronize


if __name__ == "__main__":
    sys.exit(run(setup, __doc__.splitlines()[0], steps=100))
