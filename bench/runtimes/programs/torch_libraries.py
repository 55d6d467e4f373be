#!/usr/bin/env python3
"""cuDNN convolutions and cuBLASLt matmuls through PyTorch for bench/runtimes: a Conv2d forward
and backward (cuDNN) and matmuls with a bias (torch.addmm, cuBLASLt as PyTorch's preferred BLAS).

--profiler: run the profiler range under torch.profiler as well (in this process: the reference
where Kineto sees the kernels; not under launchwatch run or the kernel counter, which hold CUPTI)
and print `profiler: {"kernels": N, "kernel_ns": T}` from the kernel events of its trace."""

import contextlib
import json
import os
import sys
import tempfile

from common import Skip, require, run


def setup(args):
    torch = require("torch")
    if not torch.cuda.is_available():
        raise Skip("PyTorch sees no CUDA device")
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False  # the same algorithms in every process
    try:
        torch.backends.cuda.preferred_blas_library("cublaslt")
    except (AttributeError, RuntimeError) as why:
        raise Skip(f"this PyTorch cannot prefer cuBLASLt ({why})")
    conv = torch.nn.Conv2d(64, 64, 3, padding=1).cuda()
    images = torch.randn(32, 64, 56, 56, device="cuda", requires_grad=True)
    a = torch.randn(2048, 2048, device="cuda")
    w = torch.randn(2048, 2048, device="cuda")
    bias = torch.randn(2048, device="cuda")

    def step():
        conv(images).sum().backward()
        torch.addmm(bias, a, w)
        torch.nn.functional.linear(a, w, bias)

    return step, torch.cuda.synchronize


def add_arguments(parser):
    parser.add_argument("--profiler", action="store_true")


@contextlib.contextmanager
def profiled():
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        yield
    path = os.path.join(tempfile.mkdtemp(), "trace.json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        kernels = [e for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel"]
    print("profiler: " + json.dumps({
        "kernels": len(kernels),
        "kernel_ns": sum(round(float(e["dur"]) * 1000) for e in kernels),
    }))


if __name__ == "__main__":
    sys.exit(run(setup, __doc__.splitlines()[0], steps=20, add_arguments=add_arguments,
                 around=lambda args: profiled() if args.profiler else contextlib.nullcontext()))
