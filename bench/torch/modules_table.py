#!/usr/bin/env python3
"""Real PyTorch models explained by module, launchwatch run --torch modules against torch.profiler
(issue 22): for each model, one process under `launchwatch run`, one under torch.profiler with the
same hooks recording record_function ranges (the independent reference: each kernel joined to its
enclosing range through the profiler's launch correlation), and one plain, side by side.

    bench/torch/modules_table.py --launchwatch build/gpu/apps/launchwatch/launchwatch [--models a,b]

Models (random weights, built from configs: no download, no network):
  resnet50-train            torchvision ResNet-50 training steps (SGD, CrossEntropyLoss)
  gpt2-train                transformers GPT-2 (124M config) language-model training steps (AdamW)
  gpt2-checkpoint-train     the same with activation checkpointing (transformers' default, torch's
                            reentrant checkpoint); gpt2-checkpoint-nonreentrant-train with
                            use_reentrant=False (both run only when named)
  vit-compile-infer         timm ViT-B/16 (torchvision's when timm is missing) inference under
                            torch.compile
  resnet50-cudagraph-infer  torchvision ResNet-50 inference captured once, replayed as a CUDA graph
  resnet18-dataloader-train torchvision ResNet-18 training fed by a DataLoader with 4 workers
and, by name only (not in the default list), a row that splits another:
  resnet18-train            the same ResNet-18 step on one batch kept on the device, no DataLoader
                            (what the launches cost without worker processes sharing the host)
  resnet18-compile-train    that step with the model under torch.compile: its forward and backward
                            in one scope `ResNet [compiled]` (and `backward/ResNet [compiled]`)

Per model: kernel count and kernel time (launchwatch / profiler), the share of kernel time under a
module or optimizer scope (both), the top-10 scopes by device time (self) and the largest relative
difference among them against the reference, the measured steps' wall time per step (timed inside
the program: plain / launchwatch / profiler), the process wall (plain / launchwatch / profiler) and
the time from the program's end to launchwatch's exit (the report). Each model runs in try/except:
one failure leaves a row saying why. Prints the details per model, then one table. Needs CUDA.

Kernel counts: launchwatch's `launches` counts a kernel captured into a CUDA graph once when it is
recorded (and each replay's kernels as they run), the profiler only kernels that ran; the table
compares the kernels that ran (launches less captured and dry-run ones) and says how many were
captured. Per model, OUT/MODEL/kernel_diff.csv has each kernel name's count in both (launchwatch's
summary.json, the profiler's trace), largest difference first, and the details list the top ones.

`--variants MODEL,...` adds, for those models, the step wall of more processes, to show where
launchwatch's extra step time goes (OUT/MODEL/variants.json and a second table): the hooks with a
Python no-op sink and no tool (the hooks alone), `run --torch off` (the CUDA bridge alone) with
and without timing, and `run --torch modules` without timing, with the C API through ctypes, and
with the Python hooks instead of the C extension's (the before-and-after of the hooks in C).
`--variant-rounds N` runs those processes N times, in rotated order, each round with a plain
process and the table's configuration of its own: the split table then gives medians, and each
ratio as the median of the rounds' ratios to their own plain process with its range (one process
each moved by ±15% on a host-bound model on the H200).

`--blocks N` measures, for each model, launchwatch's own share of the step inside one process,
where the spread between processes cannot reach it: --variant-rounds processes under
`launchwatch run --torch modules --capture-range cuda-profiler-api`, each timing its steps in
blocks of N, watched and unwatched in turn (unwatched: after cudaProfilerStop, so each launch pays
only CUPTI's callback and kernel record, the floor of any CUPTI-timed tool; in one process of each
round also with the module hooks out of torch's registries, in the other with them kept), and a
third table with each process's ratio, paired block by block: launchwatch's whole share, and the
launches' attribution and timing alone.

Internally the same file is the worker:
`modules_table.py --worker MODEL --json FILE [--profile] [--sink noop|ctypes|python-hooks]`.
Its JSON has the measured steps' wall per step and, beside it, the stepping thread's and the whole
process's CPU time per step (a step that grew in wall but not in CPU time waited for something),
the stepping thread's page faults and context switches per step and, for the DataLoader's model,
its wait for each batch and the worker processes' CPU time per step, and the host's speed around
them (host_speed_ms: a fixed host-side workload's time on the stepping thread, before and after).
With LAUNCHWATCH_BENCH_PIN=N the worker runs on the first N physical cores (all their hardware
threads) and the DataLoader's workers on every other CPU (no core shared between the two).
With LAUNCHWATCH_BENCH_PERF_CTL=CTL,ACK (the FIFOs of `perf record -D -1 --control fifo:CTL,ACK`)
the worker turns perf's sampling on for its measured steps only.
"""

import argparse
import contextlib
import csv
import gc
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import threading
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = ["resnet50-train", "gpt2-train", "vit-compile-infer", "resnet50-cudagraph-infer",
          "resnet18-dataloader-train"]
EXTRA_MODELS = ["resnet18-train", "gpt2-checkpoint-train",  # run only when named
                "gpt2-checkpoint-nonreentrant-train", "resnet18-compile-train"]
RANGE_PREFIX = "lw:"

# ---- the worker: one model's steps ------------------------------------------------------------


def build(name, device):
    """(step function, warm-up steps, measured steps, module root names, notes)."""
    import torch
    from torch import nn

    torch.manual_seed(0)

    def classifier_training(model, x, y):
        """One batch kept on the device: SGD with momentum on cross-entropy, a step a call."""
        loss_fn = nn.CrossEntropyLoss()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def step():
            optimizer.zero_grad(set_to_none=True)
            loss_fn(model(x), y).backward()
            optimizer.step()

        return step

    if name == "resnet50-train":
        import torchvision

        step = classifier_training(torchvision.models.resnet50().to(device),
                                   torch.randn(64, 3, 224, 224, device=device),
                                   torch.randint(0, 1000, (64,), device=device))
        return step, 3, 10, ["ResNet", "CrossEntropyLoss"], ""
    if name in ("gpt2-train", "gpt2-checkpoint-train", "gpt2-checkpoint-nonreentrant-train"):
        from transformers import GPT2Config, GPT2LMHeadModel

        model = GPT2LMHeadModel(GPT2Config()).to(device)
        if name != "gpt2-train":  # activation checkpointing, each block recomputed in backward
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={
                "use_reentrant": name == "gpt2-checkpoint-train"})
        ids = torch.randint(0, 50257, (8, 512), device=device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def step():
            optimizer.zero_grad(set_to_none=True)
            model(input_ids=ids, labels=ids).loss.backward()
            optimizer.step()

        notes = {"gpt2-checkpoint-train": "activation checkpointing, reentrant",
                 "gpt2-checkpoint-nonreentrant-train": "activation checkpointing, not reentrant"}
        return step, 3, 10, ["GPT2LMHeadModel"], notes.get(name, "")
    if name == "vit-compile-infer":
        try:
            import timm

            model = timm.create_model("vit_base_patch16_224", pretrained=False)
            note = "timm vit_base_patch16_224"
        except ImportError:
            import torchvision

            model = torchvision.models.vit_b_16()
            note = "torchvision vit_b_16 (no timm)"
        model = model.to(device).eval()
        root = type(model).__name__ + " [compiled]"
        compiled = torch.compile(model)
        x = torch.randn(64, 3, 224, 224, device=device)

        def step():
            with torch.no_grad():
                compiled(x)

        return step, 3, 20, [root], note
    if name == "resnet50-cudagraph-infer":
        import torchvision

        model = torchvision.models.resnet50().to(device).eval()
        static_x = torch.randn(64, 3, 224, 224, device=device)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), torch.no_grad():
            for _ in range(3):
                model(static_x)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph), torch.no_grad():
            model(static_x)

        def step():
            graph.replay()

        return step, 3, 30, ["ResNet"], "replays charged to the capture's module scopes"
    if name == "resnet18-dataloader-train":
        import torchvision

        class SyntheticImages(torch.utils.data.Dataset):
            def __len__(self):  # batches for --blocks' steps and the measured ones after them
                return 64 * 1000

            def __getitem__(self, index):
                generator = torch.Generator().manual_seed(index)
                return torch.randn(3, 128, 128, generator=generator), index % 10

        model = torchvision.models.resnet18(num_classes=10).to(device)
        loss_fn = nn.CrossEntropyLoss()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        worker_cpus = os.environ.get("LAUNCHWATCH_BENCH_WORKER_CPUS")
        loader = torch.utils.data.DataLoader(
            SyntheticImages(), batch_size=64, num_workers=4, persistent_workers=True,
            worker_init_fn=pin_workers({int(c) for c in worker_cpus.split(",")})
            if worker_cpus else None)
        batches = iter(loader)

        def step():
            waited = time.perf_counter()
            x, y = next(batches)
            step.parts["data_wait_ms"] += (time.perf_counter() - waited) * 1e3
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            loss_fn(model(x), y).backward()
            optimizer.step()

        # The worker's JSON splits the step: the stepping thread's wait for the next batch, and the
        # worker processes' CPU time (worker_processes).
        step.parts = {"data_wait_ms": 0.0}
        # The iterator's own list (torch's private name: none where a torch renames it).
        step.worker_processes = lambda: [w.pid for w in getattr(batches, "_workers", [])]
        return step, 3, 20, ["ResNet", "CrossEntropyLoss"], "4 DataLoader worker processes"
    if name == "resnet18-train":
        import torchvision

        step = classifier_training(torchvision.models.resnet18(num_classes=10).to(device),
                                   torch.randn(64, 3, 128, 128, device=device),
                                   torch.randint(0, 10, (64,), device=device))
        return step, 3, 20, ["ResNet", "CrossEntropyLoss"], "no DataLoader"
    if name == "resnet18-compile-train":
        import torchvision

        model = torchvision.models.resnet18(num_classes=10).to(device)
        step = classifier_training(torch.compile(model),
                                   torch.randn(64, 3, 128, 128, device=device),
                                   torch.randint(0, 10, (64,), device=device))
        return step, 3, 20, ["ResNet [compiled]", "CrossEntropyLoss"], "torch.compile, training"
    if name == "tiny-train":  # the script's own smoke test (--device cpu), not a table row
        model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).to(device)
        x = torch.randn(16, 32, device=device)
        y = torch.randint(0, 10, (16,), device=device)
        loss_fn = nn.CrossEntropyLoss()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

        def step():
            optimizer.zero_grad(set_to_none=True)
            loss_fn(model(x), y).backward()
            optimizer.step()

        return step, 2, 5, ["Sequential", "CrossEntropyLoss"], "smoke test"
    raise ValueError(f"unknown model {name}; choose from {', '.join(MODELS + EXTRA_MODELS)}")


class RecordFunctionSink:
    """launchwatch's hooks, recording into torch.profiler instead of launchwatch: each range a
    record_function named by its whole path (`lw:step/backward/ResNet/fc`), so the innermost
    range enclosing a launch names its scope (the sink protocol of launchwatch/_sink.py)."""

    active = True

    def __init__(self):
        import torch

        self._record_function = torch.autograd.profiler.record_function
        self._local = threading.local()
        self._lock = threading.Lock()
        self._paths = [()]
        self._ids = {(): 0}

    def _stack(self):
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def _open(self, path):
        stack = self._stack()
        ranges = self._record_function(RANGE_PREFIX + "/".join(path))
        ranges.__enter__()
        stack.append((path, ranges))
        return len(stack) - 1

    def push(self, name):
        stack = self._stack()
        return self._open((stack[-1][0] if stack else ()) + (name.decode(),))

    def push_under(self, parent, name):
        return self._open(self._paths[parent] + (name.decode(),))

    def pop_to(self, depth):
        stack = self._stack()
        while len(stack) > max(depth, 0):
            stack.pop()[1].__exit__(None, None, None)
        return len(stack)

    def current_path(self):
        stack = self._stack()
        if not stack:
            return 0
        path = stack[-1][0]
        with self._lock:
            if path not in self._ids:
                self._ids[path] = len(self._paths)
                self._paths.append(path)
            return self._ids[path]


def trace_events(trace_file):
    """The events of a Chrome trace torch.profiler exported (an object with `traceEvents`, or, from
    a CPU-only torch 1.x, the bare list)."""
    with open(trace_file) as f:
        trace = json.load(f)
    return trace["traceEvents"] if isinstance(trace, dict) else trace


def reference_by_path(trace_file):
    """From torch.profiler's trace: each kernel's device time charged to the innermost `lw:` range
    open on the thread that launched it (by the launch's correlation id), or, when that thread had
    none open, to the innermost range of the one thread that had (launchwatch's sole-scoped-thread
    rule); "" when none or several had. Returns (kernels, kernel ns, {path: self ns})."""
    events = trace_events(trace_file)
    launches = {}
    kernels = []
    ranges = []
    for e in events:
        category = e.get("cat")
        args = e.get("args") or {}
        if category == "kernel":
            kernels.append((args.get("correlation"), round(float(e.get("dur", 0)) * 1000)))
        elif category in ("cuda_runtime", "cuda_driver") and "correlation" in args:
            launches[args["correlation"]] = (float(e["ts"]), e.get("tid"))
        elif (str(e.get("name", "")).startswith(RANGE_PREFIX) and category != "gpu_user_annotation"
              and e.get("ph", "X") == "X"):  # the host range (its GPU echo has its own category)
            start = float(e["ts"])
            end = start + float(e.get("dur", 0))
            ranges.append((start, end, e.get("tid"), e["name"][len(RANGE_PREFIX):]))
    ranges.sort(key=lambda r: (r[0], -r[1]))
    placed = sorted(((launches.get(c, (float("inf"), None)), ns) for c, ns in kernels),
                    key=lambda k: k[0][0])
    stacks = {}
    by_path = {}
    next_range = 0

    def top(tid, at):
        stack = stacks.get(tid)
        while stack and stack[-1][1] < at:
            stack.pop()
        return stack[-1][3] if stack else None

    for (at, tid), ns in placed:
        while next_range < len(ranges) and ranges[next_range][0] <= at:
            r = ranges[next_range]
            stack = stacks.setdefault(r[2], [])
            while stack and stack[-1][1] <= r[0]:
                stack.pop()
            stack.append(r)
            next_range += 1
        path = top(tid, at)
        if path is None:
            others = [p for p in (top(t, at) for t in list(stacks)) if p is not None]
            path = others[0] if len(others) == 1 else ""
        by_path[path] = by_path.get(path, 0) + ns
    return len(kernels), sum(ns for _, ns in kernels), by_path


def use_sink(kind, package):
    """Once torch is imported (under run, the sitecustomize has installed the hooks then):
    `noop` installs the hooks with a sink that records nothing, in a process no tool watches;
    `ctypes` (under launchwatch run) makes the hooks reach the injection through ctypes rather
    than the C extension; `python-hooks` (under launchwatch run) makes the hooks the Python ones
    rather than the C extension's. Returns the hooks' sink's `via` (None where no hooks are
    installed), with ", python hooks" for the last, and ", sequence route" where the module
    hooks' sequence route runs (it could start, and LAUNCHWATCH_TORCH_BACKWARD is not node-hooks;
    under run it opens backward ranges itself, with a no-op sink too)."""
    if kind is None:
        sink = sys.modules.get("launchwatch._sink")
        via = getattr(getattr(sink, "current", None), "via", None) if sink else None
        hooks = sys.modules.get("launchwatch.torch")
        if via and getattr(hooks, "_sequence_route", [None])[0] is not None:
            via += ", sequence route"
        return via
    sys.path.insert(0, package)
    from launchwatch import _sink
    import launchwatch.torch

    if kind == "python-hooks":
        if not _sink.get().active:
            sys.exit("modules_table: --sink python-hooks outside launchwatch run")
        launchwatch.torch._use_hooks("python")
        return f"{_sink.current.via}, python hooks"
    if kind == "noop":
        class NoOpSink(_sink.NullSink):  # records nothing, but the hooks run as under run
            active = True
            via = "noop"

        _sink.set_sink(NoOpSink())
        launchwatch.torch.install("modules")
        if launchwatch.torch._sequence_route[0] is not None:  # under run: started before the swap
            return "noop, sequence route"
    else:
        import ctypes

        if not _sink.get().active:
            sys.exit("modules_table: --sink ctypes outside launchwatch run")
        _sink.set_sink(_sink.InjectionSink(ctypes.CDLL(os.environ["NVTX_INJECTION64_PATH"])))
    return _sink.current.via


def kernel_names(trace_file):
    """{kernel name: count} of the kernels in torch.profiler's trace."""
    events = trace_events(trace_file)
    names = {}
    for e in events:
        if e.get("cat") == "kernel":
            names[e.get("name", "")] = names.get(e.get("name", ""), 0) + 1
    return names


def watched_blocks(step, steps, size, device, synchronize, hooks_stay=False):
    """launchwatch's own share of the step, measured inside one process: `steps` steps in blocks of
    `size`, watched and unwatched in turn (each pair in the other order than the one before, so a
    drift falls on both alike). Unwatched: cudaProfilerStop, which under `launchwatch run
    --capture-range cuda-profiler-api` leaves each launch at CUPTI's callback and a counter (CUPTI's
    kernel records go off outside the range since 2026-12-06; before, they stayed on), and the
    module hooks out of torch's registries; watched: cudaProfilerStart and the hooks back. Each
    block's time per step, and their ratio pair by pair (its median and range): what launchwatch
    and CUPTI's kernel records add over CUPTI's launch callbacks, free of the spread between
    processes, which on the H200's hosts is larger than the ratio itself. With `hooks_stay` the unwatched blocks keep
    the module hooks (their Python and their ranges, which launchwatch still keeps): the ratio is
    then the launches' attribution and timing alone, and the hooks' share is the ratio without it
    over this one."""
    import torch

    profiler = torch.cuda.profiler if device.type == "cuda" else None
    hooks = sys.modules.get("launchwatch.torch")  # installed by run's sitecustomize, if at all
    pairs = max(1, steps // (2 * size))
    watched, unwatched = [], []
    for pair in range(pairs):
        for watching in ((True, False) if pair % 2 == 0 else (False, True)):
            if profiler:
                (profiler.start if watching else profiler.stop)()
            unwatched_hooks = (hooks._hooks_suspended() if hooks and not watching and not hooks_stay
                               else contextlib.nullcontext())
            with unwatched_hooks:
                start = time.perf_counter()
                for _ in range(size):
                    step()
                synchronize()
            (watched if watching else unwatched).append(
                (time.perf_counter() - start) * 1e3 / size)
    if profiler:
        profiler.start()  # the measured steps that follow run watched, as the table's run
    ratios = sorted(w / u for w, u in zip(watched, unwatched))
    return dict(block_steps=size, block_pairs=pairs, hooks_stay=hooks_stay,
                watched_ms=statistics.median(watched),
                unwatched_ms=statistics.median(unwatched),
                watched_over_unwatched=statistics.median(ratios),
                watched_over_unwatched_range=[ratios[0], ratios[-1]])


class PerfControl:
    """perf record's control FIFOs (`perf record -D -1 --control fifo:CTL,ACK`), named by
    LAUNCHWATCH_BENCH_PERF_CTL as "CTL,ACK": the worker enables sampling for its measured steps
    only, so a profile leaves out importing torch, building the model and the exit. Unset: nothing."""

    def __init__(self, fifos):
        self.control = self.ack = None
        if fifos:
            control, ack = fifos.split(",")
            self.control = open(control, "w")
            self.ack = open(ack)

    def command(self, what):
        if self.control is None:
            return
        self.control.write(what + "\n")
        self.control.flush()
        self.ack.readline()  # perf acknowledges once it has done it


class GarbageCollections:
    """Python's cyclic collections from now until stop(): how many of each generation, and the
    wall time inside them (gc.callbacks), so a step that grew because more objects lived through
    it says so."""

    def __init__(self):
        self.by_generation = [0, 0, 0]
        self.seconds = 0.0
        self._began = None
        gc.callbacks.append(self._callback)

    def _callback(self, phase, info):
        if phase == "start":
            self._began = time.perf_counter()
        elif self._began is not None:
            self.seconds += time.perf_counter() - self._began
            self.by_generation[info["generation"]] += 1
            self._began = None

    def stop(self):
        gc.callbacks.remove(self._callback)


def processes_cpu_seconds(pids):
    """The user and system CPU seconds the processes `pids` have used so far (/proc/PID/stat's
    utime and stime: clock ticks, 10 ms on Linux), 0 for one that is gone."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                # The fields after the command's ")" (which may hold spaces): utime is the 14th
                # field of the line, stime the 15th.
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            continue
    return total / os.sysconf("SC_CLK_TCK")


def use_probe(probe):
    """Parts of what install() does to a process, alone, with no hook and no tool (issue 22: which
    part makes a host-bound step slower): `dynamo-import` imports Dynamo's eval_frame as install()
    does (to know a compiled module), `call-wrapper` puts a Python pass-through around
    Module.__call__ as install()'s wrapper does, `call-wrapper-dynamo` that wrapper with the
    Dynamo check install()'s makes on every call."""
    import torch

    if probe == "dynamo-import":
        try:
            from torch._dynamo.eval_frame import OptimizedModule  # noqa: F401
        except ImportError as missing:
            sys.exit(f"modules_table: --probe dynamo-import: {missing}")
        return
    original = torch.nn.Module.__call__
    if probe == "call-wrapper":
        def __call__(self, *args, **kwargs):
            return original(self, *args, **kwargs)
    else:
        check = getattr(getattr(torch, "compiler", None), "is_compiling", None)
        if check is None:
            sys.exit("modules_table: --probe call-wrapper-dynamo needs torch.compiler (torch 2)")

        def __call__(self, *args, **kwargs):
            check()  # the check alone: no hook follows it in either case
            return original(self, *args, **kwargs)
    torch.nn.Module.__call__ = __call__


def cpu_sets(main_cores):
    """(the main process's CPUs, the DataLoader workers' CPUs): the first `main_cores` physical
    cores with all their hardware threads, and every other CPU this process may use, so that no
    worker shares a physical core with the stepping thread (where the two sets would share one,
    a step's speed depends on where the scheduler put the processes)."""
    allowed = sorted(os.sched_getaffinity(0))
    cores = {}
    for cpu in allowed:
        try:
            with open(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list") as f:
                siblings = f.read().strip()
        except OSError:
            siblings = str(cpu)
        cores.setdefault(siblings, []).append(cpu)
    main = [cpu for siblings in list(cores.values())[:main_cores] for cpu in siblings]
    return set(main), set(allowed) - set(main)


def pin_workers(cpus):
    """The DataLoader's worker_init_fn under LAUNCHWATCH_BENCH_PIN: the workers' CPUs."""
    def init(_):
        os.sched_setaffinity(0, cpus)
    return init


def host_speed_ms(torch):
    """The stepping thread's speed where it runs now: the median of 5 timings of a fixed host-side
    workload shaped like a host-bound step's (small CPU tensor ops through torch's dispatcher, a
    Python loop around them), in ms. Taken before and after the measured steps: where processes'
    steps differ because the host ran them at different speeds (its other load), this differs as
    much, and the step over it does not. No launchwatch hook runs in it (no module, no kernel),
    except `--torch ops`' range per op."""
    tensor = torch.ones(16)
    times = []
    for _ in range(5):
        start = time.perf_counter()
        value = tensor
        for _ in range(1000):
            value = value.add(1.0).mul_(0.5)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def worker(args):
    pin = int(os.environ.get("LAUNCHWATCH_BENCH_PIN", "0") or 0)
    if pin > 0:  # before torch starts its threads, which inherit it
        main, workers = cpu_sets(pin)
        if workers:
            os.sched_setaffinity(0, main)
            os.environ["LAUNCHWATCH_BENCH_WORKER_CPUS"] = ",".join(map(str, sorted(workers)))
    import torch

    result = {"model": args.worker, "sink": use_sink(args.sink, args.python_package)}
    if args.probe:
        use_probe(args.probe)
        result["probe"] = args.probe
    if args.profile:
        sys.path.insert(0, args.python_package)
        from launchwatch import _sink
        import launchwatch.torch

        _sink.set_sink(RecordFunctionSink())
        launchwatch.torch.install("modules")
        from torch.profiler import ProfilerActivity, profile

        profiler = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        profiler.__enter__()
    device = torch.device(args.device)
    synchronize = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    step, warmup, steps, roots, note = build(args.worker, device)
    steps = args.steps or steps
    for _ in range(warmup):
        step()
    synchronize()
    if args.blocks:
        result.update(watched_blocks(step, steps, args.blocks, device, synchronize,
                                     args.blocks_hooks_stay))
    perf = PerfControl(os.environ.get("LAUNCHWATCH_BENCH_PERF_CTL"))
    parts = getattr(step, "parts", {})
    for part in parts:
        parts[part] = 0.0
    helpers = getattr(step, "worker_processes", lambda: [])()
    # The host's speed around the measured steps, outside perf's samples and the GC count.
    speed_before = host_speed_ms(torch)
    collections = GarbageCollections()
    perf.command("enable")
    helpers_cpu = processes_cpu_seconds(helpers)
    thread_usage = resource.getrusage(resource.RUSAGE_THREAD)
    start = time.perf_counter()
    thread_cpu, process_cpu = time.thread_time(), time.process_time()
    for _ in range(steps):
        step()
    synchronize()
    step_ms = (time.perf_counter() - start) * 1e3 / steps
    # CPU time of the stepping thread and of the whole process over the measured steps: a step
    # that grew in wall time but not in its thread's CPU time waited for something.
    thread_cpu_ms = (time.thread_time() - thread_cpu) * 1e3 / steps
    process_cpu_ms = (time.process_time() - process_cpu) * 1e3 / steps
    thread_usage_after = resource.getrusage(resource.RUSAGE_THREAD)
    helpers_cpu_ms = (processes_cpu_seconds(helpers) - helpers_cpu) * 1e3 / steps
    perf.command("disable")
    collections.stop()
    speed_after = host_speed_ms(torch)
    result.update(step_ms=step_ms, steps=steps, roots=roots, note=note,
                  step_thread_cpu_ms=thread_cpu_ms, step_process_cpu_ms=process_cpu_ms,
                  host_speed_ms=(speed_before + speed_after) / 2,
                  host_speed_ms_before_after=[speed_before, speed_after])
    # Per step: the stepping thread's page faults and context switches (an involuntary switch is
    # the host taking its core away), and the model's own parts (resnet18-dataloader-train: the
    # wait for each batch, and its worker processes' CPU time).
    result.update(
        step_thread_minor_faults=(thread_usage_after.ru_minflt - thread_usage.ru_minflt) / steps,
        step_thread_voluntary_switches=(
            thread_usage_after.ru_nvcsw - thread_usage.ru_nvcsw) / steps,
        step_thread_involuntary_switches=(
            thread_usage_after.ru_nivcsw - thread_usage.ru_nivcsw) / steps,
        **{part: value / steps for part, value in parts.items()})
    result.update(step_gc_ms=collections.seconds * 1e3 / steps,
                  gc_collections=collections.by_generation)
    if helpers:
        result["step_worker_processes_cpu_ms"] = helpers_cpu_ms
    if args.profile:
        profiler.__exit__(None, None, None)
        exported = time.perf_counter()
        trace = args.json + ".trace.json"
        profiler.export_chrome_trace(trace)
        kernels, kernel_ns, by_path = reference_by_path(trace)
        names = kernel_names(trace)
        os.remove(trace)
        result.update(kernels=kernels, kernel_ns=kernel_ns, by_path=by_path, kernel_names=names,
                      export_s=time.perf_counter() - exported)
    result["end"] = time.time()
    with open(args.json, "w") as out:
        json.dump(result, out)
    return 0  # a normal exit: launchwatch's report is written at exit


# ---- the driver: three processes per model, one table ------------------------------------------


def launchwatch_by_path(summary):
    by_path = {}

    def walk(nodes, prefix):
        for node in nodes:
            if node.get("kind") != "scope":
                continue
            path = prefix + node["name"]
            own = sum(c["total_ns"] for c in node.get("children", []) if c.get("kind") == "kernel")
            if own:
                by_path[path] = by_path.get(path, 0) + own
            walk(node.get("children", []), path + "/")

    walk(summary.get("scopes", []), "")
    outside = summary.get("outside_scopes") or {}
    if outside.get("total_ns"):
        by_path[""] = outside["total_ns"]
    return by_path


def module_share(by_path, roots):
    """The share of kernel time under a module (one of `roots`, at any depth) or optimizer scope."""
    marks = set(roots) | {"optimizer"}
    total = sum(by_path.values())
    inside = sum(ns for path, ns in by_path.items() if marks & set(path.split("/")))
    return inside / total if total else 0.0


class Stopped(BaseException):
    """SIGTERM reached the table (a `timeout` around it): it stops and prints what it has. Not
    an Exception, so the per-model and per-variant `except Exception` let it through."""


def stop_on_sigterm():
    def stop(signum, frame):
        raise Stopped()

    signal.signal(signal.SIGTERM, stop)


def timed(command, environment, timeout):
    """Runs `command` in a process group of its own; returns (its result, its wall, the time it
    ended). Past `timeout` seconds the group gets SIGTERM (launchwatch run passes it on and
    writes its report), then SIGKILL 10 s later, and this raises saying so."""
    start = time.monotonic()
    process = subprocess.Popen(command, env=environment, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except Stopped:  # the table itself was told to stop: its process goes with it
        os.killpg(process.pid, signal.SIGKILL)
        raise
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            stdout, stderr = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
        raise RuntimeError(f"{' '.join(command[:6])}... ran past --timeout {timeout} s:\n"
                           f"{stdout[-1500:]}\n{stderr[-3000:]}")
    wall = time.monotonic() - start
    done = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:6])}... exited {done.returncode}:\n"
                           f"{done.stdout[-1500:]}\n{done.stderr[-3000:]}")
    return done, wall, time.time()


def kernel_counts(summary):
    """{kernel name: [launches, timed launches]} over every scope of launchwatch's summary.json
    (and outside any scope)."""
    counts = {}

    def walk(node):
        if node.get("kind") == "kernel":
            entry = counts.setdefault(node["name"], [0, 0])
            entry[0] += node.get("launches", 0)
            entry[1] += node.get("timed_launches", 0)
        for child in node.get("children", []):
            walk(child)

    for node in summary.get("scopes", []):
        walk(node)
    walk(summary.get("outside_scopes") or {})
    return counts


def base_name(name):
    """A kernel's name without its template arguments and parameters, for names the two tools
    write differently (demangling)."""
    return name.split("(")[0].split("<")[0].strip()


def kernel_diff(summary, profiled_names, csv_file, counter_names=None):
    """Writes each kernel name's count, launchwatch (launches, timed) against the profiler (and,
    given `counter_names`, the CUPTI-only counter of --counter), to `csv_file`, largest difference
    first; returns the top rows (exact names) and the number of names on which launchwatch and the
    profiler differ, exactly and by base name."""
    ours = kernel_counts(summary)
    counted = counter_names or {}
    rows = []
    for name in set(ours) | set(profiled_names) | set(counted):
        launches, timed_launches = ours.get(name, (0, 0))
        rows.append((name, launches, timed_launches, profiled_names.get(name, 0)))
    rows.sort(key=lambda r: (-abs(r[1] - r[3]), r[0]))
    with open(csv_file, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["kernel", "launchwatch launches", "launchwatch timed", "profiler",
                         "launchwatch - profiler"] + (["CUPTI alone"] if counter_names else []))
        for name, launches, timed_launches, theirs in rows:
            writer.writerow([name, launches, timed_launches, theirs, launches - theirs] +
                            ([counted.get(name, 0)] if counter_names else []))
    by_base = {}
    for name, launches, _, theirs in rows:
        entry = by_base.setdefault(base_name(name), [0, 0])
        entry[0] += launches
        entry[1] += theirs
    differing = sum(1 for r in rows if r[1] != r[3])
    differing_base = sum(1 for a, b in by_base.values() if a != b)
    return [r for r in rows if r[1] != r[3]][:15], differing, differing_base


# The extra processes of --variants: (key, what the table calls it, launchwatch run's options or
# None for a process no tool watches, or COUNTER_ONLY for one that --counter's injection watches,
# the worker's --sink).
COUNTER_ONLY = "counter only"
VARIANTS = [
    ("hooks_noop", "hooks, no-op sink, no tool", None, "noop"),
    ("off_untimed", "run --torch off --timing none", ["--torch", "off", "--timing", "none"], None),
    ("off", "run --torch off", ["--torch", "off"], None),
    ("modules_untimed", "run --torch modules --timing none",
     ["--torch", "modules", "--timing", "none"], None),
    ("modules_ctypes", "run --torch modules, C API through ctypes", ["--torch", "modules"],
     "ctypes"),
    ("modules_python_hooks", "run --torch modules, Python hooks", ["--torch", "modules"],
     "python-hooks"),
    ("modules_windows", "run --torch modules --timing windows:20/80",
     ["--torch", "modules", "--timing", "windows:20/80"], None),
    # The floor every CUPTI-based timing pays: kernel records through --counter's injection, with
    # nothing of launchwatch in the process (run only with --counter).
    ("cupti_records", "CUPTI's kernel records alone, no launchwatch", COUNTER_ONLY, None),
]


def out_of_budget(args):
    """Whether --budget's seconds since the table started are spent (nothing more is started)."""
    return args.budget is not None and time.monotonic() - args.started > args.budget


# With --variant-rounds above 1, each round also runs these, so every variant has a plain process
# and the table's own configuration in the same round to be paired with.
ROUND_VARIANTS = [
    ("plain", "plain", None, None),
    ("modules", "run --torch modules", ["--torch", "modules"], None),
]


def run_variants(model, args, me, folder, steps):
    """The step wall of each of VARIANTS for `model` into `steps` ({key: {"step_ms": median,
    "rounds": [step ms of each round]}}), also in variants.json. With --variant-rounds N above 1,
    N rounds, each running every variant and ROUND_VARIANTS once, in an order rotated by one each
    round, so drifts of the machine fall on every variant alike."""
    rounds = max(1, args.variant_rounds)
    variants = VARIANTS + (ROUND_VARIANTS if rounds > 1 else [])
    for round_index in range(rounds):
        shift = round_index % len(variants)
        for key, _, options, sink in variants[shift:] + variants[:shift]:
            entry = steps.setdefault(key, {"rounds": []})
            if out_of_budget(args):
                entry.setdefault("error", "not run: --budget spent")
                continue
            result_json = os.path.join(folder, f"variant-{key}.json")
            command = me + ["--json", result_json] + (["--sink", sink] if sink else [])
            environment = dict(os.environ)
            if options is COUNTER_ONLY:
                if not args.counter:
                    entry.setdefault("error", "not run: needs --counter")
                    continue
                environment.update(CUDA_INJECTION64_PATH=args.counter, KERNEL_COUNTER_WHOLE="1",
                                   KERNEL_COUNTER_OUT=os.path.join(folder, f"counter-{key}.json"))
            elif options is not None:
                command = ([args.launchwatch, "run", *options, "--out",
                            os.path.join(folder, f"run-{key}"), "--"] + command)
            try:
                timed(command, environment, args.timeout)
                with open(result_json) as f:
                    measured = json.load(f)
                entry["rounds"].append(measured["step_ms"])
                entry["sink"] = measured.get("sink")
            except Exception as failure:  # one variant's failure keeps the others
                entry.setdefault("error", f"{type(failure).__name__}: {failure}"[:2000])
    for entry in steps.values():
        if entry["rounds"]:
            entry.pop("error", None)
            entry["step_ms"] = statistics.median(entry["rounds"])
    with open(os.path.join(folder, "variants.json"), "w") as f:
        json.dump(steps, f, indent=1)


def run_blocks(model, args, me, folder):
    """--blocks: launchwatch's own share of the step inside one process, in --variant-rounds
    rounds of two processes each, in turn: `launchwatch run --torch modules --capture-range
    cuda-profiler-api` with the worker timing its steps in watched and unwatched blocks
    (watched_blocks), the unwatched blocks without the module hooks (launchwatch's whole share)
    and with them (the launches' attribution and timing alone). Returns {"out": ..., "stay": ...},
    each {"rounds": [each process's paired median ratio], "processes": [each process's result]}."""
    kinds = {"out": {"rounds": [], "processes": []}, "stay": {"rounds": [], "processes": []}}
    for round_index in range(max(1, args.variant_rounds)):
        for kind in (("out", "stay") if round_index % 2 == 0 else ("stay", "out")):
            out = kinds[kind]
            if out_of_budget(args):
                out.setdefault("error", "not run: --budget spent")
                continue
            result_json = os.path.join(folder, f"blocks-{kind}-{round_index}.json")
            timing = ["--timing", args.blocks_timing] if args.blocks_timing else []
            command = ([args.launchwatch, "run", "--torch", "modules"] + timing +
                       ["--capture-range", "cuda-profiler-api", "--out",
                        os.path.join(folder, f"run-blocks-{kind}-{round_index}"), "--"] + me +
                       ["--blocks", str(args.blocks), "--json", result_json] +
                       (["--blocks-hooks-stay"] if kind == "stay" else []))
            try:
                timed(command, dict(os.environ), args.timeout)
                with open(result_json) as f:
                    measured = json.load(f)
                out["rounds"].append(measured["watched_over_unwatched"])
                out["processes"].append({k: measured[k] for k in (
                    "watched_ms", "unwatched_ms", "watched_over_unwatched",
                    "watched_over_unwatched_range", "block_steps", "block_pairs", "step_ms")})
            except Exception as failure:  # the other rows stand
                out.setdefault("error", f"{type(failure).__name__}: {failure}"[:2000])
    return kinds


def print_blocks(results, args):
    """The --blocks rows: two per model (unwatched blocks without the module hooks, and with
    them), each process's ratio of watched to unwatched blocks."""
    rows = [(m, r["blocks"]) for m, r in results.items() if "blocks" in r]
    if not rows:
        return
    print("\n# launchwatch's own share inside one process: watched / unwatched blocks of steps\n")
    print("| model | unwatched blocks | watched / unwatched, median of processes | each process: "
          "watched ms / unwatched ms (ratio [range over block pairs]) |")
    print("| --- | --- | --- | --- |")
    labels = {"out": "hooks out (launchwatch's whole share)",
              "stay": "hooks kept (the launches' attribution and timing alone)"}
    if args.blocks_timing:
        labels = {kind: f"{label}, --timing {args.blocks_timing}" for kind, label in labels.items()}
    for model, kinds in rows:
        for kind, label in labels.items():
            b = kinds[kind]
            if not b["rounds"]:
                print(f"| {model} | {label} | failed: "
                      f"{b.get('error', '?').splitlines()[0][:80]} | |")
                continue
            each = "; ".join(
                f"{p['watched_ms']:.2f} / {p['unwatched_ms']:.2f} "
                f"({p['watched_over_unwatched']:.3f}x [{p['watched_over_unwatched_range'][0]:.3f}-"
                f"{p['watched_over_unwatched_range'][1]:.3f}])" for p in b["processes"])
            print(f"| {model} | {label} | {statistics.median(b['rounds']):.3f}x | {each} |")
    print("\nUnder `launchwatch run --torch modules --capture-range cuda-profiler-api`; unwatched "
          "blocks run after cudaProfilerStop, so each launch pays CUPTI's callback and kernel "
          "record and a counter (the floor any CUPTI-timed tool pays), and the optimizer's and "
          "backward()'s one scope a step stay; with the hooks out they also run with the module "
          "hooks out of torch's registries. The ratio is launchwatch's share over that floor, "
          "paired block by block in one process: whole with the hooks out, the launches' "
          "attribution and timing alone with them kept (the hooks' share is the ratio of the "
          "two).")


def compare(model, args, package):
    folder = os.path.join(args.out, model)
    os.makedirs(folder, exist_ok=True)
    me = [sys.executable, os.path.abspath(__file__), "--worker", model, "--python-package", package,
          "--device", args.device] + (["--steps", str(args.steps)] if args.steps else [])
    plain_env = dict(os.environ)
    out = {}
    _, out["plain_wall"], _ = timed(me + ["--json", os.path.join(folder, "plain.json")], plain_env,
                                    args.timeout)
    done, out["lw_wall"], lw_exit = timed(
        [args.launchwatch, "run", "--torch", "modules", "--out", os.path.join(folder, "run"), "--"]
        + me + ["--json", os.path.join(folder, "launchwatch.json")], plain_env, args.timeout)
    out["lw_stdout"] = done.stdout
    profiled_json = os.path.join(folder, "profiler.json")
    _, out["pf_wall"], _ = timed(me + ["--profile", "--json", profiled_json],
                                 plain_env, args.timeout)
    with open(os.path.join(folder, "plain.json")) as f:
        plain = json.load(f)
    with open(os.path.join(folder, "launchwatch.json")) as f:
        watched = json.load(f)
    with open(os.path.join(folder, "profiler.json")) as f:
        profiled = json.load(f)
    with open(os.path.join(folder, "run", "summary.json")) as f:
        summary = json.load(f)
    ours = launchwatch_by_path(summary)
    theirs = profiled["by_path"]
    top = sorted((p for p in ours if p), key=lambda p: -ours[p])[:10]
    worst = max((abs(ours[p] - theirs.get(p, 0)) / ours[p] for p in top), default=float("nan"))
    captured = summary.get("captured_launches", 0)
    dry_run = summary.get("dry_run_launches", 0)
    counter_names = None
    if args.counter:
        # A fourth process, plain but for a CUPTI injection with nothing of launchwatch in it that
        # counts every kernel record of the process (bench/runtimes/kernel_counter.cpp).
        counter_json = os.path.join(folder, "counter.json")
        counter_env = dict(os.environ, CUDA_INJECTION64_PATH=args.counter,
                           KERNEL_COUNTER_OUT=counter_json, KERNEL_COUNTER_WHOLE="1")
        try:
            timed(me + ["--json", os.path.join(folder, "counted.json")], counter_env, args.timeout)
            with open(counter_json) as f:
                counted = json.load(f)
            counter_names = {name: row[0] for name, row in counted["by_name"].items()}
            out["counter_kernels"] = counted["kernels"]
        except Exception as failure:  # the model's other rows stand
            out["counter_kernels"] = f"failed: {type(failure).__name__}: {failure}"[:300]
    diff_rows, differing, differing_base = kernel_diff(
        summary, profiled.get("kernel_names", {}), os.path.join(folder, "kernel_diff.csv"),
        counter_names)
    out.update(
        note=plain.get("note", ""), roots=plain["roots"], sink=watched.get("sink"),
        lw_launches=summary["launches"], lw_captured=captured, lw_dry_run=dry_run,
        lw_kernels=summary["launches"] - captured - dry_run, lw_ns=summary["kernel_ns"],
        pf_kernels=profiled["kernels"], pf_ns=profiled["kernel_ns"],
        processes=sorted({d.get("process", "") for d in summary.get("devices", [])}),
        kernel_diff=diff_rows, names_differing=differing, base_names_differing=differing_base,
        lw_share=module_share(ours, plain["roots"]), pf_share=module_share(theirs, plain["roots"]),
        top=[(p, ours[p], theirs.get(p, 0)) for p in top], worst_top10=worst,
        plain_ms=plain["step_ms"], lw_ms=watched["step_ms"], pf_ms=profiled["step_ms"],
        end_to_report=lw_exit - watched["end"], export_s=profiled.get("export_s", 0.0),
        outside=[(p, ns) for p, ns in sorted(ours.items(), key=lambda kv: -kv[1])
                 if not (set(plain["roots"]) | {"optimizer"}) & set(p.split("/"))][:3])
    if args.blocks:
        out["blocks"] = run_blocks(model, args, me, folder)
    if model in args.variants:
        out["variants"] = {}
        try:
            run_variants(model, args, me, folder, out["variants"])
        except Stopped:  # the model's rows stand; the variants not run say so
            args.stopped = True
            for key, _, _, _ in VARIANTS:
                out["variants"].setdefault(key, {"error": "stopped by SIGTERM"})
    return out


def print_details(model, r):
    print(f"\n## {model}{' (' + r['note'] + ')' if r['note'] else ''}\n")
    print("| scope (top 10 by device time, self) | launchwatch | reference | difference |")
    print("| --- | --- | --- | --- |")
    for path, ns, ref in r["top"]:
        difference = (ns - ref) / ns * 100
        print(f"| {path[-90:]} | {ns / 1e6:.3f} ms | {ref / 1e6:.3f} ms | {difference:+.1f}% |")
    if r["outside"]:
        print("\nlargest kernel time outside module and optimizer scopes: "
              + ", ".join(f"`{p or '[outside any scope]'}` {ns / 1e6:.3f} ms"
                          for p, ns in r["outside"]))
    print(f"\nlaunchwatch: {r['lw_launches']} launches, {r['lw_captured']} of them captured into "
          f"graphs and {r['lw_dry_run']} dry runs, so {r['lw_kernels']} kernels ran; the profiler "
          f"{r['pf_kernels']}. Processes in the report: {', '.join(r['processes']) or '-'}. "
          f"The hooks' C API: {r['sink']}.")
    if "counter_kernels" in r:
        print(f"\nCUPTI alone (kernel_counter.cpp, another process, nothing of launchwatch): "
              f"{r['counter_kernels']} kernels; its count per name is kernel_diff.csv's last column.")
    if r["kernel_diff"]:
        print(f"\nKernel names counted differently: {r['names_differing']} "
              f"({r['base_names_differing']} without template arguments and parameters); "
              "the largest (all in kernel_diff.csv):\n")
        print("| kernel | launchwatch launches (timed) | profiler |")
        print("| --- | --- | --- |")
        for name, launches, timed_launches, theirs in r["kernel_diff"]:
            print(f"| `{name[:110]}` | {launches} ({timed_launches}) | {theirs} |")
    else:
        print("\nEvery kernel name is counted the same by both.")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launchwatch")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--counter", help="liblaunchwatch_kernel_counter.so: also count each "
                        "model's kernels by CUPTI alone, in a process of their own")
    parser.add_argument("--out", default="launchwatch-modules-table")
    parser.add_argument("--python-package", help="the folder holding the launchwatch package "
                        "(default: the build tree's, beside --launchwatch)")
    parser.add_argument("--timeout", type=int, default=240, help="seconds per process")
    parser.add_argument("--variant-rounds", type=int, default=1,
                        help="rounds of the --variants processes, each with a plain process and "
                             "the table's configuration of its own, in rotated order; the split "
                             "table then pairs each with its round's plain process")
    parser.add_argument("--variants", default="",
                        help="models (comma-separated) whose step wall is also measured with the "
                        "hooks alone, the bridge alone, without timing and through ctypes")
    parser.add_argument("--budget", type=int, help="seconds: start no model or variant after "
                        "this long (the tables then have what was done)")
    parser.add_argument("--sink", choices=["noop", "ctypes", "python-hooks"],
                        help=argparse.SUPPRESS)
    parser.add_argument("--device", default="cuda", help="cpu: the script's smoke test on a "
                        "machine without CUDA (--models tiny-train; no kernels, so counts are 0)")
    parser.add_argument("--steps", type=int, help="measured steps of every model (default: each "
                        "model's own, 20 for most: a host-bound step of a few ms wants a few "
                        "hundred for its ratios to settle)")
    parser.add_argument("--blocks", type=int, help="for each model, also --variant-rounds "
                        "processes under run --capture-range cuda-profiler-api whose steps are "
                        "timed in blocks of N, watched and unwatched in turn: launchwatch's own "
                        "share inside one process (watched_blocks), with the unwatched blocks "
                        "without the module hooks and, in a second process each round, with "
                        "them; in the worker, that timing (--blocks-hooks-stay: the hooks kept)")
    parser.add_argument("--blocks-hooks-stay", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--blocks-timing", help="--blocks' processes run with `launchwatch run "
                        "--timing` this (default: run's own): with `none` beside a run with the "
                        "default, the launches' timing's share is the ratio of the two")
    parser.add_argument("--probe", help=argparse.SUPPRESS,
                        choices=["dynamo-import", "call-wrapper", "call-wrapper-dynamo"])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--json", help=argparse.SUPPRESS)
    parser.add_argument("--profile", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    args.variants = [m for m in args.variants.split(",") if m]
    if not args.launchwatch:
        parser.error("--launchwatch PATH (the launchwatch program) is needed")
    launchwatch = os.path.abspath(args.launchwatch)
    args.launchwatch = launchwatch
    build_tree = os.path.dirname(os.path.dirname(os.path.dirname(launchwatch)))
    package = args.python_package or os.path.join(build_tree, "python")
    if not os.path.isfile(os.path.join(package, "launchwatch", "__init__.py")):
        prefix = os.path.dirname(os.path.dirname(launchwatch))
        package = os.path.join(prefix, "share", "launchwatch", "python")
    os.makedirs(args.out, exist_ok=True)
    results = {}
    started = args.started = time.monotonic()
    args.stopped = False
    stop_on_sigterm()
    for model in args.models.split(","):
        t = time.monotonic()
        if out_of_budget(args):
            results[model] = {"error": "not run: --budget spent"}
            print(f"\n## {model}: not run, --budget {args.budget} s spent")
            continue
        try:
            results[model] = compare(model, args, package)
            print_details(model, results[model])
            if args.stopped:
                print(f"\n## {model}: its variants stopped by SIGTERM", flush=True)
                break
        except Stopped:
            results[model] = {"error": "stopped by SIGTERM (a timeout around the table)"}
            print(f"\n## {model}: stopped by SIGTERM", flush=True)
            break
        except Exception as failure:  # one model's failure keeps the others' rows
            results[model] = {"error": f"{type(failure).__name__}: {failure}"}
            print(f"\n## {model}: failed\n\n```\n{traceback.format_exc()[-3000:]}\n```")
        print(f"\n({model}: {time.monotonic() - t:.0f} s)", flush=True)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1, default=str)
    print(f"\n# launchwatch run --torch modules vs torch.profiler, "
          f"{time.monotonic() - started:.0f} s in all\n")
    print("| model | kernels lw / profiler | kernel time lw / profiler | in module or optimizer "
          "scopes lw / reference | top-10 scopes vs reference, worst | step ms plain / lw / "
          "profiler (lw x, profiler x) | process s plain / lw / profiler | end to report |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for model, r in results.items():
        if "error" in r:
            print(f"| {model} | failed: {r['error'].splitlines()[0][:120]} | | | | | | |")
            continue
        cells = [
            model,
            f"{r['lw_kernels']} / {r['pf_kernels']}"
            + (f" ({r['lw_captured']} captured)" if r["lw_captured"] else ""),
            f"{r['lw_ns'] / 1e6:.1f} / {r['pf_ns'] / 1e6:.1f} ms "
            f"({r['lw_ns'] / max(r['pf_ns'], 1):.3f})",
            f"{r['lw_share'] * 100:.2f}% / {r['pf_share'] * 100:.2f}%",
            f"{r['worst_top10'] * 100:.1f}%",
            f"{r['plain_ms']:.2f} / {r['lw_ms']:.2f} / {r['pf_ms']:.2f} "
            f"({r['lw_ms'] / r['plain_ms']:.3f}x, {r['pf_ms'] / r['plain_ms']:.3f}x)",
            f"{r['plain_wall']:.1f} / {r['lw_wall']:.1f} / {r['pf_wall']:.1f}",
            f"{r['end_to_report']:.2f} s",
        ]
        print("| " + " | ".join(cells) + " |")
    print("\nThe profiler's process runs the same hooks, recording record_function ranges (the "
          "reference); its step time includes them. Kernels: those that ran (launchwatch's "
          "launches less those captured into graphs).")
    print_variants(results)
    print_blocks(results, args)
    return 0


def print_variants(results):
    """The step-wall split of the models run with --variants: one row per model."""
    rows = [(m, r) for m, r in results.items() if "variants" in r]
    if not rows:
        return
    paired = any(len(r["variants"].get("plain", {}).get("rounds", [])) > 1 for _, r in rows)
    if paired:
        print("\n# Where launchwatch's step time goes: step ms, median of rounds (x plain: the median "
              "of each round's ratio to that round's plain process [lowest-highest])\n")
    else:
        print("\n# Where launchwatch's step time goes: step ms (x plain), one process each\n")
    columns = [("plain", None)] + [(label, key) for key, label, _, _ in VARIANTS[:4]] + [
        ("run --torch modules (the table's)", "lw"), (VARIANTS[4][1], VARIANTS[4][0]),
        (VARIANTS[5][1], VARIANTS[5][0]), ("torch.profiler with the hooks", "pf"),
        (VARIANTS[6][1], VARIANTS[6][0]), (VARIANTS[7][1], VARIANTS[7][0])]
    print("| model | " + " | ".join(label for label, _ in columns) + " |")
    print("|" + " --- |" * (len(columns) + 1))
    for model, r in rows:
        plain = r["variants"].get("plain", {}).get("step_ms", r["plain_ms"])
        cells = [model]
        for _, key in columns:
            if key is None:
                cells.append(f"{plain:.2f}")
                continue
            if key == "lw" and "modules" in r["variants"]:
                key = "modules"  # the table's configuration, measured in every round
            if key in ("lw", "pf"):
                ms = r[f"{key}_ms"]
            else:
                measured = r["variants"][key]
                if "error" in measured:
                    cells.append("failed: " + measured["error"].splitlines()[0][:60])
                    continue
                ms = measured["step_ms"]
            plains = r["variants"].get("plain", {}).get("rounds", [])
            mine = r["variants"].get(key, {}).get("rounds", []) if key != "pf" else []
            if len(plains) > 1 and len(mine) == len(plains):
                ratios = [m / p for m, p in zip(mine, plains)]
                cells.append(f"{ms:.2f} ({statistics.median(ratios):.3f}x [{min(ratios):.3f}-{max(ratios):.3f}])")
            else:
                cells.append(f"{ms:.2f} ({ms / plain:.3f}x)")
        print("| " + " | ".join(cells) + " |")
    print("\nhooks, no-op sink: the hooks (the wrapped Module.__call__ and the graph-node "
          "hooks), no tool. --timing none: kernels counted, not timed (CUPTI's launch callbacks "
          "only). Their differences split launchwatch's extra step time into the bridge's, the "
          "timing's and the hooks'. "
          "CUPTI's kernel records alone: the floor of any tool that times kernels through CUPTI "
          "(--counter's injection, nothing of launchwatch).")


if __name__ == "__main__":
    sys.exit(main())
