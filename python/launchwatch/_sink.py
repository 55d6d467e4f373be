"""Where launchwatch's ranges go: the injection library `launchwatch run` loaded, or nowhere.

A sink has five members: `active` (whether ranges go anywhere), `push(name: bytes) -> depth`,
`push_under(parent: int, name: bytes) -> depth` (a range on this thread as a child of `parent`, a
path another thread read with `current_path()`), `pop_to(depth) -> depth left` and
`current_path() -> int`. Depths count the calling thread's open `launchwatch` ranges; closing to a
depth rather than one range at a time means a hook that never ran (an exception inside a forward)
cannot leave a range open. Tests install a recording sink with `set_sink` (the fake NVTX sink).
The injection's two sinks also say `via` which way they call it ("extension" or "ctypes"), for
benchmarks. The C hooks (_c_hooks.c) call the C API directly, not through the sink's members,
while the process's sink is the ExtensionSink that `_extension_sink` made (set_native_sink).
"""

import ctypes
import os


class NullSink:
    """No tool listens: every call returns at once and nothing is recorded."""

    active = False
    via = None

    def push(self, name):
        return 0

    def push_under(self, parent, name):
        return 0

    def pop_to(self, depth):
        return 0

    def current_path(self):
        return 0


class ExtensionSink:
    """The injection library's C API (src/inject/c_api.hpp) through launchwatch._c_api, the
    package's C extension: each call a built-in function's (tens of nanoseconds), where ctypes
    costs about half a microsecond (docs/benchmarks.md). Ranges as InjectionSink's."""

    active = True
    via = "extension"

    def __init__(self, module):
        # The built-in functions themselves, so a hook's call is one C call.
        self.push = module.push
        self.push_under = module.push_under
        self.pop_to = module.pop_to
        self.current_path = module.current_path


class InjectionSink:
    """The injection library's C API (src/inject/c_api.hpp), through ctypes: each range is a
    range on the NVTX domain `launchwatch`, a scope of the run's report. The fallback where the
    C extension (ExtensionSink) does not load."""

    active = True
    via = "ctypes"

    def __init__(self, library):
        push = library.launchwatch_range_push
        push.argtypes = [ctypes.c_char_p]
        push.restype = ctypes.c_int
        push_under = library.launchwatch_range_push_under
        push_under.argtypes = [ctypes.c_uint32, ctypes.c_char_p]
        push_under.restype = ctypes.c_int
        pop_to = library.launchwatch_range_pop_to
        pop_to.argtypes = [ctypes.c_int]
        pop_to.restype = ctypes.c_int
        current_path = library.launchwatch_current_path
        current_path.argtypes = []
        current_path.restype = ctypes.c_uint32
        # The foreign functions themselves, so a hook's call is one ctypes call.
        self.push = push
        self.push_under = push_under
        self.pop_to = pop_to
        self.current_path = current_path


def _extension_sink(path):
    """An ExtensionSink on the library at `path`, or None where the extension does not load (not
    built, a Python older than 3.10) or finds no C API there."""
    try:
        from . import _c_api

        _c_api.load(path)
        sink = ExtensionSink(_c_api)
        _c_api.set_native_sink(sink)  # the C hooks call the C API directly while it is current
        return sink
    except Exception:  # whatever kept it from loading, ctypes is the way left
        return None


def _injection_sink():
    """The sink of the injection `launchwatch run` put into this process, or None: only under
    `run` (LAUNCHWATCH_RUN_OUT is set), only a library that has the C API, never an exception.
    The C extension's where it loads, else ctypes'."""
    if not os.environ.get("LAUNCHWATCH_RUN_OUT"):
        return None
    path = os.environ.get("NVTX_INJECTION64_PATH")
    if not path:
        return None
    try:
        library = ctypes.CDLL(path)
        attach = library.launchwatch_attach
        attach.restype = ctypes.c_int
        version = library.launchwatch_c_api_version
        version.restype = ctypes.c_int
        if version() != 1:
            return None
        attach()  # starts the report, as an NVTX module's first call would
        return _extension_sink(path) or InjectionSink(library)
    except (OSError, AttributeError):
        return None


current = None  # the process's sink once looked for: hooks read `current or get()`


def get():
    """The process's sink (looked for once)."""
    global current
    if current is None:
        current = _injection_sink() or NullSink()
    return current


def set_sink(sink):
    """Makes `sink` the process's sink (tests: a recording one); returns the one it replaces.
    Hooks read the sink when they run, so it applies to hooks already installed."""
    global current
    previous = current
    current = sink
    return previous
