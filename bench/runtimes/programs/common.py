"""What every Python program of bench/runtimes shares: a profiler API range around its measured
steps, and its command line.

The range is the CUDA driver's cuProfilerStart/cuProfilerStop, called through ctypes in the
device's primary context (the one CuPy, JAX, Numba, Triton and PyTorch all use), so a program of
any runtime can mark it without the CUDA runtime's Python bindings; `launchwatch run
--capture-range cuda-profiler-api` and the reference kernel counter (kernel_counter.cpp) both see
it. Before Stop every step's work is finished (the runtime's own wait, then cuCtxSynchronize).

A program calls run(setup): setup(args) imports its runtime, prepares its data and returns
(step, finish): step() issues one step's kernels, finish() waits until the runtime has launched
and finished them (JAX dispatches asynchronously). A runtime that is not installed, or has no GPU
here, raises Skip: the program prints why and exits with status 77, the driver's "skipped".
"""

import argparse
import contextlib
import ctypes
import sys

SKIPPED = 77


class Skip(Exception):
    """The program cannot run here (its runtime is missing, or sees no GPU): says why."""


class Driver:
    """The CUDA driver's profiler range and a context-wide wait, in device 0's primary context."""

    def __init__(self):
        try:
            self.cuda = ctypes.CDLL("libcuda.so.1")
        except OSError as missing:
            raise Skip(f"no CUDA driver here ({missing})")
        self._call("cuInit", 0)
        device = ctypes.c_int()
        self._call("cuDeviceGet", ctypes.byref(device), 0)
        self.context = ctypes.c_void_p()
        self._call("cuDevicePrimaryCtxRetain", ctypes.byref(self.context), device)

    def _call(self, name, *args):
        status = getattr(self.cuda, name)(*args)
        if status != 0:
            raise RuntimeError(f"{name} failed with CUDA error {status}")

    @contextlib.contextmanager
    def _current(self):
        self._call("cuCtxPushCurrent_v2", self.context)
        try:
            yield
        finally:
            popped = ctypes.c_void_p()
            self._call("cuCtxPopCurrent_v2", ctypes.byref(popped))

    def synchronize(self):
        with self._current():
            self._call("cuCtxSynchronize")

    def start(self):
        with self._current():
            self._call("cuProfilerStart")

    def stop(self):
        with self._current():
            self._call("cuCtxSynchronize")
            self._call("cuProfilerStop")


def run(setup, description, steps=20, warmup=3, add_arguments=None, around=None):
    """Parses the command line (--steps, --warmup, and what `add_arguments(parser)` adds), runs
    `warmup` steps, then `steps` steps inside the profiler range; prints `steps: N` and returns
    the exit status. `around(args)`, when given, returns a context manager the range is run in
    (a profiler of the program's own, for a reference in the same process)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--steps", type=int, default=steps)
    parser.add_argument("--warmup", type=int, default=warmup)
    if add_arguments is not None:
        add_arguments(parser)
    args = parser.parse_args()
    try:
        driver = Driver()
        step, finish = setup(args)
    except Skip as why:
        print(f"skipped: {why}")
        return SKIPPED
    for _ in range(args.warmup):
        step()
    finish()
    driver.synchronize()
    with (around(args) if around is not None else contextlib.nullcontext()):
        driver.start()
        for _ in range(args.steps):
            step()
        finish()
        driver.stop()
    print(f"steps: {args.steps}")
    return 0


def require(module_name):
    """Imports `module_name`, or raises Skip saying it is not installed."""
    import importlib

    try:
        return importlib.import_module(module_name)
    except ImportError as missing:
        raise Skip(f"{module_name} is not installed for {sys.executable} ({missing})")
