#!/usr/bin/env python3
"""What the sequence route (python/launchwatch/_c_sequence.c) costs a backward launch, on the CPU
(issue 22): its resolver, and the backward ranges it opens and closes through the injection's C
API, without a GPU. Run under `launchwatch run`:

    launchwatch run --out /tmp/route -- python3 bench/torch/route_cost.py

A ResNet-18-shaped tree of modules (its 60 module calls a forward: stem, four layers of two basic
blocks, the first block of layers 2-4 with a downsample) runs one forward with gradients on a tiny
CPU input, which the route records as ranges of sequence numbers. The route's resolver is then
called as the injection calls it at each kernel launch (`_sequence_launch`), inside a backward pass,
with the running node faked by a C function (compiled here with cc: a ctypes callback would cost
more than the route) that returns a node holding each number the forward gave out, in backward
order, two launches a node. Rows, in turn each round, best of the rounds, ns per launch:

  same node      every launch in one node: the resolver's check that the node did not change
  each node      the backward's own order: a node's first launch resolves it and opens its module's
                 ranges, closing the last one's (what a ResNet-18 step's ~300 backward launches do)
  the loop alone the same calls with the route off (the fake node set, the resolver's entry)

and the forward's side: 200 nn.Identity calls, ns per module call, with gradients (the route reads
each call's sequence numbers and records it) and without, in turn.

Prints a markdown table for docs/benchmarks.md. Needs Debian's torch (1.13's sequence counter
and RecordFunction thread ids; its running node is the fake's).
"""

import ctypes
import os
import subprocess
import sys
import tempfile
import threading
import time

import torch
from torch import nn

FAKE_NODE_C = r"""
#include <stdint.h>
static _Thread_local const void* current;
const void* fake_running_node(void) { return current; }
void fake_set_node(const void* node) { current = node; }
"""


def fake_library(directory):
    source = os.path.join(directory, "fake_node.c")
    library = os.path.join(directory, "libfake_node.so")
    with open(source, "w") as f:
        f.write(FAKE_NODE_C)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", library, source], check=True)
    return ctypes.CDLL(library)


class BasicBlock(nn.Module):
    def __init__(self, channels, downsample):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.downsample = (nn.Sequential(nn.Conv2d(channels, channels, 1, bias=False),
                                         nn.BatchNorm2d(channels)) if downsample else None)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + (self.downsample(x) if self.downsample is not None else x))


class ResNet(nn.Module):
    def __init__(self, channels=4):
        super().__init__()
        self.conv1 = nn.Conv2d(3, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU()
        self.maxpool = nn.Identity()
        for i in range(1, 5):
            setattr(self, f"layer{i}", nn.Sequential(BasicBlock(channels, i > 1),
                                                     BasicBlock(channels, False)))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, 10)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        for i in range(1, 5):
            x = getattr(self, f"layer{i}")(x)
        return self.fc(torch.flatten(self.avgpool(x), 1))


def main():
    from launchwatch import _c_api, _sink
    import launchwatch.torch as lw

    if getattr(_sink.get(), "via", "") != "extension":
        sys.exit("route_cost.py: run it under `launchwatch run` (the injection's C API is needed)")
    injection = ctypes.CDLL(os.environ["NVTX_INJECTION64_PATH"])
    torch_library = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
    with tempfile.TemporaryDirectory() as directory:
        fake = fake_library(directory)
    address = lambda function: ctypes.cast(function, ctypes.c_void_p).value  # noqa: E731
    _c_api._sequence_testing(address(fake.fake_running_node),
                             address(injection.launchwatch_set_launch_scope_hook), torch_library)
    forward_thread = _c_api.sequence_thread_id()
    assert _c_api.sequence_start(24, 48)
    lw._sequence_route[0] = _c_api

    torch.set_num_threads(1)
    model = ResNet()
    model(torch.randn(1, 3, 8, 8))  # the route records the forward's calls
    calls = _c_api._sequence_calls()
    numbers = sorted({n for begin, end, _ in calls for n in range(begin, end)}, reverse=True)
    nodes = []
    for number in numbers:
        node = (ctypes.c_uint64 * 8)()
        node[3], node[6] = number, forward_thread
        nodes.append(node)
    in_order = [ctypes.addressof(node) for node in nodes for _ in range(2)]
    same = [in_order[0]] * len(in_order)
    set_node, launch = fake.fake_set_node, _c_api._sequence_launch
    set_node.argtypes = [ctypes.c_void_p]

    def per_launch(order, rounds=30):
        best = float("inf")
        for generation in range(1, rounds + 1):
            _c_api.pass_begins(generation, 0, threading.get_ident() + 1)
            start = time.perf_counter_ns()
            for node in order:
                set_node(node)
                launch()
            best = min(best, (time.perf_counter_ns() - start) / len(order))
            set_node(None)
            _c_api.pass_ends(generation)
            lw._sink.get().pop_to(0)
        return best

    def bare(order):  # the loop alone: the fake node set and the resolver called, route off
        _c_api.sequence_stop()
        return per_launch(order)

    identities = nn.Sequential(*(nn.Identity() for _ in range(199)))

    def per_call(rounds=300):
        """(with gradients, without) ns per call of 200 nn.Identity calls, in turn each round: the
        route records a call only with gradients on, and nn.Identity's own work is the same."""
        x = torch.ones(1, requires_grad=True)
        best = [float("inf"), float("inf")]
        for _ in range(rounds):
            for which, grad in enumerate((True, False)):
                with torch.set_grad_enabled(grad):
                    start = time.perf_counter_ns()
                    identities(x)
                    best[which] = min(best[which], (time.perf_counter_ns() - start) / 200)
        return best

    forward = per_call()
    rows = {"same node": per_launch(same), "each node": per_launch(in_order)}
    rows["the loop alone (route off)"] = bare(in_order)
    print(f"{len(calls)} module calls recorded, {len(numbers)} nodes, {len(in_order)} launches")
    print("| row | ns per launch | over the loop alone |")
    print("| --- | ---: | ---: |")
    for name, value in rows.items():
        print(f"| {name} | {value:.0f} | {value - rows['the loop alone (route off)']:+.0f} |")
    print(f"| a module call (nn.Identity) with gradients / without (the route records it only "
          f"with; the forward hooks and their ranges in both) | {forward[0]:.0f} / "
          f"{forward[1]:.0f} | {forward[0] - forward[1]:+.0f} |")


if __name__ == "__main__":
    main()
