"""launchwatch._c_api, the package's C extension: the injection's C API (src/inject/c_api.hpp) as
built-in functions, against the injection library the build made (LAUNCHWATCH_INJECTION_LIBRARY),
and _sink's choice between it and ctypes. Each test runs its program in a fresh Python, so what
one loads is not in the next one's process."""

import ctypes.util
import os
import subprocess
import sys

import pytest

import launchwatch

PACKAGE_DIR = os.path.dirname(os.path.dirname(launchwatch.__file__))
LIBRARY = os.environ.get("LAUNCHWATCH_INJECTION_LIBRARY")
EXTENSION_BUILT = any(name.startswith("_c_api.") and name.endswith(".so")
                      for name in os.listdir(os.path.dirname(launchwatch.__file__)))

pytestmark = [
    pytest.mark.skipif(not LIBRARY, reason="LAUNCHWATCH_INJECTION_LIBRARY (the built injection "
                       "library) is not set"),
    pytest.mark.skipif(not EXTENSION_BUILT, reason="launchwatch._c_api was not built (no Python "
                       "headers at configure time: Debian's python3-dev)"),
    pytest.mark.skipif(sys.version_info < (3, 10), reason="the extension is for CPython >= 3.10"),
]


def run_python(code, tmp_path, **variables):
    environment = dict(os.environ)
    environment.pop("LAUNCHWATCH_RUN_OUT", None)
    environment.pop("NVTX_INJECTION64_PATH", None)
    environment["PYTHONPATH"] = PACKAGE_DIR
    environment.update(variables)
    return subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True,
                          text=True, cwd=tmp_path, timeout=120)


def lines_of(done):
    assert done.returncode == 0, done.stderr
    return done.stdout.split("\n")[:-1]


LOADED = f"from launchwatch import _c_api\n_c_api.load({LIBRARY!r})\n"


def printing_error(statement, error):
    """Code that runs `statement` and prints the message of the `error` it raises."""
    return f"try:\n    {statement}\nexcept {error} as e:\n    print(e)\n"


def test_push_returns_each_ranges_depth_and_pop_to_what_is_left(tmp_path):
    done = run_python(LOADED + "print(_c_api.push(b'a'), _c_api.push(b'b'), _c_api.push(b'c'))\n"
                      "print(_c_api.pop_to(1), _c_api.pop_to(5), _c_api.pop_to(0))\n", tmp_path)
    assert lines_of(done) == ["0 1 2", "1 1 0"]


def test_push_under_nests_in_this_threads_depth_count(tmp_path):
    done = run_python(LOADED + "print(_c_api.push(b'a'), _c_api.push_under(0, b'b'),"
                      " _c_api.pop_to(0))\n", tmp_path)
    assert lines_of(done) == ["0 1 0"]


def test_ranges_opened_through_the_extension_are_the_ones_ctypes_sees(tmp_path):
    done = run_python(LOADED + "import ctypes\n"
                      f"library = ctypes.CDLL({LIBRARY!r})\n"
                      "_c_api.push(b'a')\n_c_api.push(b'b')\n"
                      "print(library.launchwatch_range_pop_to(1), _c_api.pop_to(0))\n", tmp_path)
    assert lines_of(done) == ["1 0"]


def test_a_range_name_that_is_not_bytes_is_refused_saying_so(tmp_path):
    done = run_python(LOADED + printing_error("_c_api.push('text')", "TypeError"), tmp_path)
    assert lines_of(done) == ["a range name is bytes, not <class 'str'>"]


def test_a_parent_path_outside_32_bits_is_refused(tmp_path):
    done = run_python(LOADED + printing_error("_c_api.push_under(1 << 40, b'x')", "OverflowError"),
                      tmp_path)
    assert lines_of(done) == ["a path id is a 32-bit unsigned integer"]


def test_a_call_before_load_says_to_load_first(tmp_path):
    done = run_python("from launchwatch import _c_api\n"
                      + printing_error("_c_api.push(b'a')", "RuntimeError"), tmp_path)
    assert lines_of(done) == ["launchwatch._c_api: call load(path) first"]


def test_loading_a_library_without_the_c_api_names_what_is_missing(tmp_path):
    libc = ctypes.util.find_library("c")
    done = run_python("from launchwatch import _c_api\n"
                      + printing_error(f"_c_api.load({libc!r})", "OSError"), tmp_path)
    (message,) = lines_of(done)
    assert "has no launchwatch_c_api_version" in message and libc in message


def test_under_run_the_sink_reaches_the_injection_through_the_extension(tmp_path):
    done = run_python("from launchwatch import _sink\nsink = _sink.get()\n"
                      "print(sink.via, sink.push(b'a'), sink.pop_to(0))\n", tmp_path,
                      LAUNCHWATCH_RUN_OUT=str(tmp_path / "report"), NVTX_INJECTION64_PATH=LIBRARY)
    assert lines_of(done) == ["extension 0 0"]


def test_without_the_extension_the_sink_reaches_the_injection_through_ctypes(tmp_path):
    done = run_python("import sys\nsys.modules['launchwatch._c_api'] = None  # cannot import\n"
                      "from launchwatch import _sink\nsink = _sink.get()\n"
                      "print(sink.via, sink.push(b'a'), sink.pop_to(0))\n", tmp_path,
                      LAUNCHWATCH_RUN_OUT=str(tmp_path / "report"), NVTX_INJECTION64_PATH=LIBRARY)
    assert lines_of(done) == ["ctypes 0 0"]


def test_under_run_the_torch_hooks_are_the_c_ones_and_open_their_ranges_in_the_injection(tmp_path):
    pytest.importorskip("torch", reason="torch is not installed for this Python (python3-torch)")
    code = ("import torch\nfrom torch import nn\nfrom launchwatch import _c_api, _sink\n"
            "import launchwatch.torch as hooks\n"
            "class Depth(nn.Module):\n"
            "    def forward(self, x):\n"
            "        print('open in forward', _c_api.pop_to(1 << 30))\n"
            "        return x * 2\n"
            "class Net(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.inner = nn.Sequential(Depth())\n"
            "    def forward(self, x):\n"
            "        return self.inner(x)\n"
            "hooks.install('modules')\n"
            "x = torch.ones(2, requires_grad=True)\n"
            "x.register_hook(lambda g: print('open in backward', _c_api.pop_to(1 << 30)))\n"
            "loss = Net()(x).sum()\n"
            "loss.backward()\n"
            "print(hooks._hooks.via, _sink.get().via, 'open after', _c_api.pop_to(1 << 30))\n")
    # The graph-node hooks: on the CPU no kernel launch would open the sequence route's ranges.
    done = run_python(code, tmp_path, LAUNCHWATCH_RUN_OUT=str(tmp_path / "report"),
                      NVTX_INJECTION64_PATH=LIBRARY, LAUNCHWATCH_TORCH_BACKWARD="node-hooks")
    # Net/inner/0 forward; backward/Net/inner/0 when x's gradient is ready (the module whose
    # inputs had no earlier node stays open until the pass ends).
    assert lines_of(done) == ["open in forward 3", "open in backward 4", "c extension open after 0"]


def test_without_the_extension_the_torch_hooks_are_the_python_ones_and_record_alike(tmp_path):
    pytest.importorskip("torch", reason="torch is not installed for this Python (python3-torch)")
    code = ("import sys\nsys.modules['launchwatch._c_api'] = None  # cannot import\n"
            f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
            "import torch\nfrom torch import nn\nfrom fake_sink import FakeSink\n"
            "from launchwatch import _sink\nimport launchwatch.torch as hooks\n"
            "sink = FakeSink()\n_sink.set_sink(sink)\nhooks.install('modules')\n"
            "nn.Sequential(nn.Linear(2, 2))(torch.ones(1, 2, requires_grad=True)).sum().backward()\n"
            "print(hooks._hooks.via, hooks._c_hooks)\nprint(' '.join(sink.paths()))\n")
    done = run_python(code, tmp_path)
    assert lines_of(done) == ["python None", "Sequential Sequential/0 backward backward/[loss] "
                              "backward/Sequential backward/Sequential/0"]
