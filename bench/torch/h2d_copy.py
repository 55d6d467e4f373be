#!/usr/bin/env python3
"""One DataLoader batch's copy to the GPU, timed (issue 22): a hypothesis for why `launchwatch run
--torch off --timing none` costs ResNet-18's step 1.24x when a DataLoader feeds it and nothing
measurable without one (docs/benchmarks.md). The step with a DataLoader is the one that copies a
batch from host memory each step (64 x 3 x 128 x 128 floats, 12.6 MB, from the workers' shared
memory, not pinned), so: does a CUPTI subscriber in the process slow that copy? Run it plain and
under `launchwatch run` (untimed, then timed) in turn:

    python3 bench/torch/h2d_copy.py
    launchwatch run --torch off --timing none --out /tmp/h2d -- python3 bench/torch/h2d_copy.py
    launchwatch run --torch off --out /tmp/h2d -- python3 bench/torch/h2d_copy.py

Prints JSON: the median and best milliseconds of `x.to("cuda", non_blocking=True)` and a
synchronize, for the batch in pageable memory, in shared memory (as a DataLoader worker hands it
over) and pinned, 50 copies each after 5 to warm up. Needs CUDA.
"""

import json
import statistics
import time

import torch


def timed(source, copies=50, warm_up=5):
    for _ in range(warm_up):
        source.to("cuda", non_blocking=True)
    torch.cuda.synchronize()
    times = []
    for _ in range(copies):
        start = time.perf_counter()
        source.to("cuda", non_blocking=True)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return {"median_ms": round(statistics.median(times), 3), "best_ms": round(min(times), 3)}


def main():
    batch = torch.randn(64, 3, 128, 128)
    print(json.dumps({"pageable": timed(batch), "shared": timed(batch.clone().share_memory_()),
                      "pinned": timed(batch.pin_memory())}))


if __name__ == "__main__":
    main()
