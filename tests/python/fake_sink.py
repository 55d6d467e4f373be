"""The fake NVTX sink: records the ranges launchwatch's Python package opens, per thread, with the
same depth and push-under rules as the injection's C API (src/inject/c_api.hpp), so tests read
back each range's whole path and the thread it was opened on."""

import threading


class FakeSink:
    active = True

    def __init__(self):
        self._lock = threading.Lock()
        self._stacks = {}  # thread id -> [path tuple per open range]
        self._paths = {0: ()}  # path id -> path tuple
        self._ids = {(): 0}
        self.opened = []  # (thread id, path) for every range opened, in order
        self.closed = []  # (thread id, path) for every range closed, in order

    def _id(self, path):
        with self._lock:
            if path not in self._ids:
                self._ids[path] = len(self._paths)
                self._paths[self._ids[path]] = path
            return self._ids[path]

    def _stack(self):
        return self._stacks.setdefault(threading.get_ident(), [])

    def _open(self, path):
        stack = self._stack()
        stack.append(path)
        self.opened.append((threading.get_ident(), path))
        return len(stack) - 1

    def push(self, name):
        stack = self._stack()
        parent = stack[-1] if stack else ()
        return self._open(parent + (name.decode(),))

    def push_under(self, parent, name):
        return self._open(self._paths[parent] + (name.decode(),))

    def pop_to(self, depth):
        stack = self._stack()
        depth = max(depth, 0)
        while len(stack) > depth:
            self.closed.append((threading.get_ident(), stack.pop()))
        return len(stack)

    def current_path(self):
        stack = self._stack()
        return self._id(stack[-1]) if stack else 0

    def open_ranges(self):
        """Every thread's ranges still open."""
        return {thread: list(stack) for thread, stack in self._stacks.items() if stack}

    def paths(self):
        """Each opened range's path as text, in order."""
        return ["/".join(path) for _, path in self.opened]
