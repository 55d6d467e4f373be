"""pytest setup for launchwatch's Python package: the package from the build tree
(LAUNCHWATCH_PYTHON_DIR, which ctest sets) or the source tree, and a fake sink per test."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
package_dir = os.environ.get("LAUNCHWATCH_PYTHON_DIR") or os.path.join(HERE, "..", "..", "python")
sys.path.insert(0, os.path.abspath(package_dir))

from fake_sink import FakeSink  # noqa: E402


@pytest.fixture
def sink():
    from launchwatch import _sink

    fake = FakeSink()
    previous = _sink.set_sink(fake)
    yield fake
    _sink.set_sink(previous)
