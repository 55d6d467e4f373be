"""launchwatch run's sitecustomize: PyTorch's modules as scopes, with no change to the program.

`launchwatch run --torch modules|ops` puts this folder first on PYTHONPATH (and the folder holding
the `launchwatch` package after it, then the program's own PYTHONPATH) and LAUNCHWATCH_TORCH=MODE
in the environment. Python imports this file at start-up; it does three things:

1. Takes its folder off sys.path again, and runs the sitecustomize that would have run without it
   (the next one on sys.path: the program's own, or the Python installation's), as that module.
2. If the program imports torch, installs launchwatch's torch hooks once torch is imported
   (launchwatch.torch.install(MODE)); a program that never imports torch is not touched.
3. Never fails the program: a problem is said on stderr, once, and the program runs unwatched.
"""

import os
import sys


def _chain_to_the_next_sitecustomize():
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    import importlib.machinery
    import importlib.util

    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
    if spec is None or spec.loader is None:
        del sys.modules["sitecustomize"]
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


def _say(message):
    sys.stderr.write(f"launchwatch: {message}\n")


def _install(mode):
    try:
        import launchwatch.torch

        for missing in launchwatch.torch.install(mode):
            _say(f"--torch {mode}: {missing}")
    except Exception as failure:  # the program must run, watched or not
        _say(f"--torch {mode}: the torch hooks could not be installed ({failure!r}); "
             "the program runs with only its own NVTX ranges as scopes")


class _AfterTorch:
    """A meta path finder that lets torch import as usual, then installs the hooks."""

    def __init__(self, mode):
        self.mode = mode

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        import importlib.util

        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        mode = self.mode
        original_exec = loader.exec_module

        class _Loader:
            def __getattr__(self, attribute):
                return getattr(loader, attribute)

            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                original_exec(module)
                _install(mode)

        spec.loader = _Loader()
        return spec


def _watch_torch():
    mode = os.environ.get("LAUNCHWATCH_TORCH", "")
    if mode not in ("modules", "ops"):
        return
    if "torch" in sys.modules:
        _install(mode)
    else:
        sys.meta_path.insert(0, _AfterTorch(mode))


try:
    _chain_to_the_next_sitecustomize()
finally:
    _watch_torch()
