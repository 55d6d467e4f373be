"""Runs pytest for ctest, or exits 77 (ctest's skip) saying why when this Python has no pytest."""

import sys

try:
    import pytest
except ImportError:
    print(f"skipped: {sys.executable} has no pytest (Debian: apt install python3-pytest)")
    sys.exit(77)

sys.exit(pytest.main(["-q", "-rs", "-p", "no:cacheprovider", *sys.argv[1:]]))
