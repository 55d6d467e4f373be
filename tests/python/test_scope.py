"""launchwatch.scope and the package itself, without torch."""

import os
import subprocess
import sys
import threading

import launchwatch


def test_the_version_is_the_projects():
    assert launchwatch.__version__ == os.environ.get("LAUNCHWATCH_VERSION", launchwatch.__version__)
    assert launchwatch.__version__.count(".") == 2


def test_a_scope_as_a_context_manager_opens_and_closes_one_range(sink):
    with launchwatch.scope("data"):
        with launchwatch.scope("decode"):
            pass
    assert sink.paths() == ["data", "data/decode"]
    assert sink.open_ranges() == {}


def test_a_scope_as_a_decorator_opens_a_range_per_call_recursion_included(sink):
    @launchwatch.scope("walk")
    def walk(n):
        return 0 if n == 0 else 1 + walk(n - 1)

    assert walk(2) == 2
    assert sink.paths() == ["walk", "walk/walk", "walk/walk/walk"]
    assert sink.open_ranges() == {}


def test_a_scope_closes_its_range_when_its_block_raises(sink):
    try:
        with launchwatch.scope("load"):
            raise KeyError("missing")
    except KeyError:
        pass
    assert sink.open_ranges() == {}


def test_a_decorated_function_on_two_threads_gets_a_range_on_each(sink):
    both_inside = threading.Barrier(2, timeout=10)

    @launchwatch.scope("work")
    def work():
        both_inside.wait()  # both threads alive at once, so their ids differ

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({thread for thread, _ in sink.opened}) == 2
    assert sink.open_ranges() == {}


def test_outside_launchwatch_run_a_scope_does_nothing_and_never_fails():
    code = (
        "import launchwatch\n"
        "from launchwatch import _sink\n"
        "with launchwatch.scope('x'):\n"
        "    pass\n"
        "print(type(_sink.get()).__name__)\n"
    )
    environment = dict(os.environ)
    environment.pop("LAUNCHWATCH_RUN_OUT", None)
    environment["PYTHONPATH"] = os.path.dirname(os.path.dirname(launchwatch.__file__))
    done = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "NullSink"


def test_under_run_a_library_without_the_c_api_leaves_the_program_unwatched():
    code = "from launchwatch import _sink\nprint(type(_sink.get()).__name__)\n"
    environment = dict(os.environ)
    environment["LAUNCHWATCH_RUN_OUT"] = "/nonexistent"
    # another tool's library: no launchwatch_attach
    environment["NVTX_INJECTION64_PATH"] = "libc.so.6"
    environment["PYTHONPATH"] = os.path.dirname(os.path.dirname(launchwatch.__file__))
    done = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "NullSink"
