"""PyTorch's modules and optimizer steps as launchwatch scopes (docs/design.md section 12).

`install(mode)` (what `launchwatch run --torch modules|ops` does, through the package's
sitecustomize, once the program imports torch) wraps `torch.nn.Module.__call__`; `annotate(module)`
does the same for one model with torch's per-module hooks. Each hook opens or closes a range on the
NVTX domain `launchwatch` (_sink.py), so every kernel a module's forward or backward launches is in
that module's scope:

- forward: the root module's class name, then each child's attribute name in its parent, so the
  path is the module's `named_modules()` path (`ResNet/layer1/0/conv1`), nested inside whatever
  range is open (`step/forward/ResNet/...`). A module called from an ancestor that is not its
  parent gets its whole relative path; one that is in no open module's tree is a root.
- backward: `backward()` (`torch.autograd.backward`, which `Tensor.backward` calls, and
  `torch.autograd.grad`) runs under a `backward` scope where it was called; each module's
  backward is under it by the module's path (`step/backward/ResNet/layer4/1`), on whichever
  thread autograd runs it: PyTorch's autograd engine runs a CUDA backward on a thread of its own,
  whose ranges are opened under the calling thread's path (launchwatch_range_push_under).
  A module's backward range opens at a pre hook on its outputs' graph nodes and closes at one on
  its inputs' nodes (see "backward" below): no tensor is wrapped, so what the program computes is
  unchanged (torch's full backward hooks would wrap them, and break an in-place op after a module).
  What backward() runs before any module's backward (a loss computed outside the model) is
  `backward/[loss]`; `backward` itself holds only the initial gradient (torch's ones_like).
  Where torch lets autograd's running node and its sequence number be read (torch 2, under
  `launchwatch run`), no graph node is hooked at all: the sequence route (_c_sequence.c) records
  each forward call's range of sequence numbers, and at a kernel launch in backward opens the
  ranges of the module whose forward made the running node (`_start_sequence_route`; the node
  hooks instead with LAUNCHWATCH_TORCH_BACKWARD=node-hooks). A forward recomputed in backward
  (activation checkpointing) is `[recompute]` in its module's backward scope.
- optimizer: each step under `optimizer/<class name>` (global step hooks on torch >= 2.0, a
  wrapped `step` before).
- why a wrapped `Module.__call__` and not torch's global module hooks: with any global hook torch
  takes its slow path for every module call (`Module._call_impl` builds its hook lists, and on
  torch 2 a closure and an import per call), which on ResNet-18's host-bound training step cost
  more than the hooks' own work (docs/benchmarks.md, "The module hooks without torch's slow
  path"). The wrapper leaves torch's fast path as it is unwatched, runs around the module's own
  hooks (so what they launch is the module's), and closes its range when the forward raises.
- torch.compile: a module compiled with `torch.compile(module)` is one scope, `<class name>
  [compiled]`, holding its compiled (Triton) kernels, forward and backward; torch's own
  `Module.__call__` is put back while it runs, so Dynamo compiles the module as it would unwatched.
  So the modules it calls have no scopes of their own, in its compiled code or in the eager code a
  graph break leaves: their kernels are in its scope. (The swap is the process's: a module called
  on another thread meanwhile is unscoped too.) Where Dynamo traces a module call (in a compiled
  function), the wrapper only calls torch's.
- ops mode adds a range per aten op (`aten::addmm`), through a TorchDispatchMode: in eager code,
  on torch >= 1.13, at a measured extra cost (docs/benchmarks.md).

The forward hooks and the graph nodes' hook are C functions of the package's extension
(_c_hooks.c) where it loads, the Python ones below where it does not, with the same behaviour
("the hooks' two implementations" below).

Outside `launchwatch run` (no sink active) `install` and `annotate` install nothing.
Thread safety: hooks may run on any threads at once; each thread has its own ranges.
"""

import contextlib
import functools
import os
import threading
import weakref

import torch

from . import _sink

_COMPILED_SUFFIX = " [compiled]"
_BACKWARD = b"backward"
_OPTIMIZER = b"optimizer"
_EVERYTHING = 1 << 30  # pop_to(_EVERYTHING) pops nothing and says how many ranges are open


class _Thread(threading.local):
    """One thread's open module, optimizer and backward ranges."""

    def __init__(self):
        # (module, _Module, depth, input nodes or None): open forward calls, innermost last
        self.forward = []
        self.optimizer = []  # (optimizer, depth)
        self.backward = []  # [name, depth, owner call]: open backward ranges under `backward`
        self.generation = 0  # the backward pass `backward` belongs to
        self.callback_queued = 0  # the generation whose end callback this thread queued
        self.node = None  # the hook of the graph node whose begin ran last on this thread
        self.hooked = {}  # id(node) -> (node, _NodeHook): nodes hooked in the running forward
        self.carrier = None  # the tensor whose hook dict puts a hook on a node (_add_node_hook)


_thread = _Thread()


def _version_tuple():
    parts = []
    for part in torch.__version__.split("+")[0].split(".")[:2]:
        digits = "".join(c for c in part if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def _compiling_check():
    """Whether Dynamo is tracing the caller: a hook Dynamo traces must do nothing (it would be a
    graph break). None where torch has no Dynamo."""
    compiler = getattr(torch, "compiler", None)
    check = getattr(compiler, "is_compiling", None)
    if check is None:
        dynamo = getattr(torch, "_dynamo", None)
        check = getattr(dynamo, "is_compiling", None)
    return check


_dynamo_check = _compiling_check()
_compiling = _dynamo_check or (lambda: False)
_grad_enabled = torch.is_grad_enabled
_Tensor = torch.Tensor


# ---- names ----------------------------------------------------------------------------------

_states = {}  # id(module) -> _Module: what its hooks need, for the parent call it last had


class _Module:
    """What one module's forward hooks need that does not change between its calls under one
    parent: built on its first call, then reused (cost per call: a dict lookup and an identity
    check). `parent` is the parent call's _Module (None for a root): a module entered under another
    parent, or under the same parent entered elsewhere, gets a new one."""

    __slots__ = ("parent", "first", "rest", "path", "ref")

    def __init__(self, parent, names, path):
        self.parent = parent
        self.first = names[0] if names else None  # None: recursion, the module's own scope
        self.rest = names[1:]
        self.path = path
        self.ref = None


def _encode(name):
    return name.encode("utf-8", "replace")


def _optimized_module_type():
    try:
        from torch._dynamo.eval_frame import OptimizedModule

        return OptimizedModule
    except Exception:  # no Dynamo (torch < 2.0), or it failed to import: nothing is compiled
        return None


_OptimizedModule = _optimized_module_type()


def _root_names(module):
    if _OptimizedModule is not None and isinstance(module, _OptimizedModule):
        inner = getattr(module, "_orig_mod", module)
        return (_encode(type(inner).__name__ + _COMPILED_SUFFIX),)
    return (_encode(type(module).__name__),)


def _relative_names(module, parent):
    """The names `module` is entered under inside `parent`'s scope: its attribute path from
    `parent` (`("layer1", "0", "conv1")`), nothing for `parent` itself (recursion) or a compiled
    module's own original, or its root name when it is not in `parent`'s tree."""
    if parent is None:
        return _root_names(module)
    if parent is module:
        return ()
    if _OptimizedModule is not None and isinstance(parent, _OptimizedModule):
        if getattr(parent, "_orig_mod", None) is module:
            return ()
    for name, child in parent._modules.items():
        if child is module:
            return (_encode(name),)
    for name, child in parent.named_modules():
        if child is module and name:
            return tuple(_encode(part) for part in name.split("."))
    return _root_names(module)


def _new_module_state(module, parent_call):
    """Builds (and caches, while `module` lives) `module`'s _Module under `parent_call`, the open
    forward call it is entered in (None: a root)."""
    if parent_call is None:
        parent, parent_state = None, None
        names = _relative_names(module, None)
        path = names
    else:
        parent, parent_state = parent_call[0], parent_call[1]
        names = _relative_names(module, parent)
        path = parent_state.path + names
    state = _Module(parent_state, names, path)
    key = id(module)
    try:
        state.ref = weakref.ref(module, lambda _, key=key: _states.pop(key, None))
    except TypeError:  # not weakly referable: not cached, built again each call
        return state
    _states[key] = state
    return state


# ---- forward --------------------------------------------------------------------------------


def _forward_pre(module, args):
    if _compiling():
        return None
    sink = _sink.current or _sink.get()
    if not sink.active:
        return None
    forward = _thread.forward
    parent_call = forward[-1] if forward else None
    state = _states.get(id(module))
    if state is None or state.parent is not (parent_call[1] if parent_call else None):
        state = _new_module_state(module, parent_call)
    first = state.first
    if first is None:
        depth = sink.pop_to(_EVERYTHING)
    else:
        depth = sink.push(first)
        for name in state.rest:
            sink.push(name)
    forward.append((module, state, depth, _input_nodes(args) if _grad_enabled() else None))
    return None


def _close_forward(module):
    """Closes `module`'s innermost open forward call; returns its entry, or None."""
    forward = _thread.forward
    for i in range(len(forward) - 1, -1, -1):
        if forward[i][0] is module:
            entry = forward[i]
            (_sink.current or _sink.get()).pop_to(entry[2])
            del forward[i:]
            return entry
    return None


def _forward_post(module, args, result):
    if _compiling():
        return None
    t = _thread
    forward = t.forward
    if forward and forward[-1][0] is module:  # the usual case: the innermost open call
        entry = forward.pop()
        (_sink.current or _sink.get()).pop_to(entry[2])
    else:
        entry = _close_forward(module)
        if entry is None:
            return None
    if entry[3] is not None:
        _hook_graph(entry[1].path, entry[3], result)
    if not forward and t.hooked:
        t.hooked.clear()  # the root returned: its nodes are no longer looked up
    return None


# ---- backward -------------------------------------------------------------------------------
#
# A module's backward is found on the autograd graph itself, never by wrapping a tensor (torch's
# full backward hooks put each module's inputs and outputs through a BackwardHookFunction, and an
# in-place op on such an output, a ReLU(inplace=True) after a BatchNorm, then fails). When a
# module's forward returns, hooks go on graph nodes (grad_fn) only, which change no gradient:
# - a pre hook on each output's node: the module's backward begins (its range opens);
# - a pre hook on each input's node (read when its forward began, before an in-place op in it
#   could rebase the input): its backward has ended (its range closes, unless another one opened
#   since). A node both input and output (a module returning its input) gets neither.
# Each node gets one hook (_NodeHook) holding every call's begin and end on it, in the order they
# were added, innermost module first; a begin keeps the deeper ranges an earlier begin on the same
# node opened. One registration per node, not per module, and not through torch's register_prehook
# (_add_node_hook says why), and the node identified by its hook, not by id(grad_fn): torch 2 frees a
# node's Python object when nothing holds it, so two reads of one node's grad_fn differ. A module
# whose inputs have no node (the first layer, a root taking images) closes when another module's
# backward begins or the pass ends. AccumulateGrad nodes run as soon as they are ready, so a
# parameter's gradient accumulation is charged to the module whose backward produced it.

_LOSS = (b"[loss]",)
_passes_lock = threading.Lock()
_passes = []  # (generation, caller path, caller thread): backward passes running, newest last
_generation = [0]


def _current_pass():
    passes = _passes
    return passes[-1] if passes else None


def _close_backward_to(count):
    """Closes this thread's backward ranges until `count` are open."""
    backward = _thread.backward
    if len(backward) > count:
        _sink.get().pop_to(backward[count][1])
        del backward[count:]


def _end_of_pass(generation, thread_id):
    """The engine's callback at the end of a backward pass: closes the ranges the pass left open on
    the thread it runs on (a module whose inputs had no graph node)."""

    def callback():
        if threading.get_ident() == thread_id and _thread.generation == generation:
            _close_backward_to(0)

    return callback


def _this_pass():
    """This thread's open backward ranges, once they belong to the running pass; None outside
    one (a node run by no wrapped backward())."""
    passes = _passes
    if not passes or _compiling() or not (_sink.current or _sink.get()).active:
        return None
    generation = passes[-1][0]
    t = _thread
    if t.generation != generation:
        _close_backward_to(0)  # a finished pass's leftovers, if its callback ran elsewhere
        t.generation = generation
    if t.callback_queued != generation:
        t.callback_queued = generation
        _queue_end_of_pass(generation)
    return t.backward


def _queue_end_of_pass(generation):
    """Queues this thread's end-of-pass callback on the autograd engine (the C hooks call it)."""
    _queue_at_pass_end(_end_of_pass(generation, threading.get_ident()))


def _open_backward(path, common):
    """Opens `path[common:]` on this thread's backward ranges (under the caller's `backward` on
    another thread); returns the ranges."""
    backward = _thread.backward
    _close_backward_to(common)
    _, caller_path, caller_thread = _current_pass()
    sink = _sink.current or _sink.get()
    for name in path[common:]:
        if not backward and threading.get_ident() != caller_thread:
            depth = sink.push_under(caller_path, name)
        else:
            depth = sink.push(name)
        backward.append([name, depth, None])
    return backward


class _NodeHook:
    """The one pre hook launchwatch puts on a graph node: the begins and ends of the forward calls
    that node is an output or an input of, in the order they were added (innermost module first).

    A call is `(path,)`, made when its forward returned: its identity, held by the range at its
    path's depth that it opened last (its owner), so only that call's end closes the range. This
    object is also the node's identity for "an earlier hook on the same node": a node's Python
    object is not (torch 2 frees it when nothing holds it, and the next `grad_fn` is a new one
    with another id), so one hook per node, found again while the forward that made it runs."""

    __slots__ = ("entries",)

    def __init__(self):
        self.entries = []  # (True, call): its backward begins; (False, call): it has ended

    def __call__(self, grad_outputs):
        backward = _this_pass()
        if backward is None:
            return None
        t = _thread
        for begins, call in self.entries:
            path = call[0]
            if begins:
                same_node = t.node is self
                t.node = self
                common = 0
                limit = min(len(backward), len(path))
                while common < limit and backward[common][0] == path[common]:
                    common += 1
                if common < len(path) or (not same_node and len(backward) > len(path)):
                    backward = _open_backward(path, common)
                if path:
                    backward[len(path) - 1][2] = call
            else:
                # Its backward has ended, unless another module's began since (and owns it).
                index = len(path) - 1
                if len(backward) > index and backward[index][2] is call:
                    _close_backward_to(index)
        return None


def _begin_loss(node_key, grad_outputs):
    """A pre hook on what backward() was called on: where no module's backward is open yet (a
    loss computed outside any module), `backward/[loss]`."""
    backward = _this_pass()
    if backward is None:
        return None
    _thread.node = node_key
    if not backward:
        _open_backward(_LOSS, 0)
    return None


def _graph_nodes(value, nodes, depth=0):
    """Appends the graph nodes (grad_fn) of the tensors in `value` (a tensor, or tuples, lists and
    dicts of them, two levels deep: a model output's loss and logits, not its cache) to `nodes`,
    each once. Returns `nodes`."""
    if isinstance(value, _Tensor):
        node = value.grad_fn
        if node is not None and not _holds(nodes, node):
            nodes.append(node)
    elif depth < 2:
        if isinstance(value, (tuple, list)):
            for item in value:
                _graph_nodes(item, nodes, depth + 1)
        elif isinstance(value, dict):
            for item in value.values():
                _graph_nodes(item, nodes, depth + 1)
    return nodes


def _holds(nodes, node):
    for seen in nodes:
        if seen is node:
            return True
    return False


def _input_nodes(args):
    """The graph nodes of a forward's inputs (a module taking one tensor: no search)."""
    if len(args) == 1:
        arg = args[0]
        if isinstance(arg, _Tensor):
            node = arg.grad_fn
            return (node,) if node is not None else ()
    return _graph_nodes(args, [])


def _new_carrier():
    """This thread's carrier (_add_node_hook), made on its first use."""
    carrier = _thread.carrier = torch.empty(0, device="cpu")
    return carrier


def _make_carrier_now():
    """Makes this thread's carrier at install() or annotate(), outside any forward: one made
    lazily inside a first forward run under a tensor mode (torch.export's FakeTensorMode) or with
    torch.empty replaced would not be a plain tensor, and the route would fall back for good.
    Where it cannot be made here, the first node hook tries again."""
    if _thread.carrier is None:
        try:
            _new_carrier()
        except Exception:  # pylint: disable=broad-except
            pass


_direct_route = [True]  # False once torch refused the direct route: register_prehook from then on


def _add_node_hook(node, hook):
    """Puts `hook` on graph node `node` as a pre hook (called when the node runs, before it).

    Not through torch's `register_prehook`, which makes a RemovableHandle and a hook dict in Python
    for every node (launchwatch never removes a node's hook: it goes with the node) and was the
    larger half of a hooked node's cost (docs/benchmarks.md, "A node's hook without torch's
    handle"), but the way torch's own `Tensor.register_hook` reaches a node: the node's
    `_register_hook_dict(tensor)` hooks `tensor._backward_hooks` on the node, at the tensor's
    output number. The tensor is launchwatch's own (an empty leaf per thread, output number 0,
    which every node has), never one of the program's, so no tensor of the program is touched.
    Where that route fails (a torch without it, a carrier that cannot be made), register_prehook
    from then on."""
    if _direct_route[0]:
        try:
            carrier = _thread.carrier
            if carrier is None:
                carrier = _new_carrier()
            carrier._backward_hooks = {0: hook}
            node._register_hook_dict(carrier)
            return
        except Exception:  # pylint: disable=broad-except
            _direct_route[0] = False
    node.register_prehook(hook)


def _node_hook(node):
    """The _NodeHook on `node`, registered on the first call for it while this thread's outermost
    forward runs (which holds the node, so its id stays its own)."""
    hooked = _thread.hooked
    found = hooked.get(id(node))
    if found is not None:
        return found[1]
    hook = _hooks.node_hook()
    _add_node_hook(node, hook)
    hooked[id(node)] = (node, hook)
    return hook


def _hook_graph(path, inputs, result):
    """Adds the begin and end of the forward call that returned `result` to its nodes' hooks.
    Nothing where `result` has no node (inference: no graph was recorded)."""
    if isinstance(result, _Tensor):
        node = result.grad_fn
        if node is None:
            return
        outputs = (node,)
    else:
        outputs = _graph_nodes(result, [])
        if not outputs or not _grad_enabled():
            return
    call = (path,)
    for node in outputs:
        if not _holds(inputs, node):
            _node_hook(node).entries.append((True, call))
    for node in inputs:
        if not _holds(outputs, node):
            _node_hook(node).entries.append((False, call))


def _route_pass_ends(sequence, generation, queued, grad_outputs):
    """A pre hook on what backward() was called on, under the sequence route: once a pass, queues
    the engine's end-of-pass callback, which torch runs on the thread that finishes the pass
    (CUDA's autograd thread, where the route's ranges for the pass are open), to close them
    there as the pass ends. Nothing while Dynamo traces it (compiled autograd traces node hooks:
    the ranges then close at that thread's next launch). Cost: one node hook a pass."""
    if not queued and not _compiling():
        queued.append(True)
        _queue_at_pass_end(functools.partial(sequence.pass_done, generation))
    return None


def _queue_at_pass_end(callback):
    """Queues `callback` to run when the engine finishes the running pass (tests replace it)."""
    try:
        torch.autograd.Variable._execution_engine.queue_callback(callback)
    except Exception:  # not inside the engine (the hook called directly): nothing to queue
        pass


def _wrap_backward(original):
    def backward(*args, **kwargs):
        sink = _sink.get()
        if not sink.active:
            return original(*args, **kwargs)
        depth = sink.push(_BACKWARD)
        t = _thread
        saved = (t.backward, t.generation, t.callback_queued)  # a backward() inside a backward
        t.backward = []
        with _passes_lock:
            _generation[0] += 1
            entry = (_generation[0], sink.current_path(), threading.get_ident())
            _passes.append(entry)
        sequence = _sequence_route[0]
        if sequence is not None:
            sequence.pass_begins(*entry)
        handles = []
        routed = sequence is not None and sequence.sequence_on()
        try:
            roots = args[0] if args else kwargs.get("tensors", kwargs.get("outputs"))
            # The route names the loss's nodes itself; it needs the pass's end on the thread
            # that finishes it, where its ranges are.
            hook = (functools.partial(_route_pass_ends, sequence, entry[0], [])
                    if routed else None)
            for node in _graph_nodes(roots, [], 1):
                handles.append(node.register_prehook(
                    hook or functools.partial(_begin_loss, object())))
        except Exception:  # not tensors: backward() itself says what was wrong
            pass
        try:
            return original(*args, **kwargs)
        finally:
            for handle in handles:
                handle.remove()
            if sequence is not None:
                sequence.pass_ends(entry[0])
            with _passes_lock:
                _passes.remove(entry)
            sink.pop_to(depth)  # this thread's ranges of the pass are inside `backward`
            t.backward, t.generation, t.callback_queued = saved

    backward.__wrapped__ = original
    backward.__name__ = getattr(original, "__name__", "backward")
    backward.__doc__ = getattr(original, "__doc__", None)
    backward._launchwatch = True
    return backward


_sequence_route = [None]  # the extension, once the sequence route started (on until it stops)


def _one_word(seen, nodes):
    """The byte offset of the one word set in every mask of `seen` (sequence_offsets' bits, one a
    node of the `nodes` measured), or None where not every node was seen or not exactly one is."""
    bits = functools.reduce(int.__and__, seen) if len(seen) == nodes else 0
    if bits == 0 or bits & (bits - 1):
        return None
    return (bits.bit_length() - 1) * 8


def _sequence_offset(c_api):
    """Where a graph node keeps its sequence number, in bytes from its start: measured on two
    nodes of launchwatch's own tiny CPU graph, run by the engine on this thread, each word of the
    running node compared with the number torch says it has. None unless exactly one word holds
    both nodes' numbers, and the counter read around each node's making gave that number."""
    leaf = torch.ones(1, device="cpu", requires_grad=True)
    with torch.enable_grad():
        # Numbers far from the nodes' small fields (their topological number, a count of 0 or 1):
        # the counter starts at 0 on each thread, so a fresh one is moved on by a few hundred.
        for _ in range(max(0, 300 - c_api.sequence_peek())):
            leaf * 1
        numbers = [c_api.sequence_peek()]
        first = leaf * 2
        numbers.append(c_api.sequence_peek())
        second = first * 3
        numbers.append(c_api.sequence_peek())
    nodes = (first.grad_fn, second.grad_fn)
    if [node._sequence_nr() for node in nodes] != numbers[:2] or numbers[2] != numbers[1] + 1:
        return None
    seen = []
    for node in nodes:
        node.register_prehook(
            lambda grads, number=node._sequence_nr(): seen.append(c_api.sequence_offsets(number)))
    torch.autograd.grad(second, leaf)
    return _one_word(seen, 2)


def _sequence_thread_offset(c_api):
    """Where a graph node keeps the id of the thread that made it (torch's RecordFunction id of
    that thread), in bytes from its start: measured on two nodes made on this thread and one made
    on another, run by the engine here, each word of the running node compared with its maker's
    id. None unless exactly one word holds each node's maker's id, the two threads' ids apart."""
    here = c_api.sequence_thread_id()  # raises here, not on the thread, where torch has no ids
    leaf = torch.ones(1, device="cpu", requires_grad=True)
    made = []

    def make_one():
        with torch.enable_grad():
            made.append((leaf * 5, c_api.sequence_thread_id()))

    other = threading.Thread(target=make_one, name="launchwatch-measure", daemon=True)
    other.start()
    other.join(timeout=10)  # runs inside torch's import: never wait on it for good
    with torch.enable_grad():
        first = leaf * 2
        second = first * 3
    if other.is_alive() or len(made) != 1 or made[0][1] == here:
        return None
    elsewhere, there = made[0]
    seen = []
    for node, maker in ((first.grad_fn, here), (second.grad_fn, here), (elsewhere.grad_fn, there)):
        node.register_prehook(lambda grads, maker=maker: seen.append(c_api.sequence_offsets(maker)))
    torch.autograd.grad(second + elsewhere, leaf)
    return _one_word(seen, 3)


def _start_sequence_route():
    """Starts the sequence route unless the node hooks are asked for
    (LAUNCHWATCH_TORCH_BACKWARD=node-hooks), where it can run: the C hooks in use, the sink the
    extension's own (the injection's C API, with its launch scope hook), torch's library
    exporting autograd's running node and sequence counter (torch 2), and the offset of a node's
    number measured (_sequence_offset); the offset of its maker's thread id too where it can be
    (_sequence_thread_offset: a double backward's nodes are then told apart). Before install()
    wraps backward(). Returns whether it started; where not, graph-node hooks find each module's
    backward. The default since it matched the node hooks' scopes on every path of ResNet-18
    training on the H200 at a lower cost (docs/benchmarks.md)."""
    if _c_hooks is None or _hooks is not _c_hooks or getattr(_sink.get(), "via", "") != "extension":
        return False
    if os.environ.get("LAUNCHWATCH_TORCH_BACKWARD", "") == "node-hooks":
        return False
    version = getattr(torch, "version", None)
    if getattr(version, "cuda", None) is None and getattr(version, "hip", None) is None:
        return False  # a torch with no GPU launches no kernel, where the route opens its ranges
    try:
        from . import _c_api

        library = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
        if not _c_api.sequence_setup(library):
            return False
        offset = _sequence_offset(_c_api)
        if offset is None:
            return False
        try:  # where it cannot be measured, every node is taken for the forward thread's
            thread_offset = _sequence_thread_offset(_c_api) or 0
        except Exception:  # pylint: disable=broad-except
            thread_offset = 0
        if not _c_api.sequence_start(offset, thread_offset):
            return False
    except Exception:  # pylint: disable=broad-except  # an older torch, or one laid out otherwise
        return False
    _sequence_route[0] = _c_api
    return True


def _install_backward_scope():
    """`backward` scopes around torch.autograd.backward (Tensor.backward calls it) and grad."""
    autograd = torch.autograd
    for name in ("backward", "grad"):
        original = getattr(autograd, name)
        if not getattr(original, "_launchwatch", False):
            setattr(autograd, name, _wrap_backward(original))


# ---- optimizer ------------------------------------------------------------------------------


def _optimizer_pre(optimizer, args, kwargs):
    sink = _sink.get()
    if not sink.active or _compiling():
        return None
    stack = _thread.optimizer
    while stack and stack[-1][0] is optimizer:  # a step that raised: its post hook never ran
        sink.pop_to(stack.pop()[1])
    depth = sink.push(_OPTIMIZER)
    sink.push(_encode(type(optimizer).__name__))
    stack.append((optimizer, depth))
    return None


def _optimizer_post(optimizer, args, kwargs):
    if _compiling():
        return None
    stack = _thread.optimizer
    for i in range(len(stack) - 1, -1, -1):
        if stack[i][0] is optimizer:
            _sink.get().pop_to(stack[i][1])
            del stack[i:]
            return None
    return None


def _wrap_step(step):
    def wrapped(self, *args, **kwargs):
        _optimizer_pre(self, args, kwargs)
        try:
            return step(self, *args, **kwargs)
        finally:
            _optimizer_post(self, args, kwargs)

    wrapped.__wrapped__ = step
    wrapped.__name__ = getattr(step, "__name__", "step")
    wrapped._launchwatch = True
    return wrapped


def _install_optimizer_hooks():
    import importlib

    optimizer_module = importlib.import_module("torch.optim.optimizer")
    pre = getattr(optimizer_module, "register_optimizer_step_pre_hook", None)
    post = getattr(optimizer_module, "register_optimizer_step_post_hook", None)
    if pre is not None and post is not None:
        pre(_optimizer_pre)
        post(_optimizer_post)
        return
    # torch < 2.0: each optimizer class's step, wrapped when the first of its kind is made.
    base = torch.optim.Optimizer
    original_init = base.__init__

    def __init__(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        cls = type(self)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_launchwatch", False):
            cls.step = _wrap_step(step)

    base.__init__ = __init__


# ---- exceptions inside forward ---------------------------------------------------------------


def _install_exception_closing():
    """Where torch cannot always call a module's forward hooks (torch < 2.1), a forward that
    raises would skip annotate()'s post hook: Module.__call__ closes the ranges of the calls it
    left open (install()'s wrapper does that itself)."""
    module_type = torch.nn.Module
    original = module_type.__call__
    if getattr(original, "_launchwatch", False):
        return

    def __call__(self, *args, **kwargs):
        open_calls = len(_thread.forward)
        try:
            return original(self, *args, **kwargs)
        except BaseException:
            forward = _thread.forward
            if len(forward) > open_calls:
                _sink.get().pop_to(forward[open_calls][2])
                del forward[open_calls:]
            raise

    __call__._launchwatch = True
    module_type.__call__ = __call__


# ---- torch.compile --------------------------------------------------------------------------

_hidden = threading.local()


@contextlib.contextmanager
def _hooks_suspended():
    """torch's own `Module.__call__` back in place while it lasts, launchwatch's put back after,
    also when it raises: while a compiled module runs (below), and for a benchmark's steps that
    must run unwatched in a watched process (bench/torch/modules_table.py --blocks). Nothing where
    install() wrapped nothing, or where someone else replaced the wrapper since."""
    if not _module_call:
        yield
        return
    module_type = torch.nn.Module
    original, ours = _module_call
    swapped = module_type.__dict__.get("__call__") is ours
    if swapped:
        module_type.__call__ = original
    try:
        yield
    finally:
        if swapped and module_type.__dict__.get("__call__") is original:
            module_type.__call__ = ours


def _install_compiled_scope(module_call):
    """A `torch.compile`d module: one scope `<class> [compiled]`, torch's own `Module.__call__` in
    place while it runs (Dynamo would otherwise trace launchwatch's for each module).
    `module_call` is torch's `Module.__call__`, the one OptimizedModule inherits where it has none
    of its own."""
    if _OptimizedModule is None:
        return
    original = _OptimizedModule.__dict__.get("__call__", module_call)
    if getattr(original, "_launchwatch", False):
        return

    def __call__(self, *args, **kwargs):
        sink = _sink.get()
        if not sink.active or getattr(_hidden, "depth", 0) > 0 or _compiling():
            return original(self, *args, **kwargs)
        hooks = _hooks
        hooks.pre(self, args)
        _hidden.depth = 1
        try:
            with _hooks_suspended():
                result = original(self, *args, **kwargs)
        except BaseException:
            _hidden.depth = 0
            hooks.post(self, args, None)
            raise
        _hidden.depth = 0
        hooks.post(self, args, result)
        return result

    __call__._launchwatch = True
    _OptimizedModule.__call__ = __call__


# ---- ops ------------------------------------------------------------------------------------


def _install_op_ranges():
    """A range per aten op, by a TorchDispatchMode entered for good. Returns why not, or None."""
    try:
        from torch.utils._python_dispatch import TorchDispatchMode
    except ImportError as missing:
        return f"this torch has no TorchDispatchMode ({missing})"

    names = {}

    class _OpRanges(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = names.get(func)
            if name is None:
                packet = getattr(func, "overloadpacket", func)
                name = names[func] = _encode("aten::" + getattr(packet, "__name__", str(func)))
            sink = _sink.get()
            depth = sink.push(name)
            try:
                return func(*args, **(kwargs or {}))
            finally:
                sink.pop_to(depth)

    try:
        _OpRanges().__enter__()
    except Exception as failed:
        return f"the op mode could not be entered ({failed})"
    return None


# ---- the hooks' two implementations ----------------------------------------------------------
#
# The forward hooks and the graph-node hook above are also written in C, in the package's
# extension (_c_hooks.c: the same steps on the same state, calling the functions above back for
# the rarer paths), at a fraction of the Python's cost per module call (docs/benchmarks.md, "Hooks
# in C"). The C ones are used where the extension loads; the Python ones where it does not (no
# compiler or Python headers at build time, a Python older than 3.10), with the same behaviour.


class _Implementation:
    """One implementation of the hooks: `pre`, `post` (the forward hooks torch calls) and
    `node_hook` (makes a graph node's pre hook), and `via` ("c" or "python")."""

    __slots__ = ("via", "pre", "post", "node_hook")

    def __init__(self, via, pre, post, node_hook):
        self.via, self.pre, self.post, self.node_hook = via, pre, post, node_hook


def _c_implementation():
    """The C hooks, or None where the extension does not load."""
    try:
        from . import _c_api

        _c_api.hooks_setup(
            sink_module=_sink, thread=_thread, states=_states, passes=_passes,
            new_state=_new_module_state, close_forward=_close_forward, input_nodes=_input_nodes,
            graph_nodes=_graph_nodes, queue_end_of_pass=_queue_end_of_pass,
            grad_enabled=_grad_enabled, tensor=_Tensor, compiling=_dynamo_check,
            new_carrier=_new_carrier, direct_route=_direct_route)
    except Exception:  # not built, another Python, or a build without the hooks: Python's
        return None
    return _Implementation("c", _c_api.forward_pre, _c_api.forward_post, _c_api.NodeHook)


_python_hooks = _Implementation("python", _forward_pre, _forward_post, _NodeHook)
_c_hooks = _c_implementation()
_hooks = _c_hooks or _python_hooks  # the implementation in use


def _use_hooks(via):
    """Makes the hooks `via` ("c" or "python") the ones in use, by the wrapped `Module.__call__`
    too (benchmarks and tests compare the two); returns the one it replaces. ValueError for "c"
    where the extension did not load."""
    global _hooks
    chosen = {"c": _c_hooks, "python": _python_hooks}.get(via)
    if chosen is None:
        raise ValueError(f"launchwatch.torch: no {via!r} hooks here; use "
                         + ("'c' or 'python'" if _c_hooks else "'python' (the C ones did not load)"))
    previous = _hooks
    _hooks = chosen
    if chosen is not _c_hooks and _sequence_route[0] is not None:
        _sequence_route[0].sequence_stop()  # the Python hooks hook graph nodes
    return previous.via


def _checked_by_dynamo(hook):
    """`hook` behind a Python function that returns at once while Dynamo traces it (a C hook
    there would be a graph break): for torch's per-module hooks, which Dynamo traces."""
    if _dynamo_check is None:
        return hook

    def checked(*args):
        if _compiling():
            return None
        return hook(*args)

    return checked


# ---- the wrapped Module.__call__ ---------------------------------------------------------------

_module_call = []  # (torch's Module.__call__, launchwatch's) once install() has wrapped it


def _watching_call(original):
    """`Module.__call__` with the forward hooks in use (`_hooks`) around `original`: the pre hook,
    the call (torch's fast path when the module has no hooks of its own), the post hook, which
    also runs, with no result, when the call raises. Where torch has Dynamo, a call Dynamo traces
    is `original`'s alone (the check is a function Dynamo knows, so it compiles to nothing).
    Cost: two C calls and, on torch 2, Dynamo's check, over torch's own call."""

    def __call__(self, *args, **kwargs):
        if _dynamo_check is not None and _dynamo_check():
            return original(self, *args, **kwargs)
        hooks = _hooks
        hooks.pre(self, args)
        try:
            result = original(self, *args, **kwargs)
        except BaseException:
            hooks.post(self, args, None)
            raise
        hooks.post(self, args, result)
        return result

    __call__.__wrapped__ = original
    __call__.__name__ = getattr(original, "__name__", "__call__")
    __call__.__doc__ = getattr(original, "__doc__", None)
    __call__._launchwatch = True
    return __call__


def _wrap_module_call():
    """Wraps `Module.__call__` once; what is there already is what it calls (torch's, another
    library's wrapper, or annotate()'s closing of raised calls on torch < 2.1)."""
    if _module_call:
        return
    module_type = torch.nn.Module
    original = module_type.__call__
    ours = _watching_call(original)
    _module_call[:] = [original, ours]
    module_type.__call__ = ours


# ---- installing -----------------------------------------------------------------------------

_installed = []


def install(mode="modules"):
    """Wraps `Module.__call__` and installs the backward and optimizer hooks (`launchwatch run
    --torch modules|ops` calls this once torch is imported): every module's forward and backward
    and every optimizer step, and with
    mode="ops" every aten op, as scopes. Returns a list of what could not be installed (empty
    when everything was). Installs nothing outside `launchwatch run`; a second call does nothing.
    """
    if mode not in ("modules", "ops"):
        raise ValueError(f"launchwatch.torch.install: mode is {mode!r}; use 'modules' or 'ops'")
    if _installed or not _sink.get().active:
        return []
    _installed.append(mode)
    missing = []
    _make_carrier_now()
    _start_sequence_route()
    _install_compiled_scope(torch.nn.Module.__call__)
    _wrap_module_call()
    _install_backward_scope()
    _install_optimizer_hooks()
    if mode == "ops":
        why = _install_op_ranges()
        if why:
            missing.append(f"ops: {why}; modules only")
    return missing


def annotate(module):
    """Makes one model's modules scopes, as `launchwatch run --torch modules` does for all: its
    forward and backward by module path (the root is `module`'s class name), and the `backward`
    scope where backward() is called. For a program run with `--torch off`, or to name one model
    only. Returns `module`. Outside `launchwatch run`, or after install() (every module is a
    scope already), it installs nothing."""
    if not isinstance(module, torch.nn.Module):
        raise TypeError(
            f"launchwatch.torch.annotate takes an nn.Module, not {type(module).__name__}")
    if not _sink.get().active or getattr(module, "_launchwatch_annotated", False):
        return module
    if _module_call:  # install() wrapped Module.__call__: every module is a scope already
        return module
    pre, post = _checked_by_dynamo(_hooks.pre), _checked_by_dynamo(_hooks.post)
    for child in module.modules():
        child.register_forward_pre_hook(pre)
        try:
            child.register_forward_hook(post, always_call=True)
        except TypeError:  # torch < 2.1: Module.__call__ closes what a raising forward left open
            child.register_forward_hook(post)
            _install_exception_closing()
    object.__setattr__(module, "_launchwatch_annotated", True)
    _make_carrier_now()
    _install_backward_scope()
    return module
