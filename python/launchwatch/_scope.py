"""launchwatch.scope: a named range, as a context manager or a decorator."""

import contextlib

from . import _sink


class scope(contextlib.ContextDecorator):
    """Names what the calling thread does inside it: a scope of `launchwatch run`'s report (an
    NVTX range on the domain `launchwatch`), nested with the program's other NVTX ranges and
    the PyTorch module scopes.

        with launchwatch.scope("data"):
            ...

        @launchwatch.scope("evaluate")
        def evaluate(model): ...

    The name is interned for the life of the process: don't put an unbounded set of values (a step
    counter) in it. Outside `launchwatch run` entering and leaving cost an attribute read each.
    Thread safety: a `with` block belongs to the thread that entered it; a decorated function may
    run on any threads at once (each call enters a scope of its own).
    """

    __slots__ = ("_name", "_depth")

    def __init__(self, name):
        self._name = str(name).encode("utf-8", "replace")
        self._depth = None

    def _recreate_cm(self):
        # A decorated function's every call gets a scope of its own (recursion, threads).
        return scope.__new__(scope)._from(self._name)

    def _from(self, name):
        self._name = name
        self._depth = None
        return self

    def __enter__(self):
        sink = _sink.get()
        if sink.active:
            self._depth = sink.push(self._name)
        return self

    def __exit__(self, *exc):
        if self._depth is not None:
            _sink.get().pop_to(self._depth)
            self._depth = None
        return False

    def __repr__(self):
        return f"launchwatch.scope({self._name.decode('utf-8', 'replace')!r})"
