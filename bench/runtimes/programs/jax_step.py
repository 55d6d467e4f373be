#!/usr/bin/env python3
"""A JAX jit-compiled training step (an MLP, loss, gradients and an SGD update) for bench/runtimes:
XLA runs it from command buffers (CUDA graphs, captured in the warm-up, before the profiler range,
and replayed inside it) and more than one stream."""

import os
import sys

from common import Skip, require, run


def setup(args):
    # Command buffers for every kind XLA can put in one, even a graph of one kernel; no
    # preallocation of most of the GPU's memory.
    os.environ.setdefault("XLA_FLAGS", "--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,"
                          "CUSTOM_CALL,CUDNN --xla_gpu_graph_min_graph_size=1")
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    jax = require("jax")
    jnp = require("jax.numpy")
    if jax.default_backend() != "gpu":
        raise Skip(f"JAX runs on {jax.default_backend()}, not a GPU")
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    widths = [1024, 4096, 4096, 1024]
    params = [(jax.random.normal(k, (a, b)) * 0.02, jnp.zeros((b,)))
              for k, a, b in zip(keys, widths[:-1], widths[1:])]
    x = jax.random.normal(keys[3], (512, widths[0]))
    y = jnp.zeros((512, widths[-1]))

    def loss(params, x, y):
        for w, b in params[:-1]:
            x = jax.nn.gelu(x @ w + b)
        w, b = params[-1]
        return jnp.mean((x @ w + b - y) ** 2)

    @jax.jit
    def train_step(params, x, y):
        grads = jax.grad(loss)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - 1e-3 * g, params, grads)

    state = [params]

    def step():
        state[0] = train_step(state[0], x, y)

    def finish():
        jax.block_until_ready(state[0])

    return step, finish


if __name__ == "__main__":
    sys.exit(run(setup, __doc__.splitlines()[0], steps=30, warmup=5))
