#!/usr/bin/env python3
"""What launchwatch's torch hooks cost per module call, on the CPU: the same model timed plain (no
hooks), with the hooks and a sink that records nothing (the hooks' own Python), and under
`launchwatch run` (the hooks and the injection's C API, through ctypes and through the package's C
extension launchwatch._c_api), side by side.

    bench/torch/hook_cost.py --launchwatch build/cpu/apps/launchwatch/launchwatch

Models: 200 nn.Identity modules in a Sequential (nothing but the module call: the hooks' cost per
call), 50 nn.Linear(64, 64) + ReLU on a batch of 32, forward and backward (a small real step), and
a host-bound ResNet-like stack, 30 x (Conv2d(8, 8, 3) + BatchNorm2d + ReLU) in Sequentials on one
8x4x4 image, a training step (forward and backward) and inference under no_grad. Configurations:
plain, the hooks with a Python sink that records nothing (their Python alone), the hooks with a
sink of no-op C functions through ctypes (libc's, argtypes set as the injection's are: the hooks
and the ctypes calls, without launchwatch's C++), and under `launchwatch run` (everything) twice:
the C API through ctypes (the fallback) and through the C extension (what `run` uses where it
loads). The hooks are the C ones (the package's extension, _c_hooks.c), and for a before-and-after
in one run the Python ones (the fallback) too with the Python no-op sink and under `launchwatch
run` through the extension. Also the C API's own cost (a push and a pop_to) each way and
launchwatch.scope with no tool. Times are the thread's CPU time (a shared machine's descheduling
left out), best of 7 repeats in a process and of `--rounds` processes per configuration, run in
turn. Prints one markdown table for docs/benchmarks.md. Internally the same file measures one
configuration: `hook_cost.py --measure plain|noop|ctypes|run-ctypes|run [--hooks c|python]`.
`--package DIR` measures another copy of the Python package (an earlier commit's).

`--split ROUNDS` instead splits the ResNet-like stack's step in one process under `launchwatch run`,
the configurations taken in turn each round (a shared machine's load falls on all alike): plain,
torch's slow path for comparison (two empty global hooks, the design before the wrapper), the
wrapped Module.__call__ around empty hooks, the forward ranges, then the graph-node hooks for
backward (the hooks whole, recording nothing), each for the Python hooks and the C hooks (for the
C ones also torch's part of the graph-node hooks alone: registered and called, returning at
once), then (the C hooks) the C API through the extension and through ctypes.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import timeit


def best_ns(fn, number, repeat=7):
    # The calling thread's CPU time, not wall time: the development machine is shared, and time
    # this thread spends descheduled is not the hooks' cost (the model runs on this one thread).
    times = timeit.repeat(fn, number=number, repeat=repeat, timer=time.thread_time)
    return min(times) / number * 1e9


def c_no_op_sink():
    """A sink whose members are C functions that do nothing launchwatch does (libc's strlen, abs,
    getpid), typed as the injection's C API is: what the ctypes calls themselves cost."""
    import ctypes
    import ctypes.util

    libc = ctypes.CDLL(ctypes.util.find_library("c"))

    class CNoOp:
        active = True

    sink = CNoOp()
    sink.push = libc.strlen
    sink.push.argtypes, sink.push.restype = [ctypes.c_char_p], ctypes.c_int
    sink.push_under = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint32, ctypes.c_char_p)(
        ("abs", libc))
    sink.pop_to = libc.abs
    sink.pop_to.argtypes, sink.pop_to.restype = [ctypes.c_int], ctypes.c_int
    sink.current_path = libc.getpid
    sink.current_path.argtypes, sink.current_path.restype = [], ctypes.c_uint32
    return sink


def measure(mode, via):
    import torch
    from torch import nn

    torch.set_num_threads(1)
    import launchwatch
    from launchwatch import _sink
    import launchwatch.torch as hooks

    hooks._use_hooks(via)  # before install(): the hooks it registers are these

    if mode in ("noop", "ctypes"):
        class ActiveNothing(_sink.NullSink):
            active = True

        _sink.set_sink(ActiveNothing() if mode == "noop" else c_no_op_sink())
        hooks.install("modules")
    sink = _sink.get()
    if mode.startswith("run"):
        if not sink.active:
            sys.exit(f"hook_cost: --measure {mode} outside launchwatch run (no injection)")
        if mode == "run-ctypes":
            import ctypes

            sink = _sink.InjectionSink(ctypes.CDLL(os.environ["NVTX_INJECTION64_PATH"]))
            _sink.set_sink(sink)
        elif sink.via != "extension":
            sys.exit("hook_cost: --measure run: launchwatch._c_api did not load (built? "
                     f"a Python >= 3.10?); the sink is {sink.via}")
    identities = nn.Sequential(*[nn.Identity() for _ in range(200)])
    x = torch.zeros(1)
    with torch.no_grad():
        forward_ns = best_ns(lambda: identities(x), number=50) / 201  # the Sequential itself too
    linears = nn.Sequential(*[m for _ in range(50) for m in (nn.Linear(64, 64), nn.ReLU())])
    batch = torch.randn(32, 64)

    def train_step():
        linears(batch).sum().backward()

    step_us = best_ns(train_step, number=5) / 1e3
    conv_train, conv_infer = conv_stack()
    result = {"mode": mode, "hooks": hooks._hooks.via, "identity_call_ns": forward_ns,
              "linear_step_us": step_us, "modules_per_step": 101, "conv_train_us": best_ns(conv_train, number=10) / 1e3,
              "conv_infer_us": best_ns(conv_infer, number=10) / 1e3}
    result["scope_ns"] = best_ns(lambda: launchwatch.scope("x").__enter__().__exit__(),
                                 number=20000)
    if mode.startswith("run"):
        def push_pop():
            sink.pop_to(sink.push(b"x"))

        result["c_api_push_pop_ns"] = best_ns(push_pop, number=20000)
    print(json.dumps(result))
    return 0


def conv_stack():
    """The host-bound ResNet-like stack of the table, and its training and inference steps."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    stack = nn.Sequential(*[nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8),
                                          nn.ReLU(inplace=True)) for _ in range(30)])
    image = torch.randn(1, 8, 4, 4)

    def train():
        stack(image).sum().backward()

    def infer():
        with torch.no_grad():
            stack(image)

    return train, infer


def split(rounds):
    """Where the hooks' time goes, in one process: the conv stack's steps with the hooks' parts
    switched on one at a time (no tool: a sink that records nothing), the configurations taken in
    turn each round, so a shared machine's load falls on all alike. Prints each one's median and
    best step, and what each part adds to both."""
    import torch

    torch.set_num_threads(1)
    from launchwatch import _sink
    import launchwatch.torch as hooks

    class ActiveNothing(_sink.NullSink):
        active = True

    injection = _sink.get()  # under launchwatch run: the C extension's sink, else none
    nothing = ActiveNothing()
    _sink.set_sink(nothing)
    hooks.install("modules")
    sinks = {"hooks": nothing}
    if injection.active:
        import ctypes

        sinks["extension"] = injection
        sinks["ctypes"] = _sink.InjectionSink(ctypes.CDLL(os.environ["NVTX_INJECTION64_PATH"]))
    torch_call, watching_call = hooks._module_call
    hook_graph = hooks._hook_graph
    c_api = sys.modules.get("launchwatch._c_api") if hooks._c_hooks else None

    def c_setup(grad_enabled):
        """The C hooks' state; with grad_enabled False they hook no graph node (forward only)."""
        routes = {}  # the node hooks' direct route, where the package has one (since 2026-12-04)
        if hasattr(hooks, "_direct_route"):
            routes = {"new_carrier": hooks._new_carrier, "direct_route": hooks._direct_route}
        c_api.hooks_setup(
            sink_module=_sink, thread=hooks._thread, states=hooks._states, passes=hooks._passes,
            new_state=hooks._new_module_state, close_forward=hooks._close_forward,
            input_nodes=hooks._input_nodes, graph_nodes=hooks._graph_nodes,
            queue_end_of_pass=hooks._queue_end_of_pass, grad_enabled=grad_enabled,
            tensor=torch.Tensor, compiling=hooks._dynamo_check, **routes)

    def empty_pre(module, args):
        return None

    def empty_post(module, args, result):
        return None

    empty_hooks = hooks._Implementation("empty", empty_pre, empty_post, None)
    global_hooks = []
    scoped_backward = torch.autograd.backward

    def configure(name):
        # nodes-c: backward() unwrapped, so no pass runs and each graph node's hook returns at
        # once: what torch's part (registering the hooks, the engine calling them) costs.
        torch.autograd.backward = (scoped_backward.__wrapped__ if name == "nodes-c"
                                   else scoped_backward)
        while global_hooks:
            global_hooks.pop().remove()
        _sink.set_sink(_sink.NullSink() if name in ("plain", "global", "wrapper")
                       else sinks.get(name, nothing))
        torch.nn.Module.__call__ = torch_call if name in ("plain", "global") else watching_call
        if name == "plain":
            return
        if name == "global":  # the design before the wrapper: torch's slow path, every call
            registries = torch.nn.modules.module
            global_hooks.append(registries.register_module_forward_pre_hook(empty_pre))
            global_hooks.append(registries.register_module_forward_hook(empty_post))
            return
        c_hooks = c_api is not None and name in ("forward-c", "nodes-c", "hooks-c", "extension",
                                                 "ctypes")
        hooks._use_hooks("c" if c_hooks else "python")
        if name == "wrapper":
            hooks._hooks = empty_hooks
        hooks._hook_graph = (lambda *args: None) if name == "forward" else hook_graph
        if c_api is not None:
            c_setup((lambda: False) if name == "forward-c" else torch.is_grad_enabled)

    # Each configuration and the one its "added" column is against.
    against = {"plain": None, "global": "plain", "wrapper": "plain", "forward": "wrapper",
               "hooks": "forward"}
    if c_api is not None:
        against.update({"forward-c": "wrapper", "nodes-c": "forward-c", "hooks-c": "nodes-c"})
        against.update({name: "hooks-c" for name in sinks if name != "hooks"})
    names = tuple(against)
    what = {"plain": "plain (no hooks)",
            "global": "torch's slow path: two empty global module hooks (not launchwatch's: "
                      "what the wrapper avoids)",
            "wrapper": "the wrapped Module.__call__ around two empty hooks",
            "forward": "+ the forward ranges, Python hooks (no graph-node hooks)",
            "hooks": "+ the graph-node hooks for backward (the Python hooks whole; no tool)",
            "forward-c": "the forward ranges, C hooks (against the empty wrapper)",
            "nodes-c": "+ the graph nodes' hooks registered and called, returning at once (torch's "
                       "part: no backward scope)",
            "hooks-c": "+ the graph-node hooks' work and the backward scope (the C hooks whole; "
                       "no tool)",
            "extension": "+ launchwatch: the C API through the C extension (C hooks)",
            "ctypes": "the same through ctypes instead (against the C hooks, no tool)"}
    train, infer = conv_stack()
    print("| 30 x (Conv2d 8 + BatchNorm2d + ReLU), 8x4x4, one process | training step, median "
          "/ best | added | inference step, median / best | added |")
    print("| --- | --- | --- | --- | --- |")
    rows = {}
    for step in (train, infer):
        samples = {name: [] for name in names}
        for _ in range(rounds):
            for name in names:
                configure(name)
                step()  # once untimed: the configuration's first call builds its caches
                start = time.thread_time()  # CPU time: descheduling left out
                step()
                samples[name].append(time.thread_time() - start)
        for name in names:
            ordered = sorted(samples[name])
            rows.setdefault(name, []).append((ordered[len(ordered) // 2] * 1e6, ordered[0] * 1e6))
    configure("hooks")
    for name in names:
        base = rows[against[name]] if against[name] else None
        cells = []
        for index, (median, best) in enumerate(rows[name]):
            added = "" if base is None else (f"{median - base[index][0]:+.0f} / "
                                             f"{best - base[index][1]:+.0f} us")
            cells += [f"{median:.0f} / {best:.0f} us", added]
        print(f"| {what[name]} | " + " | ".join(cells) + " |")
    if c_api is not None:
        _sink.set_sink(sinks.get("extension", nothing))
        pieces(hooks)
    return 0


def pieces(hooks):
    """The hooks' pieces per call, each implementation's side by side, with the process's sink
    (under launchwatch run: the extension's): a module call's forward hooks (the call itself
    left out), a graph node's hook closing one module's backward range and opening another's,
    and torch's own part of a graph node's hook (registering it, the engine calling it)."""
    import threading

    import torch
    from torch import nn

    module, args = nn.Identity(), (torch.zeros(1),)
    rows = {}
    hooks._passes.append((0, 0, threading.get_ident()))  # as inside a backward() on this thread
    saved = (hooks._thread.backward, hooks._thread.generation, hooks._thread.callback_queued)
    hooks._thread.generation = hooks._thread.callback_queued = 0
    try:
        for via in ("python", "c"):
            implementation = hooks._python_hooks if via == "python" else hooks._c_hooks
            pre, post = implementation.pre, implementation.post

            def forward():
                pre(module, args)
                post(module, args, args[0])

            with torch.no_grad():
                rows.setdefault("forward", []).append(best_ns(forward, number=20000))
            first, second = implementation.node_hook(), implementation.node_hook()
            first.entries.append((True, ((b"Net", b"a"),)))
            second.entries.append((True, ((b"Net", b"b"),)))
            hooks._thread.backward = []

            def nodes():
                first(None)
                second(None)

            rows.setdefault("node", []).append(best_ns(nodes, number=20000) / 2)
            hooks._close_backward_to(0)
    finally:
        hooks._passes.pop()
        (hooks._thread.backward, hooks._thread.generation,
         hooks._thread.callback_queued) = saved
    leaf = torch.zeros(1, requires_grad=True)
    nothing = set().discard  # a C callable taking the gradients and returning None

    def registered():
        (leaf * 2).grad_fn.register_prehook(nothing)

    def unregistered():
        leaf * 2

    def added_directly():  # launchwatch's own route (torch.py's _add_node_hook), where it has one
        hooks._add_node_hook((leaf * 2).grad_fn, nothing)

    def chain(hooked, length=50):
        def run():
            out = leaf
            for _ in range(length):
                out = out * 2
                if hooked:
                    out.grad_fn.register_prehook(nothing)
            torch.autograd.backward.__wrapped__(out)  # no backward scope: torch's part only
        return run

    unhooked = best_ns(unregistered, number=5000)
    register = best_ns(registered, number=5000) - unhooked
    direct = (best_ns(added_directly, number=5000) - unhooked
              if hasattr(hooks, "_add_node_hook") else None)
    call = (best_ns(chain(True), number=100) - best_ns(chain(False), number=100)) / 50 - register
    kind = getattr(_sink_of(hooks), "via", None) or "a Python sink recording nothing"
    print(f"| per call, best of 7, sink: {kind} | Python hooks | C hooks |")
    print("| --- | --- | --- |")
    print("| a module call's forward pre and post hooks (the call itself left out) | "
          + " | ".join(f"{ns:.0f} ns" for ns in rows["forward"]) + " |")
    print("| a graph node's hook: one module's backward range closed, the next one's opened | "
          + " | ".join(f"{ns:.0f} ns" for ns in rows["node"]) + " |")
    print(f"| torch's part of a graph node's hook: register_prehook | {register:.0f} ns | |")
    if direct is not None:
        print(f"| the same added by launchwatch's direct route (_add_node_hook, Python) "
              f"| {direct:.0f} ns | |")
    print(f"| torch's part of a graph node's hook: the engine calling it (a C no-op) "
          f"| {call:.0f} ns | |")


def _sink_of(hooks):
    from launchwatch import _sink

    return _sink.get()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launchwatch")
    parser.add_argument("--measure", choices=["plain", "noop", "ctypes", "run-ctypes", "run"],
                        help=argparse.SUPPRESS)
    parser.add_argument("--hooks", choices=["c", "python"], default="c", help=argparse.SUPPRESS)
    parser.add_argument("--package", help="the Python package's folder (default: the build's)")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--rounds", type=int, default=3,
                        help="processes per configuration, in turn; each figure is the best")
    parser.add_argument("--split", type=int, metavar="ROUNDS",
                        help="instead: where the hooks' time goes, in one process under "
                        "launchwatch run, ROUNDS rounds")
    parser.add_argument("--split-here", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        return measure(args.measure, args.hooks)
    if args.split_here:
        return split(args.split_here)
    if not args.launchwatch:
        parser.error("--launchwatch PATH is needed")
    launchwatch = os.path.abspath(args.launchwatch)
    package = args.package or os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(launchwatch))), "python")
    with tempfile.TemporaryDirectory(prefix="hook-cost-") as reports:
        return compare(args, launchwatch, package, reports)


def compare(args, launchwatch, package, reports):
    """The table (or with --split, the split), `launchwatch run` writing its reports into
    `reports`."""
    if args.split:
        # Under launchwatch run (its hooks off: split installs them), so the C API is there too.
        done = subprocess.run([launchwatch, "run", "--torch", "off", "--out", reports,
                               "--", args.python, os.path.abspath(__file__), "--split-here",
                               str(args.split)],
                              env=dict(os.environ, PYTHONPATH=package), capture_output=True,
                              text=True, check=True)
        for line in done.stdout.splitlines():
            if line.startswith("| per call"):
                print()  # the pieces' table after the split's
            if line.startswith("|"):
                print(line)
        return 0
    me = [args.python, os.path.abspath(__file__), "--measure"]
    environment = dict(os.environ, PYTHONPATH=package)
    results = {}
    run = [launchwatch, "run", "--out", reports, "--"]
    for _ in range(args.rounds):
        for mode, command in (("plain", me + ["plain"]),
                              ("noop-python", me + ["noop", "--hooks", "python"]),
                              ("noop", me + ["noop"]), ("ctypes", me + ["ctypes"]),
                              ("run-ctypes", run + me + ["run-ctypes"]),
                              ("run-python", run + me + ["run", "--hooks", "python"]),
                              ("run", run + me + ["run"])):
            done = subprocess.run(command, env=environment, capture_output=True, text=True,
                                  check=True)
            line = next(line for line in done.stdout.splitlines() if line.startswith("{"))
            measured = json.loads(line)
            best = results.setdefault(mode, measured)
            for key, value in measured.items():
                if isinstance(value, float):
                    best[key] = min(best[key], value)
    modes = ("plain", "noop-python", "noop", "ctypes", "run-ctypes", "run-python", "run")

    def row(what, key, unit, digits=0):
        plain = results["plain"][key]
        cells = [f"{plain:.{digits}f} {unit}"] + [
            f"{results[m][key]:.{digits}f} {unit} ({results[m][key] / plain:.2f}x)"
            for m in modes[1:]]
        print(f"| {what} | " + " | ".join(cells) + " |")

    print("| | plain | Python hooks, Python no-op sink | C hooks, Python no-op sink "
          "| C hooks, C no-op sink (ctypes) | C hooks under launchwatch run, ctypes "
          "| Python hooks under launchwatch run, C extension "
          "| C hooks under launchwatch run, C extension |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    row("nn.Identity call", "identity_call_ns", "ns")
    per_call = [results[m]["identity_call_ns"] - results["plain"]["identity_call_ns"]
                for m in modes[1:]]
    print("| hooks' cost per module call | | " + " | ".join(f"{c:.0f} ns" for c in per_call) + " |")
    row("50 x (Linear 64 + ReLU), batch 32, forward + backward", "linear_step_us", "us")
    row("30 x (Conv2d 8 + BatchNorm2d + ReLU), 8x4x4, forward + backward", "conv_train_us", "us")
    row("the same, inference under no_grad", "conv_infer_us", "us")
    print(f"| launchwatch.scope enter + exit | {results['plain']['scope_ns']:.0f} ns (no tool) "
          f"| | | | {results['run-ctypes']['scope_ns']:.0f} ns "
          f"| | {results['run']['scope_ns']:.0f} ns |")
    print(f"| C API push + pop_to | | | | | {results['run-ctypes']['c_api_push_pop_ns']:.0f} ns "
          f"| | {results['run']['c_api_push_pop_ns']:.0f} ns |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
