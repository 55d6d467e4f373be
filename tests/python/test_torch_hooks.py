"""launchwatch's torch hooks against the fake NVTX sink, on the CPU (Debian's python3-torch)."""

import copy
import os
import threading

import pytest

torch = pytest.importorskip("torch",
                            reason="torch is not installed for this Python (python3-torch)")

import launchwatch  # noqa: E402
import launchwatch.torch as lwtorch  # noqa: E402
from torch import nn  # noqa: E402


@pytest.fixture(params=["c", "python"])
def hooks(sink, request):
    """install()'s hooks (the wrapped Module.__call__ and the rest), installed once for the
    process (they read the sink when they run), in each implementation: C (the package's
    extension) and Python (where it does not load)."""
    if request.param == "c" and lwtorch._c_hooks is None:
        pytest.skip("launchwatch._c_api was not built (no Python headers at configure time)")
    assert lwtorch.install("modules") == []
    previous = lwtorch._use_hooks(request.param)
    try:
        yield sink
    finally:
        lwtorch._use_hooks(previous)
    assert sink.open_ranges() == {}, "a range was left open"


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Linear(4, 4)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.conv1(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = nn.Sequential(Block(), Block())
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(self.layer1(x))


def inputs(requires_grad=False):
    torch.manual_seed(0)
    return torch.randn(3, 4, requires_grad=requires_grad)


def test_forward_scopes_are_the_named_modules_paths_under_the_roots_class_name(hooks):
    Net()(inputs())
    assert hooks.paths() == [
        "Net", "Net/layer1", "Net/layer1/0", "Net/layer1/0/conv1", "Net/layer1/0/relu",
        "Net/layer1/1", "Net/layer1/1/conv1", "Net/layer1/1/relu", "Net/fc",
    ]


def test_a_module_called_from_an_ancestor_not_its_parent_gets_its_whole_relative_path(hooks):
    class Skips(Net):
        def forward(self, x):
            return self.layer1[1].conv1(x)

    Skips()(inputs())
    assert hooks.paths() == ["Skips", "Skips/layer1", "Skips/layer1/1", "Skips/layer1/1/conv1"]
    assert [path for _, path in hooks.closed][0] == ("Skips", "layer1", "1", "conv1")


def test_modules_nest_under_the_programs_own_ranges(hooks):
    with launchwatch.scope("step"), launchwatch.scope("forward"):
        nn.Sequential(nn.Linear(4, 4))(inputs())
    assert hooks.paths() == ["step", "step/forward", "step/forward/Sequential",
                             "step/forward/Sequential/0"]


def test_a_module_called_twice_opens_and_closes_its_range_each_time(hooks):
    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.shared = nn.Linear(4, 4)

        def forward(self, x):
            return self.shared(self.shared(x))

    Twice()(inputs())
    assert hooks.paths() == ["Twice", "Twice/shared", "Twice/shared"]
    closed = [path for _, path in hooks.closed]
    assert closed == [("Twice", "shared"), ("Twice", "shared"), ("Twice",)]


def test_a_recursive_module_stays_in_its_own_scope_and_closes_every_call(hooks):
    class Recursive(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x, depth=2):
            return self.fc(x) if depth == 0 else self(self.fc(x), depth - 1)

    Recursive()(inputs())
    assert set(hooks.paths()) == {"Recursive", "Recursive/fc"}
    assert hooks.paths().count("Recursive/fc") == 3


def test_an_exception_inside_forward_closes_the_ranges_it_left_open(hooks):
    class Fails(nn.Module):
        def forward(self, x):
            raise RuntimeError("out of memory")

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Fails()

        def forward(self, x):
            return self.inner(x)

    with launchwatch.scope("step"):
        with pytest.raises(RuntimeError):
            Outer()(inputs())
        assert hooks.open_ranges() == {threading.get_ident(): [("step",)]}
        nn.Linear(4, 4)(inputs())  # the next module is not under the failed ones
    assert hooks.paths()[-1] == "step/Linear"


def test_backward_is_under_a_backward_scope_where_it_was_called_with_the_modules_paths(hooks):
    net = Net()
    loss = net(inputs(requires_grad=True)).sum()
    hooks.opened.clear()
    with launchwatch.scope("step"):
        loss.backward()
    paths = hooks.paths()
    # The sum is no module's: its backward is the loss's, before the model's.
    assert paths[:4] == ["step", "step/backward", "step/backward/[loss]", "step/backward/Net"]
    assert "step/backward/Net/fc" in paths
    assert "step/backward/Net/layer1/0/conv1" in paths
    assert all(p.startswith("step/backward/Net") for p in paths[3:])


def test_a_backward_whose_inputs_need_no_gradient_stays_open_until_the_pass_ends(hooks):
    net = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    loss = net(inputs()).sum()  # the input needs no gradient: the root's and "0"'s hooks come early
    hooks.opened.clear()
    hooks.closed.clear()
    loss.backward()
    closed = [path for _, path in hooks.closed]
    # "0" (the first Linear) is the last module backward reaches; it closes with the pass.
    first, last = ("backward", "Sequential", "0"), ("backward", "Sequential", "2")
    assert closed.index(first) > closed.index(last)
    assert closed[-1] == ("backward",)


def test_backward_on_another_thread_nests_under_the_calling_threads_backward_scope(hooks):
    net = Net()
    loss = net(inputs(requires_grad=True)).sum()
    hooks.opened.clear()
    original = torch.autograd.backward.__wrapped__

    def on_autograd_thread(*args, **kwargs):
        # As the engine does for CUDA: the pass runs on a thread of its own, the caller waits.
        worker = threading.Thread(target=original, args=args, kwargs=kwargs)
        worker.start()
        worker.join()

    caller = threading.get_ident()
    with launchwatch.scope("step"):
        lwtorch._wrap_backward(on_autograd_thread)(loss)
    others = [(thread, "/".join(path)) for thread, path in hooks.opened if thread != caller]
    assert others, "no range was opened on the autograd thread"
    assert [path for _, path in others[:2]] == ["step/backward/[loss]", "step/backward/Net"]
    assert all(path.startswith("step/backward/Net") for _, path in others[1:])
    assert "step/backward/Net/layer1/1/conv1" in [path for _, path in others]


def train_twice(model, x, sink_during):
    """Two SGD steps on `model` with `sink_during` as the sink; its gradients after each step."""
    from launchwatch import _sink

    previous = _sink.set_sink(sink_during)
    try:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        gradients = []
        for _ in range(2):
            optimizer.zero_grad()
            model(x).square().mean().backward()
            gradients.append([p.grad.clone() for p in model.parameters()])
            optimizer.step()
        return gradients
    finally:
        _sink.set_sink(previous)


@pytest.mark.parametrize("make", [
    lambda: nn.Sequential(nn.Linear(4, 4), nn.ReLU(inplace=True), nn.Linear(4, 2)),
    lambda: nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(inplace=True)),
], ids=["linear-relu-inplace", "batchnorm-relu-inplace"])
def test_an_in_place_op_after_a_watched_module_trains_with_the_gradients_it_has_unwatched(
        hooks, make):
    from launchwatch import _sink

    torch.manual_seed(0)
    watched = make()
    unwatched = copy.deepcopy(watched)
    x = torch.randn(2, 3, 6, 6) if isinstance(watched[0], nn.Conv2d) else torch.randn(3, 4)
    expected = train_twice(unwatched, x, _sink.NullSink())
    got = train_twice(watched, x, hooks)
    assert "backward/Sequential/2" in hooks.paths()
    for step_got, step_expected in zip(got, expected):
        for gradient, reference in zip(step_got, step_expected):
            assert torch.equal(gradient, reference)


def test_an_in_place_module_and_the_module_before_it_each_have_their_backward_scope(hooks):
    net = nn.Sequential(nn.Linear(4, 4), nn.ReLU(inplace=True))
    loss = net(inputs()).sum()
    hooks.opened.clear()
    loss.backward()
    assert hooks.paths() == ["backward", "backward/[loss]", "backward/Sequential",
                             "backward/Sequential/1", "backward/Sequential/0"]


def test_a_module_returning_its_input_takes_no_backward_from_the_module_before_it(hooks):
    net = nn.Sequential(nn.Linear(4, 4), nn.Identity())
    loss = net(inputs()).sum()
    hooks.opened.clear()
    loss.backward()
    assert "backward/Sequential/0" in hooks.paths()
    assert "backward/Sequential/1" not in hooks.paths()


def innermost_range_when_accumulated(sink, parameter, seen):
    """Records the calling thread's innermost open range when `parameter`'s gradient reaches
    its AccumulateGrad node (a tensor hook on a leaf runs just before it)."""

    def record(grad):
        stack = sink._stack()
        seen.append("/".join(stack[-1]) if stack else "")

    parameter.register_hook(record)


def test_a_parameters_gradient_is_accumulated_inside_its_modules_backward_scope(hooks):
    net = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    seen = []
    innermost_range_when_accumulated(hooks, net[2].weight, seen)
    innermost_range_when_accumulated(hooks, net[0].weight, seen)
    net(inputs()).sum().backward()
    assert seen == ["backward/Sequential/2", "backward/Sequential/0"]


def test_a_weight_shared_by_two_modules_is_accumulated_in_the_last_ones_backward(hooks):
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(10, 4)
            self.head = nn.Linear(4, 10, bias=False)
            self.head.weight = self.embed.weight

        def forward(self, ids):
            return self.head(self.embed(ids))

    net = Tied()
    seen = []
    innermost_range_when_accumulated(hooks, net.embed.weight, seen)
    net(torch.tensor([1, 2, 3])).sum().backward()
    assert seen == ["backward/Tied/embed"]


def test_a_loss_computed_inside_the_root_module_is_the_root_modules_backward(hooks):
    class WithLoss(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x, y):
            logits = self.fc(x)
            # A model output as transformers returns it: a dict, the loss beside the logits.
            return {"loss": nn.functional.cross_entropy(logits, y), "logits": logits}

    output = WithLoss()(inputs(), torch.tensor([0, 1, 1]))
    hooks.opened.clear()
    output["loss"].backward()
    assert hooks.paths() == ["backward", "backward/WithLoss", "backward/WithLoss/fc"]


def test_a_loss_computed_outside_the_model_is_under_backward_loss(hooks):
    net = nn.Linear(4, 2)
    loss = nn.functional.mse_loss(net(inputs()), torch.zeros(3, 2))
    hooks.opened.clear()
    loss.backward()
    assert hooks.paths() == ["backward", "backward/[loss]", "backward/Linear"]


def backward_paths_of_net(sink, forward=lambda net, x: net(x)):
    """The scopes a backward of Net opens, the model run with the hooks in use (by `forward`)."""
    loss = forward(Net(), inputs(requires_grad=True)).sum()
    sink.opened.clear()
    loss.backward()
    return sink.paths()


@pytest.fixture
def handles_made(monkeypatch):
    """Counts the RemovableHandles torch makes (its register_prehook makes one a hook)."""
    made = []

    class Counted(torch.utils.hooks.RemovableHandle):
        def __init__(self, *args, **kwargs):
            made.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(torch.utils.hooks, "RemovableHandle", Counted)
    return made


def test_a_graph_nodes_hook_goes_on_without_a_handle_and_scopes_backward(hooks, handles_made):
    assert "backward/Net/layer1/0/conv1" in backward_paths_of_net(hooks)
    assert lwtorch._direct_route == [True]
    assert len(handles_made) == 1  # backward()'s own hook on the loss, removed as it returns


def test_a_graph_nodes_hook_leaves_the_programs_tensors_without_hooks_and_theirs_run(hooks):
    net = Net()
    hidden = []
    net.layer1.register_forward_hook(lambda module, args, result: hidden.append(result))
    out = net(inputs(requires_grad=True))
    assert out._backward_hooks is None and hidden[0]._backward_hooks is None
    seen = []
    out.register_hook(lambda grad: seen.append(grad.shape))
    hooks.opened.clear()
    out.sum().backward()
    assert seen == [torch.Size([3, 2])]
    assert "backward/Net/fc" in hooks.paths()


def test_a_module_whose_output_a_custom_autograd_function_made_has_its_backward_scope(hooks):
    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    class Custom(nn.Module):
        def forward(self, x):
            return Double.apply(x)

    net = nn.Sequential(nn.Linear(4, 4), Custom(), nn.Linear(4, 2))
    loss = net(inputs(requires_grad=True)).sum()
    hooks.opened.clear()
    loss.backward()
    paths = hooks.paths()
    assert paths.index("backward/Sequential/2") < paths.index("backward/Sequential/1") < \
        paths.index("backward/Sequential/0")
    assert lwtorch._direct_route == [True]


def test_where_torch_refuses_the_direct_route_node_hooks_go_through_register_prehook_alike(
        hooks, handles_made):
    expected = backward_paths_of_net(hooks)
    refused = lwtorch._thread.carrier
    lwtorch._thread.carrier = object()  # takes no _backward_hooks: the route fails at once
    try:
        assert backward_paths_of_net(hooks) == expected
        assert lwtorch._direct_route == [False]
        assert len(handles_made) > 2  # the loss's, both runs', and a node's at least
    finally:
        lwtorch._direct_route[0] = True
        lwtorch._thread.carrier = refused


def test_where_no_carrier_can_be_made_node_hooks_go_through_register_prehook_alike(
        hooks, handles_made, monkeypatch):
    expected = backward_paths_of_net(hooks)
    made = lwtorch._thread.carrier

    def refused(*args, **kwargs):
        raise RuntimeError("no tensor here")

    def forward_without_empty(net, x):  # the model made; its forward can make no empty tensor
        with monkeypatch.context() as patch:
            patch.setattr(torch, "empty", refused)
            return net(x)

    lwtorch._thread.carrier = None
    try:
        assert backward_paths_of_net(hooks, forward_without_empty) == expected
        assert lwtorch._direct_route == [False]
        assert len(handles_made) > 2
    finally:
        lwtorch._direct_route[0] = True
        lwtorch._thread.carrier = made


def test_an_optimizer_step_is_under_optimizer_and_its_class_name(hooks):
    net = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    net(inputs()).sum().backward()
    hooks.opened.clear()
    optimizer.step()
    assert hooks.paths() == ["optimizer", "optimizer/SGD"]


def test_a_whole_training_step_closes_every_range_it_opened(hooks):
    net = Net()
    optimizer = torch.optim.Adam(net.parameters())
    for _ in range(2):
        with launchwatch.scope("step"):
            optimizer.zero_grad()
            nn.functional.mse_loss(net(inputs()), torch.zeros(3, 2)).backward()
            optimizer.step()
    paths = set(hooks.paths())
    assert {"step/Net/fc", "step/backward/Net/fc", "step/optimizer/Adam"} <= paths


def test_annotate_outside_launchwatch_run_installs_nothing():
    from launchwatch import _sink

    previous = _sink.set_sink(_sink.NullSink())
    try:
        net = nn.Linear(4, 2)
        assert lwtorch.annotate(net) is net
        assert len(net._forward_pre_hooks) == 0
    finally:
        _sink.set_sink(previous)


def test_annotate_refuses_what_is_not_a_module_saying_what_it_takes():
    with pytest.raises(TypeError, match="takes an nn.Module"):
        lwtorch.annotate(lambda x: x)


def test_install_refuses_an_unknown_mode():
    with pytest.raises(ValueError, match="use 'modules' or 'ops'"):
        lwtorch.install("layers")


def test_install_leaves_torchs_module_hook_registries_empty_so_its_fast_path_stays(hooks):
    """Any global module hook sends every module call down torch's slow path: the forward
    scopes come from a wrapped Module.__call__ instead."""
    module = torch.nn.modules.module
    for name in ("_global_forward_pre_hooks", "_global_forward_hooks",
                 "_global_backward_pre_hooks", "_global_backward_hooks"):
        assert not getattr(module, name, {}), name
    assert torch.nn.Module.__call__ is lwtorch._module_call[1]
    Net()(inputs())
    assert "Net/fc" in hooks.paths()


def test_a_modules_own_forward_hooks_run_inside_its_scope(hooks):
    """What a module's own hooks launch (a user's forward hook) is that module's."""
    net = Net()
    seen = []

    def own_hook(module, args, result):
        with launchwatch.scope("own_hook"):
            seen.append(module)

    handle = net.fc.register_forward_hook(own_hook)
    try:
        net(inputs())
    finally:
        handle.remove()
    assert seen == [net.fc]
    assert "Net/fc/own_hook" in hooks.paths()


def _in_a_fresh_process(script):
    """Runs `script` in a Python process of its own (nothing installed yet) with this one's path;
    returns the JSON its last line printed."""
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_annotate_in_a_process_without_install_uses_torchs_per_module_hooks():
    """annotate() alone (a program run with --torch off): its own per-module hooks name the
    model's modules and close the ranges of a forward that raised."""
    script = """
import json, sys
import torch
from torch import nn
import launchwatch.torch as lwtorch
from launchwatch import _sink
from fake_sink import FakeSink
from test_torch_hooks import Fails
sink = FakeSink()
_sink.set_sink(sink)
model = lwtorch.annotate(Fails())
try:
    model(torch.zeros(3, 4))
except RuntimeError:
    pass
nn.Linear(4, 4)(torch.zeros(3, 4))  # not annotated: no scope
print(json.dumps({"paths": sink.paths(), "open": len(sink.open_ranges())}))
"""
    result = _in_a_fresh_process(script)
    assert result["paths"] == ["Fails", "Fails/fc"]
    assert result["open"] == 0


def test_install_makes_the_carrier_so_a_first_forward_that_could_not_keeps_the_direct_route():
    """install() makes the calling thread's carrier outside any forward: a first forward that
    could make no plain tensor (here torch.empty refused; under torch.export, a fake one) still
    puts node hooks on by the direct route, and backward has its module scopes."""
    script = """
import json
import torch
import launchwatch.torch as lwtorch
from launchwatch import _sink
from fake_sink import FakeSink
from test_torch_hooks import Net, inputs
sink = FakeSink()
_sink.set_sink(sink)
assert lwtorch.install("modules") == []
net, x = Net(), inputs(requires_grad=True)
empty = torch.empty
def refused(*args, **kwargs):
    raise RuntimeError("no tensor here")
torch.empty = refused
try:
    loss = net(x).sum()
finally:
    torch.empty = empty
loss.backward()
print(json.dumps({"direct": lwtorch._direct_route[0], "paths": sink.paths(),
                  "open": len(sink.open_ranges())}))
"""
    result = _in_a_fresh_process(script)
    assert result["direct"] is True
    assert "backward/Net/layer1/0/conv1" in result["paths"]
    assert result["open"] == 0


class Fails(nn.Module):
    """A model whose forward raises after its first module ran."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        self.fc(x)
        raise RuntimeError("bad batch")


def test_annotate_names_one_models_modules_and_closes_a_forward_that_raised(sink):
    model = lwtorch.annotate(Fails())
    with pytest.raises(RuntimeError):
        model(inputs())
    assert sink.paths() == ["Fails", "Fails/fc"]
    assert sink.open_ranges() == {}


def test_the_c_hooks_record_the_same_ranges_as_the_python_hooks(sink):
    """The C hooks (the extension's) and the Python ones (the fallback where it does not load)
    open and close the same ranges, in the same order, forward and backward, for a model with
    recursion, a module called twice, a functional op between modules and a forward that raises."""
    if lwtorch._c_hooks is None:
        pytest.skip("launchwatch._c_api was not built (no Python headers at configure time)")
    from fake_sink import FakeSink
    from launchwatch import _sink

    class Tricky(nn.Module):
        def __init__(self):
            super().__init__()
            self.shared = nn.Linear(4, 4)
            self.block = Block()
            self.fails = nn.Linear(4, 4)

        def forward(self, x, depth=1, fail=False):
            x = self.shared(self.shared(x)).relu()
            x = self.block(x) + x
            if fail:
                return self.fails(x.view(-1))  # 12 features into a Linear(4, 4): raises
            return x if depth == 0 else self(x, depth - 1)

    def record(via):
        torch.manual_seed(0)
        model = Tricky()
        recording = FakeSink()
        _sink.set_sink(recording)
        previous = lwtorch._use_hooks(via)
        try:
            with launchwatch.scope("step"):
                model(inputs(requires_grad=True)).sum().backward()
                with pytest.raises(RuntimeError):
                    model(inputs(), fail=True)
            model(inputs()).square().mean().backward()
        finally:
            lwtorch._use_hooks(previous)
            _sink.set_sink(sink)
        assert recording.open_ranges() == {}
        return recording.opened, recording.closed

    assert lwtorch.install("modules") == []
    c_opened, c_closed = record("c")
    python_opened, python_closed = record("python")
    assert ("step", "backward", "Tricky", "block", "conv1") in [p for _, p in c_opened]
    assert c_opened == python_opened
    assert c_closed == python_closed


def test_suspended_hooks_leave_a_module_call_unrecorded_and_record_again_after(hooks):
    net = nn.Linear(4, 4)
    with pytest.raises(RuntimeError), lwtorch._hooks_suspended():
        net(inputs())
        raise RuntimeError("the hooks come back also after an exception")
    assert hooks.paths() == []
    net(inputs())
    assert hooks.paths() == ["Linear"]


def _dynamo():
    dynamo = pytest.importorskip("torch._dynamo", reason="this torch has no Dynamo (torch < 2.0)")
    dynamo.reset()
    return dynamo


def test_a_compiled_function_calling_watched_modules_compiles_without_a_graph_break(hooks):
    """Dynamo traces the wrapped Module.__call__ of each module a compiled function calls: the
    wrapper's check makes it torch's call alone, so nothing breaks the graph, and the compiled
    code records no module scope of its own."""
    dynamo = _dynamo()
    net = Net()

    def step(x):
        return net(x).relu().sum()

    explained = dynamo.explain(step)(inputs())
    assert explained.graph_break_count == 0, explained.break_reasons
    expected = step(inputs())
    compiled = torch.compile(step, backend="eager")
    hooks.opened.clear()
    assert torch.allclose(compiled(inputs()), expected)
    assert hooks.paths() == []


def test_a_compiled_module_is_one_scope_and_compiles_as_it_would_unwatched(hooks):
    dynamo = _dynamo()
    net = Net()
    compiled = torch.compile(net, backend="eager")
    hooks.opened.clear()
    compiled(inputs())
    assert hooks.paths() == ["Net [compiled]"]
    assert torch.nn.Module.__call__ is lwtorch._module_call[1]  # put back after the call
    assert dynamo.explain(net)(inputs()).graph_break_count == 0


def test_install_after_annotate_still_makes_every_module_a_scope():
    """annotate() first (on torch < 2.1 it wraps Module.__call__ to close raised calls), then
    install(): modules annotate() never saw are scopes too, and nothing is left open."""
    script = """
import json
import torch
from torch import nn
import launchwatch.torch as lwtorch
from launchwatch import _sink
from fake_sink import FakeSink
sink = FakeSink()
_sink.set_sink(sink)
annotated = lwtorch.annotate(nn.Sequential(nn.Linear(4, 4)))
assert lwtorch.install("modules") == []
nn.Linear(4, 4)(torch.zeros(3, 4))
annotated(torch.zeros(3, 4))
print(json.dumps({"paths": sink.paths(), "open": len(sink.open_ranges())}))
"""
    result = _in_a_fresh_process(script)
    assert result["paths"] == ["Linear", "Sequential", "Sequential/0"]
    assert result["open"] == 0


def where_the_route_could_run(monkeypatch, c_api):
    """install()'s state where the sequence route could start: the C hooks in use, the sink the
    extension's own, and `c_api` as the package's extension."""

    class ExtensionSink:
        via = "extension"

    hooks = object()
    monkeypatch.setattr(lwtorch, "_c_hooks", hooks)
    monkeypatch.setattr(lwtorch, "_hooks", hooks)
    monkeypatch.setattr(lwtorch._sink, "get", ExtensionSink)
    monkeypatch.setattr(launchwatch, "_c_api", c_api, raising=False)


@pytest.mark.parametrize("asked, tried", [(None, True), ("sequence", True), ("node-hooks", False)])
def test_the_sequence_route_is_tried_by_default_and_node_hooks_are_used_where_asked_for(
        monkeypatch, asked, tried):
    """Where the route could run (the C hooks in use, the extension's sink), install() tries it
    unless LAUNCHWATCH_TORCH_BACKWARD=node-hooks asks for graph-node hooks instead."""
    setups = []

    class FakeCApi:  # torch's functions not found: the route does not start either way
        @staticmethod
        def sequence_setup(library):
            setups.append(library)
            return False

    where_the_route_could_run(monkeypatch, FakeCApi)
    monkeypatch.setattr(torch.version, "cuda", "13.0", raising=False)  # a torch with a GPU
    if asked is None:
        monkeypatch.delenv("LAUNCHWATCH_TORCH_BACKWARD", raising=False)
    else:
        monkeypatch.setenv("LAUNCHWATCH_TORCH_BACKWARD", asked)
    assert lwtorch._start_sequence_route() is False
    assert len(setups) == (1 if tried else 0)


def test_a_torch_without_a_gpu_keeps_the_node_hooks(monkeypatch):
    """The route opens its ranges at kernel launches, which a torch built for the CPU alone makes
    none of: there the graph-node hooks are kept, so a CPU program's backward has its scopes."""
    setups = []

    class FakeCApi:
        @staticmethod
        def sequence_setup(library):
            setups.append(library)
            return True

    where_the_route_could_run(monkeypatch, FakeCApi)
    monkeypatch.setattr(torch.version, "cuda", None, raising=False)
    monkeypatch.setattr(torch.version, "hip", None, raising=False)
    monkeypatch.delenv("LAUNCHWATCH_TORCH_BACKWARD", raising=False)
    assert lwtorch._start_sequence_route() is False
    assert setups == []


@pytest.mark.parametrize("measured, started_with", [(48, 48), (None, 0), (RuntimeError, 0)])
def test_the_route_starts_without_the_makers_offset_where_it_cannot_be_measured(
        monkeypatch, measured, started_with):
    """The offset of a node's maker is measured after its number's; where that finds no single
    word (None) or fails (a torch without thread ids), the route still starts, told no offset (0:
    every node taken for the forward thread's)."""
    starts = []

    class FakeCApi:
        @staticmethod
        def sequence_setup(library):
            return True

        @staticmethod
        def sequence_start(offset, thread_offset):
            starts.append((offset, thread_offset))
            return True

    def thread_offset(c_api):
        if measured is RuntimeError:
            raise RuntimeError("sequence_thread_id: call sequence_setup(...) first")
        return measured

    where_the_route_could_run(monkeypatch, FakeCApi)
    monkeypatch.setattr(torch.version, "cuda", "13.0", raising=False)  # a torch with a GPU
    monkeypatch.setattr(lwtorch, "_sequence_offset", lambda c_api: 24)
    monkeypatch.setattr(lwtorch, "_sequence_thread_offset", thread_offset)
    monkeypatch.setattr(lwtorch, "_sequence_route", [None])
    monkeypatch.delenv("LAUNCHWATCH_TORCH_BACKWARD", raising=False)
    assert lwtorch._start_sequence_route() is True
    assert starts == [(24, started_with)]


def test_a_nodes_number_and_its_makers_thread_are_found_in_it_where_torch_gives_the_running_node():
    """The route's two measurements on this torch's own nodes (torch 2; torch 1.13 gives no
    running node, so the test skips there): where a node keeps its sequence number, and where the
    id of the thread that made it, three words further on as torch 2 lays a node out."""
    if lwtorch._c_hooks is None:
        pytest.skip("launchwatch._c_api was not built (no Python headers at configure time)")
    if int(torch.__version__.split(".")[0]) < 2:
        pytest.skip(f"torch {torch.__version__} gives no running node (torch 2 does)")
    from launchwatch import _c_api

    _c_api.sequence_setup(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
    offset = lwtorch._sequence_offset(_c_api)
    thread_offset = lwtorch._sequence_thread_offset(_c_api)
    assert offset is not None and thread_offset is not None
    # torch 2's Node: sequence_nr_, topological_nr_, has_parent_ (a bool, padded), thread_id_.
    assert thread_offset == offset + 24
