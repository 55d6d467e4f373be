"""`launchwatch run --torch` end to end on the CPU: no CUDA, but the Python package's ranges reach
the injection (NVTX_INJECTION64_PATH), so the modules are scopes of the trace."""

import functools
import importlib.util
import json
import os
import subprocess
import sys

import pytest

LAUNCHWATCH = os.environ.get("LAUNCHWATCH_PROGRAM")
HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = sys.executable  # the programs that need no torch
DEBIAN_PYTHON = "/usr/bin/python3"

pytestmark = pytest.mark.skipif(
    not LAUNCHWATCH, reason="LAUNCHWATCH_PROGRAM (the built launchwatch) is not set")



@functools.lru_cache(maxsize=None)
def torch_python():
    """A Python that imports torch, for the training script: the one running these tests
    (LAUNCHWATCH_TEST_PYTHON), else Debian's (python3-torch); the test skips, saying so, where
    neither has torch."""
    if importlib.util.find_spec("torch") is not None:
        return sys.executable
    if os.path.exists(DEBIAN_PYTHON) and os.path.realpath(DEBIAN_PYTHON) != os.path.realpath(
            sys.executable):
        done = subprocess.run([DEBIAN_PYTHON, "-c", "import torch"], capture_output=True,
                              timeout=300)
        if done.returncode == 0:
            return DEBIAN_PYTHON
    pytest.skip(f"no Python here imports torch: not {sys.executable} (the tests' Python; set it "
                f"with -DLAUNCHWATCH_TEST_PYTHON=...), nor {DEBIAN_PYTHON} (python3-torch)")


SHOW_ENVIRONMENT = ("import os; "
                    "print(os.environ.get('PYTHONPATH'), os.environ.get('LAUNCHWATCH_TORCH'))")


def launchwatch_run(tmp_path, *arguments, **variables):
    environment = dict(os.environ)
    environment.update(variables)
    done = subprocess.run([LAUNCHWATCH, "run", "--out", str(tmp_path / "report"), *arguments],
                          env=environment, capture_output=True, text=True, timeout=300)
    return done


def scope_paths(trace_file):
    with open(trace_file) as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    return {e["args"]["path"] for e in events if e.get("cat") == "scope"}


def test_an_unmodified_training_script_has_its_modules_backward_and_optimizer_as_scopes(tmp_path):
    # On the CPU the graph-node hooks open the backward scopes: the sequence route opens them at
    # kernel launches, which a CPU step makes none of (its own tests fake them).
    done = launchwatch_run(tmp_path, "--", torch_python(), os.path.join(HERE, "tiny_train.py"),
                           LAUNCHWATCH_TORCH_BACKWARD="node-hooks")
    assert done.returncode == 0, done.stderr
    assert "trained" in done.stdout
    paths = scope_paths(tmp_path / "report" / "trace.json")
    assert {"TinyNet", "TinyNet/encoder", "TinyNet/encoder/0", "TinyNet/encoder/1",
            "TinyNet/head"} <= paths
    assert {"backward", "backward/TinyNet", "backward/TinyNet/head",
            "backward/TinyNet/encoder/0"} <= paths
    assert {"optimizer", "optimizer/SGD"} <= paths


def test_ops_mode_adds_a_scope_per_aten_op_inside_its_module(tmp_path):
    done = launchwatch_run(tmp_path, "--torch", "ops", "--", torch_python(),
                           os.path.join(HERE, "tiny_train.py"))
    assert done.returncode == 0, done.stderr
    paths = scope_paths(tmp_path / "report" / "trace.json")
    assert any(p.startswith("TinyNet/head/aten::") for p in paths), sorted(paths)[:20]


def test_torch_off_leaves_the_programs_environment_untouched(tmp_path):
    done = launchwatch_run(tmp_path, "--torch", "off", "--", PYTHON, "-c", SHOW_ENVIRONMENT,
                           PYTHONPATH="/my/own")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "/my/own None"


def test_a_python_program_gets_the_package_first_on_its_path_and_keeps_its_own_pythonpath(tmp_path):
    done = launchwatch_run(tmp_path, "--", PYTHON, "-c", SHOW_ENVIRONMENT, PYTHONPATH="/my/own")
    assert done.returncode == 0, done.stderr
    python_path, mode = done.stdout.splitlines()[0].split()
    folders = python_path.split(":")
    assert folders[0].endswith("launchwatch/_site")
    assert os.path.isfile(os.path.join(folders[1], "launchwatch", "__init__.py"))
    assert folders[2:] == ["/my/own"]
    assert mode == "modules"


def test_a_script_with_a_python_shebang_is_a_python_program(tmp_path):
    script = tmp_path / "script"
    script.write_text(f"#!{PYTHON}\n{SHOW_ENVIRONMENT}\n")
    script.chmod(0o755)
    done = launchwatch_run(tmp_path, "--", str(script))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].endswith(" modules")


def test_a_program_that_is_not_python_is_left_untouched_by_auto(tmp_path):
    show = "echo \"$PYTHONPATH\" \"${LAUNCHWATCH_TORCH:-None}\""
    done = launchwatch_run(tmp_path, "--", "/bin/sh", "-c", show,
                           PYTHONPATH="/my/own")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "/my/own None"


def test_an_unknown_torch_mode_is_refused_naming_the_choices(tmp_path):
    done = launchwatch_run(tmp_path, "--torch", "layers", "--", PYTHON, "-c", "pass")
    assert done.returncode != 0
    assert "modules" in done.stderr and "layers" in done.stderr


def test_the_program_and_the_python_package_give_the_projects_version_from_one_place():
    """CMake's project() version is the one source: the program's --version (config.hpp) and the
    package's __version__ (_version.py) are both written from it."""
    import launchwatch

    done = subprocess.run([LAUNCHWATCH, "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"launchwatch {launchwatch.__version__} ("), done.stdout
    assert launchwatch.__version__ == os.environ.get("LAUNCHWATCH_VERSION", launchwatch.__version__)


def launches_by_path(scopes, prefix="", found=None):
    """{scope path: the kernel launches directly in it} of summary.json's scope tree."""
    found = {} if found is None else found
    for node in scopes:
        if node.get("kind") != "scope":
            continue
        path = prefix + node["name"]
        kernels = [c for c in node.get("children", []) if c.get("kind") == "kernel"]
        found[path] = found.get(path, 0) + sum(c["launches"] for c in kernels)
        launches_by_path(node.get("children", []), path + "/", found)
    return found


def sequence_train(tmp_path, *mode):
    """sequence_train.py (in `mode`) under `launchwatch run`: the JSON it printed."""
    done = launchwatch_run(tmp_path, "--", torch_python(), os.path.join(HERE, "sequence_train.py"),
                           *mode, PYTHONPATH=HERE)
    assert done.returncode == 0, done.stderr
    return json.loads(next(line for line in done.stdout.splitlines() if line.startswith("{")))


def test_the_sequence_route_opens_each_backward_launch_in_the_module_whose_forward_made_its_node(
        tmp_path):
    """The route on a fake running node (sequence_train.py): the forward calls recorded with
    nested ranges of sequence numbers, and launches in backward under the module that made the
    node, on another thread than backward()'s, below its `backward`; `[loss]` for a node made
    after the model; a forward on a second thread turns the route off for good; past 131,072
    calls the older half goes, each kept call whole."""
    result = sequence_train(tmp_path)
    calls = {"/".join(path): (begin, end) for begin, end, path in result["calls"]}
    assert {"TinyNet", "TinyNet/encoder", "TinyNet/encoder/0", "TinyNet/encoder/1",
            "TinyNet/head"} <= set(calls)
    root, encoder, head = calls["TinyNet"], calls["TinyNet/encoder"], calls["TinyNet/head"]
    assert root[0] <= encoder[0] < encoder[1] <= head[0] < head[1] <= root[1]
    paths = scope_paths(tmp_path / "report" / "trace.json")
    backward = {p for p in paths if p.startswith("backward")}
    assert backward == {"backward", "backward/TinyNet", "backward/TinyNet/head",
                        "backward/TinyNet/encoder", "backward/TinyNet/encoder/0",
                        "backward/TinyNet/encoder/1", "backward/[loss]"}
    assert result["on"] is True
    assert result["on_after_second_thread"] is False
    assert result["last_hook_removed"] is True
    assert 65536 <= result["kept"]["count"] < 131072, "the older half of the calls is dropped"
    assert result["kept"]["whole"]


def test_the_sequence_routes_ranges_on_the_thread_that_finishes_a_pass_close_as_it_ends(tmp_path):
    """Under the route, backward() queues the engine's end-of-pass callback once a pass (the engine
    runs it: on the CPU on backward()'s thread), and where it runs on the thread whose launches
    opened the pass's ranges (CUDA's autograd thread; sequence_train.py --pass-ends runs it there
    too), they close then: every backward scope on that thread ends before the next optimizer
    step begins, rather than at the next pass's first launch."""
    result = sequence_train(tmp_path, "--pass-ends")
    assert result == {"on": True, "queued": 2, "ran": 2, "by_engine": 2}
    with open(tmp_path / "report" / "trace.json") as f:
        events = json.load(f)
    scopes = [e for e in (events["traceEvents"] if isinstance(events, dict) else events)
              if e.get("cat") == "scope"]
    steps = [e["ts"] for e in scopes if e["args"]["path"] == "optimizer"]
    caller = {e["tid"] for e in scopes if e["args"]["path"] == "optimizer"}
    routed = [e for e in scopes if e["tid"] not in caller]
    assert len(steps) == 2 and {e["args"]["path"] for e in routed} >= {
        "backward/TinyNet/head", "backward/[loss]"}
    for scope in routed:
        step = next(ts for ts in steps if ts > scope["ts"])
        assert scope["ts"] + scope["dur"] <= step, scope["args"]["path"]


def test_a_node_made_on_another_thread_than_the_forwards_opens_as_a_double_backward(tmp_path):
    """Under the route a node's number is its maker thread's count, so one made on the autograd
    thread during a backward (create_graph=True) may carry a number inside some recorded forward
    call; the node's maker, read from it, is not the forward thread (sequence_train.py
    --double-backward): made by the thread running it, its launch opens `backward/[double
    backward]`, made by a third thread `backward/[made on another thread]`, not that call's scope,
    while a node the forward made keeps its module's; before any forward is recorded every node
    is taken for the forward thread's (`[loss]`)."""
    result = sequence_train(tmp_path, "--double-backward")
    assert result["on"] is True
    paths = scope_paths(tmp_path / "report" / "trace.json")
    assert {"backward/TinyNet/head", "backward/[double backward]",
            "backward/[made on another thread]", "backward/[loss]"} <= paths
    assert "backward/TinyNet/encoder/0" not in paths


def test_a_gradient_penaltys_second_backward_on_cuda_has_its_own_scope(tmp_path):
    """On CUDA (skipped without a GPU): a step whose backward runs the nodes of a gradient taken
    with create_graph=True (double_backward_train.py) puts their kernels in `backward/[double
    backward]`, the forward's nodes' kernels in their modules' backward scopes."""
    python = torch_python()
    cuda = subprocess.run([python, "-c", "import torch; print(torch.cuda.is_available())"],
                          capture_output=True, text=True, timeout=300)
    if cuda.stdout.strip() != "True":
        pytest.skip("no CUDA device for torch here")
    done = launchwatch_run(tmp_path, "--", python, os.path.join(HERE, "double_backward_train.py"))
    assert done.returncode == 0, done.stderr
    assert "trained" in done.stdout
    with open(tmp_path / "report" / "summary.json") as f:
        launches = launches_by_path(json.load(f)["scopes"])
    assert launches.get("backward/[double backward]", 0) > 0, sorted(launches)
    assert launches.get("backward/Sequential/0", 0) > 0, sorted(launches)


def test_a_forward_recomputed_in_backward_opens_inside_its_scope_and_keeps_the_sequence_route(
        tmp_path):
    """Activation checkpointing under the route (sequence_train.py --checkpoint): a forward
    recomputed on the thread running backward, inside a graph node of the pass, opens that node's
    scope first (`[loss]`: a launch inside the recompute leaves its ranges open), is recorded on
    that thread, not in the route's calls, each module at its top with the path its forward had,
    and opens as `[recompute]` in that module's backward scope; a backward() of it on that thread
    opens each of its nodes' launches in the backward scope of the recomputed call that made it
    (numbered by that thread's own count), and the outer pass goes on under the route."""
    result = sequence_train(tmp_path, "--checkpoint")
    assert result["on"] is True
    assert result["hooks_set"] == 1 and not result["hook_removed"]
    assert result["calls_after"] == result["calls_before"], "not in the route's calls"
    assert result["recomputed"] == ["TinyNet/encoder", "TinyNet/encoder/0", "TinyNet/encoder/1",
                                    "TinyNet/head"]
    paths = scope_paths(tmp_path / "report" / "trace.json")
    assert {p for p in paths if p.startswith("backward")} == {
        "backward", "backward/TinyNet", "backward/TinyNet/head", "backward/[loss]",
        "backward/TinyNet/encoder/[recompute]", "backward/TinyNet/encoder/[recompute]/0",
        "backward/TinyNet/encoder/[recompute]/1", "backward/TinyNet/head/[recompute]",
        "backward/[loss]/backward", "backward/TinyNet/encoder/1", "backward/TinyNet/encoder",
        "backward/TinyNet/encoder/0"}


def test_a_forward_on_another_thread_during_backward_but_in_no_node_of_it_turns_the_route_off(
        tmp_path):
    """Only a forward made inside a graph node the pass runs is a recompute; one beside the pass
    on a thread of its own (sequence_train.py --concurrent) numbers its nodes by that thread's
    count, so the route goes off for good, as for any forward on a second thread."""
    result = sequence_train(tmp_path, "--concurrent")
    assert result["on"] is False


def test_a_backward_called_on_another_thread_than_the_forwards_is_resolved_from_its_calls(
        tmp_path):
    """backward() on a thread of its own, not in any graph node (sequence_train.py --elsewhere):
    its nodes carry the forward thread's numbers, so a launch in `head`'s node opens
    `backward/TinyNet/head`, and the route stays on."""
    result = sequence_train(tmp_path, "--elsewhere")
    assert result["on"] is True
    paths = scope_paths(tmp_path / "report" / "trace.json")
    assert "backward/TinyNet/head" in paths


def test_a_backward_inside_a_node_with_no_recompute_opens_inside_that_nodes_scope(tmp_path):
    """torch.autograd.grad called inside `head`'s node, on another thread than backward()'s, with
    no recompute (sequence_train.py --grad-inside): its nodes carry the forward thread's numbers,
    so its launch in a second forward's `encoder/0` node opens inside the outer pass's ranges,
    below its own `backward`; the outer pass's ranges stay open under it."""
    result = sequence_train(tmp_path, "--grad-inside")
    assert result["on"] is True
    paths = scope_paths(tmp_path / "report" / "trace.json")
    assert "backward/TinyNet/head/backward/TinyNet/encoder/0" in paths
    assert not any(p.startswith("TinyNet/encoder") for p in paths - {
        "TinyNet/encoder", "TinyNet/encoder/0", "TinyNet/encoder/1"})
