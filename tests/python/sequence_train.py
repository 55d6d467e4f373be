"""TinyNet trained under `launchwatch run` with the sequence route (python/launchwatch/
_c_sequence.c) on where torch cannot give it the running graph node (Debian's torch 1.13): a
fake running node stands in for torch's, and each backward pass makes, on another thread, the
launches the nodes of each recorded forward call would, so the ranges the route opens reach the
run's trace. Prints JSON: the recorded calls of the last step, and whether the route stayed on."""

import ctypes
import json
import os
import queue
import sys
import threading

import torch
from torch import nn

import launchwatch.torch as lw
from launchwatch import _c_api
from tiny_train import TinyNet

UINT64_MAX = (1 << 64) - 1

# A node as the route reads one: its sequence number at byte 24, the id torch gives the thread that
# made it at byte 48 (as in torch 2's Node). A node is known by its address
# (one address a node of a pass: no more launches a pass than buffers here),
# so each simulated node is the next of a few buffers.
nodes = [(ctypes.c_uint64 * 8)() for _ in range(32)]
running = [None]
RUNNING_NODE = ctypes.CFUNCTYPE(ctypes.c_void_p)(
    lambda: ctypes.addressof(running[0]) if running[0] is not None else None)
hooks_set = []
SET_HOOK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(
    lambda hook: hooks_set.append(hook) or 1)


def address(function):
    return ctypes.cast(function, ctypes.c_void_p).value


def begins_by_path(calls):
    """{path: its first sequence number} of recorded calls [(begin, end, path)], the last call of a
    path kept."""
    return {"/".join(name.decode() for name in path): begin for begin, _, path in calls}


FORWARD_THREAD = []  # torch's id of the thread the forwards run on, once the route started


def launch_in_node(number, maker=None, which=[0]):  # noqa: B006 (the buffer to use next)
    """A launch in a node numbered `number`, made on the thread torch knows by `maker` (the
    forward thread where None)."""
    which[0] = (which[0] + 1) % len(nodes)
    node = nodes[which[0]]
    node[3] = number
    node[6] = FORWARD_THREAD[0] if maker is None else maker
    running[0], before = node, running[0]
    _c_api._sequence_launch()  # what the injection does at a kernel launch on this thread
    running[0] = before


def launches_of_a_backward_pass():
    """Launches in a node of each recorded call of the last forward (its first number), in an
    AccumulateGrad node, and in one made after the model's forward (the loss's)."""
    calls = _c_api._sequence_calls()
    last_root = max(i for i, (_, _, path) in enumerate(calls) if len(path) == 1)
    for begin, end, _ in reversed(calls[last_root:]):
        if begin < end:
            launch_in_node(begin)
    launch_in_node(UINT64_MAX)
    launch_in_node(calls[last_root][1])  # the loss's node: after the root's forward returned


class AutogradThread(threading.Thread):
    """Another thread than backward()'s that makes each pass's launches, kept from pass to pass as
    CUDA's autograd thread is (the ranges of a pass are closed at its next pass's first launch)."""

    def __init__(self, launches=launches_of_a_backward_pass):
        super().__init__(daemon=True)
        self.passes, self.done = queue.Queue(), queue.Queue()
        self.launches = launches

    def run(self):
        while self.passes.get():
            try:
                self.launches()
            finally:
                self.done.put(True)

    def __call__(self, grad_outputs):  # the loss node's pre hook
        self.passes.put(True)
        self.done.get()


def two_passes(loss, launches):
    """loss.backward() twice, each pass's launches made by `launches` on another thread (the
    first pass's ranges close at the second's first launch, as on CUDA)."""
    autograd = AutogradThread(launches)
    autograd.start()
    loss.grad_fn.register_prehook(autograd)
    loss.backward(retain_graph=True)
    loss.backward()
    autograd.passes.put(False)


def many_calls_kept():
    """Records 150,000 more forward calls (50,000 of a module of two): how many the route keeps,
    and whether each kept root is whole (its two children after it, inside its numbers)."""
    model = nn.Sequential(nn.Identity(), nn.Identity())
    x = torch.ones(2, requires_grad=True)
    for _ in range(50000):
        model(x * 2)
    calls = _c_api._sequence_calls()
    whole = all(root[2] == (b"Sequential",) and first[2] == (b"Sequential", b"0")
                and root[0] <= first[0] <= second[0] <= root[1]
                for root, first, second in zip(calls[::3], calls[1::3], calls[2::3]))
    return {"count": len(calls), "whole": whole and len(calls) % 3 == 0}


def start_the_route():
    library = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
    _c_api._sequence_testing(address(RUNNING_NODE), address(SET_HOOK), library)
    FORWARD_THREAD[:] = [_c_api.sequence_thread_id()]
    assert _c_api.sequence_start(24, 48)
    lw._sequence_route[0] = _c_api


def checkpointed():
    """Two backward passes of one step, each on another thread, inside a node of the loss's
    (numbered after the model's calls), recomputing the encoder's and the head's forwards there
    (as activation checkpointing does: two modules at the recompute's top, with a launch inside
    the first) and running a backward() of the recompute there (torch's reentrant checkpoint),
    launching in a node numbered as the recompute's `encoder/1`; before it, a launch in the node of
    `head`, after it one in `encoder/0`'s. Prints JSON: whether the route stayed on and its hook
    set, how many calls it recorded before and after, and the recompute's calls as the autograd
    thread recorded them."""
    start_the_route()
    torch.manual_seed(0)
    model = TinyNet()
    x, y = torch.randn(4, 8), torch.randn(4, 2)
    loss = nn.functional.mse_loss(model(x), y)
    recorded = begins_by_path(_c_api._sequence_calls())

    seen = []
    loss_node = (ctypes.c_uint64 * 8)()
    loss_node[3] = max(end for _, end, _ in _c_api._sequence_calls())  # after the model's calls
    loss_node[6] = FORWARD_THREAD[0]

    def recompute():
        launch_in_node(recorded["TinyNet/head"])
        running[0] = loss_node  # the recompute runs inside a node of the pass, as torch's does
        inside = model.encoder[0].register_forward_hook(lambda *_: _c_api._sequence_launch())
        with torch.enable_grad():  # the recompute's forward
            again = model.head(model.encoder(x.detach().requires_grad_()))
        inside.remove()
        recomputed = begins_by_path(_c_api._sequence_recomputed_calls())
        total = again.sum()
        total.grad_fn.register_prehook(  # a node the recompute made, on this thread
            lambda grads: launch_in_node(recomputed["TinyNet/encoder/1"],
                                         _c_api.sequence_thread_id()))
        total.backward()  # its backward, on this thread, inside the loss's node
        running[0] = None
        launch_in_node(recorded["TinyNet/encoder/0"])
        seen.append(sorted(recomputed))

    two_passes(loss, recompute)
    print(json.dumps({"on": _c_api.sequence_on(), "hooks_set": len(hooks_set),
                      "hook_removed": hooks_set[-1] is None, "calls_before": len(recorded),
                      "calls_after": len(_c_api._sequence_calls()), "recomputed": seen[-1]}))


def concurrent():
    """A forward with gradients on a third thread while a backward pass runs, but in no graph node
    of it (a model trained beside another, not a recompute). Prints JSON: whether the route stayed
    on."""
    start_the_route()
    model = TinyNet()
    x = torch.randn(4, 8)
    loss = model(x).sum()

    def beside():
        other = threading.Thread(target=lambda: model(x))
        other.start()
        other.join()

    autograd = AutogradThread(beside)
    autograd.start()
    loss.grad_fn.register_prehook(autograd)
    loss.backward()
    autograd.passes.put(False)
    print(json.dumps({"on": _c_api.sequence_on()}))


def backward_elsewhere():
    """A backward() called on a third thread, not the forward's, in no graph node: its pass is
    resolved from the forward's calls as any other (a launch in `head`'s node)."""
    start_the_route()
    model = TinyNet()
    loss = model(torch.randn(4, 8)).sum()
    calls = begins_by_path(_c_api._sequence_calls())
    autograd = AutogradThread(lambda: launch_in_node(calls["TinyNet/head"]))
    autograd.start()
    loss.grad_fn.register_prehook(autograd)
    for _ in range(2):  # the first pass's range closes at the second's first launch, as on CUDA
        caller = threading.Thread(target=loss.backward, kwargs={"retain_graph": True})
        caller.start()
        caller.join()
    autograd.passes.put(False)
    print(json.dumps({"on": _c_api.sequence_on()}))


def grad_inside():
    """Two passes of one step, each on another thread calling torch.autograd.grad inside the node
    of `head`, of a second forward's graph (as a node's own backward may, with no recompute): the
    inner pass's launch, in the second forward's `encoder/0` node, opens inside the outer one's
    ranges. Prints JSON: whether the route stayed on."""
    start_the_route()
    model = TinyNet()
    x = torch.randn(4, 8)
    loss = model(x).sum()
    first = begins_by_path(_c_api._sequence_calls())
    again = model(x).sum()
    second = begins_by_path(_c_api._sequence_calls()[len(first):])
    head_node = (ctypes.c_uint64 * 8)()
    head_node[3] = first["TinyNet/head"]
    head_node[6] = FORWARD_THREAD[0]

    def inside_head():
        launch_in_node(first["TinyNet/head"])
        running[0] = head_node
        handle = again.grad_fn.register_prehook(
            lambda grads: launch_in_node(second["TinyNet/encoder/0"]))
        torch.autograd.grad(again, model.encoder[0].weight, retain_graph=True)
        handle.remove()
        running[0] = None

    two_passes(loss, inside_head)
    print(json.dumps({"on": _c_api.sequence_on()}))


def pass_ends():
    """Two training steps whose backward launches are made on another thread, which also runs the
    engine's end-of-pass callbacks, as CUDA's autograd thread does when a pass's last node runs
    there (torch on the CPU runs them on backward()'s thread: they are queued there too, and do
    nothing there). Prints JSON: whether the route stayed on, how many callbacks were queued, how
    many the other thread ran, and how many the engine itself ran on backward()'s thread."""
    start_the_route()
    main_thread = threading.get_ident()
    by_engine = []

    class Route:  # the extension, with its pass_done calls on this thread counted
        def __getattr__(self, name):
            return getattr(_c_api, name)

        @staticmethod
        def pass_done(generation):
            if threading.get_ident() == main_thread:
                by_engine.append(generation)
            _c_api.pass_done(generation)

    lw._sequence_route[0] = Route()
    torch.manual_seed(0)
    model = TinyNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(4, 8), torch.randn(4, 2)
    queued = []
    queue_on_the_engine = lw._queue_at_pass_end

    def queue_on_both(callback):
        queued.append(callback)
        queue_on_the_engine(callback)

    lw._queue_at_pass_end = queue_on_both
    ran = []

    def launches_then_the_end():
        launches_of_a_backward_pass()
        while len(ran) < len(queued):
            queued[len(ran)]()
            ran.append(True)

    autograd = AutogradThread(launches_then_the_end)
    autograd.start()
    for _ in range(2):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        # After the node's pre hooks, backward()'s own among them.
        loss.grad_fn.register_hook(lambda grad_inputs, grad_outputs: autograd(grad_outputs))
        loss.backward()
        optimizer.step()
    autograd.passes.put(False)
    print(json.dumps({"on": _c_api.sequence_on(), "queued": len(queued), "ran": len(ran),
                      "by_engine": len(by_engine)}))


def double_backward():
    """Backward passes whose launches are made on another thread: first of a graph no module made
    (the route knows no forward thread yet: `[loss]`); then one in a node the forward made
    (`head`'s), one in a node made on that thread (as a double backward's are, on CUDA's autograd
    thread during a backward with create_graph=True) and one in a node made on a third thread, the
    last two numbered inside the recorded call of `encoder/0`. Prints JSON: whether the route
    stayed on."""
    start_the_route()
    weight = torch.ones(2, requires_grad=True)
    two_passes((weight * 2).sum(), lambda: launch_in_node(1))
    third = []
    thread = threading.Thread(target=lambda: third.append(_c_api.sequence_thread_id()))
    thread.start()
    thread.join()
    model = TinyNet()
    loss = model(torch.randn(4, 8)).sum()
    calls = begins_by_path(_c_api._sequence_calls())

    def launches():
        launch_in_node(calls["TinyNet/head"])
        launch_in_node(calls["TinyNet/encoder/0"], _c_api.sequence_thread_id())
        launch_in_node(calls["TinyNet/encoder/0"], third[0])

    two_passes(loss, launches)
    print(json.dumps({"on": _c_api.sequence_on()}))


def main():
    if "--double-backward" in sys.argv:
        double_backward()
        return
    if "--pass-ends" in sys.argv:
        pass_ends()
        return
    if "--grad-inside" in sys.argv:
        grad_inside()
        return
    if "--elsewhere" in sys.argv:
        backward_elsewhere()
        return
    if "--checkpoint" in sys.argv:
        checkpointed()
        return
    if "--concurrent" in sys.argv:
        concurrent()
        return
    start_the_route()
    torch.manual_seed(0)
    model = TinyNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(4, 8), torch.randn(4, 2)
    autograd = AutogradThread()
    autograd.start()
    for _ in range(2):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.grad_fn.register_prehook(autograd)
        loss.backward()
        optimizer.step()
    calls = [[begin, end, [name.decode() for name in path]]
             for begin, end, path in _c_api._sequence_calls()]
    kept = many_calls_kept()
    on_before = _c_api.sequence_on()
    worker = threading.Thread(target=lambda: model(x))  # a forward on a second thread
    worker.start()
    worker.join()
    print(json.dumps({"calls": calls, "on": on_before, "on_after_second_thread":
                      _c_api.sequence_on(), "hooks_set": len(hooks_set), "kept": kept,
                      "last_hook_removed": hooks_set[-1] is None}))


if __name__ == "__main__":
    main()
