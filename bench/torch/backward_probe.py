#!/usr/bin/env python3
"""Where a module's backward runs under launchwatch's torch hooks, node by node: GPT-2's lm_head
(its weight tied to the token embedding) on each device given, so a scope that lands in the root
module on the GPU (issue 22: the H200 table charged lm_head's backward to GPT2LMHeadModel) can be
seen where it goes astray.

    bench/torch/backward_probe.py --python-package build/gpu/python [--devices cuda,cpu]

One training step of transformers' GPT2LMHeadModel (a small config: 2 layers, 128 wide, GPT-2's
vocabulary) with the hooks and a recording sink (no launchwatch run needed): a pre hook on the node
that computes lm_head's gradients (the one after its output's node) records the range open on its
thread when it runs, and every graph-node hook of launchwatch's logs, in order, its node's name,
its thread, the entries it holds (begin or end, and whose) and the thread's backward ranges after
it ran. Prints that log and one line per device: `lm_head's gradients ran inside <range>`.
Falls back to a tied-weight model of its own when transformers is missing.
"""

import argparse
import os
import sys
import threading


class RecordingSink:
    """Ranges per thread, as the injection keeps them (the sink protocol of _sink.py)."""

    active = True
    via = "recording"

    def __init__(self):
        self.lock = threading.Lock()
        self.stacks = {}
        self.paths = [()]

    def stack(self):
        return self.stacks.setdefault(threading.get_ident(), [])

    def push(self, name):
        stack = self.stack()
        stack.append((stack[-1] if stack else ()) + (name.decode(),))
        return len(stack) - 1

    def push_under(self, parent, name):
        stack = self.stack()
        stack.append(self.paths[parent] + (name.decode(),))
        return len(stack) - 1

    def pop_to(self, depth):
        stack = self.stack()
        del stack[max(depth, 0):]
        return len(stack)

    def current_path(self):
        stack = self.stack()
        if not stack:
            return 0
        with self.lock:
            self.paths.append(stack[-1])
            return len(self.paths) - 1

    def innermost(self):
        stack = self.stack()
        return "/".join(stack[-1]) if stack else "(none)"


def build(device):
    import torch
    from torch import nn

    torch.manual_seed(0)
    try:
        from transformers import GPT2Config, GPT2LMHeadModel

        config = GPT2Config(n_layer=2, n_embd=128, n_head=2)
        model = GPT2LMHeadModel(config).to(device)
        ids = torch.randint(0, config.vocab_size, (2, 16), device=device)

        def step():
            output = model(input_ids=ids, labels=ids)
            return output.loss, output.logits

        return model, step, "transformers GPT2LMHeadModel " + __import__("transformers").__version__

    except ImportError:
        class Tied(nn.Module):
            def __init__(self):
                super().__init__()
                self.wte = nn.Embedding(50, 16)
                self.ln_f = nn.LayerNorm(16)
                self.lm_head = nn.Linear(16, 50, bias=False)
                self.lm_head.weight = self.wte.weight

            def forward(self, ids):
                logits = self.lm_head(self.ln_f(self.wte(ids)))
                return nn.functional.cross_entropy(logits.view(-1, 50), ids.view(-1)), logits

        model = Tied().to(device)
        ids = torch.randint(0, 50, (2, 16), device=device)
        return model, lambda: model(ids), "a tied-weight model of its own (no transformers)"


def probe(device):
    import torch

    import launchwatch.torch as lwtorch
    from launchwatch import _sink

    sink = RecordingSink()
    _sink.set_sink(sink)
    lwtorch.install("modules")
    names = {}  # id(_NodeHook) -> its node's name
    original_node_hook = lwtorch._node_hook

    def node_hook(node):
        hook = original_node_hook(node)
        names[id(hook)] = node.name()
        return hook

    lwtorch._node_hook = node_hook
    log = []
    original_call = lwtorch._NodeHook.__call__

    def logged_call(self, grad_outputs):
        result = original_call(self, grad_outputs)
        entries = ", ".join(("begin " if begins else "end ") + "/".join(
            part.decode() for part in call[0]) for begins, call in self.entries)
        after = [name.decode() for name, _, _ in lwtorch._thread.backward]
        log.append(f"{names.get(id(self), '?')} on thread {threading.get_ident() % 10000}: "
                   f"[{entries}] -> backward ranges {'/'.join(after) or '(none)'}")
        return result

    lwtorch._NodeHook.__call__ = logged_call
    try:
        model, step, what = build(device)
        loss, logits = step()
        seen = []
        head_output = logits.grad_fn
        gradient_node = head_output.next_functions[0][0]

        def record(grads):
            seen.append(sink.innermost())

        gradient_node.register_prehook(record)
        loss.backward()
        if device == "cuda":
            torch.cuda.synchronize()
    finally:
        lwtorch._NodeHook.__call__ = original_call
        lwtorch._node_hook = original_node_hook
    print(f"\n## {device}: {what}, torch {torch.__version__}\n")
    print(f"lm_head's output node {head_output.name()}, then {gradient_node.name()}")
    for line in log:
        print("  " + line)
    print(f"\n{device}: lm_head's gradients ran inside {', '.join(seen) or '(never ran)'}")
    return seen


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python-package", required=True,
                        help="the folder holding the launchwatch package (build/<preset>/python)")
    parser.add_argument("--devices", default="cuda,cpu")
    args = parser.parse_args()
    sys.path.insert(0, os.path.abspath(args.python_package))
    import torch

    for device in args.devices.split(","):
        if device == "cuda" and not torch.cuda.is_available():
            print("\ncuda: not available here")
            continue
        probe(device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
