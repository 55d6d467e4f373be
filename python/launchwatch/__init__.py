"""launchwatch for Python programs: name parts of a program so `launchwatch run` reports the device
time of each, and, for PyTorch, every nn.Module and optimizer step named with no change to the
program (`launchwatch run -- python3 train.py`; docs/launchwatch_run.md).

    import launchwatch

    with launchwatch.scope("data"):
        batch = next(loader)

    @launchwatch.scope("evaluate")
    def evaluate(model): ...

    launchwatch.torch.annotate(model)  # one model's modules, when `run` does not install hooks

Outside `launchwatch run` every call here returns at once and never fails.
"""

from ._version import __version__
from . import _sink
from ._scope import scope

__all__ = ["__version__", "scope", "torch"]


def __getattr__(name):
    # `launchwatch.torch` is imported on first use, so `import launchwatch` never imports torch.
    if name == "torch":
        import importlib

        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'launchwatch' has no attribute {name!r}")
