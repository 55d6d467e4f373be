#!/usr/bin/env python3
"""CuPy for bench/runtimes: an ElementwiseKernel and a ufunc (compiled with NVRTC, launched
through the driver API), a reduction, and a cupy.RawKernel."""

import sys

from common import require, run

RAW = r"""
extern "C" __global__ void scale_add(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
"""


def setup(args):
    cp = require("cupy")
    n = 1 << 22
    x = cp.random.rand(n, dtype=cp.float32)
    y = cp.random.rand(n, dtype=cp.float32)
    out = cp.empty_like(x)
    fma = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x * y + 1.0f",
                               "launchwatch_fma")
    raw = cp.RawKernel(RAW, "scale_add")
    blocks = (n + 255) // 256

    def step():
        fma(x, y, out)
        cp.sqrt(out, out=out)
        out.sum()
        raw((blocks,), (256,), (x, out, cp.float32(0.5), cp.int32(n)))

    def finish():
        cp.cuda.Device().synchronize()

    return step, finish


if __name__ == "__main__":
    sys.exit(run(setup, __doc__.splitlines()[0], steps=50))
