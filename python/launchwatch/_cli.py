"""The `launchwatch` command of the wheel (scripts/wheel): runs the launchwatch program bundled in
the package's _bin folder with this command's arguments.

The program replaces this Python process (exec), so signals, the exit status and the terminal go
straight to it, and `launchwatch run` finds liblaunchwatch_inject.so beside itself and this package
two folders above itself.
"""

import os
import sys

_BINARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "launchwatch")


def main():
    if not os.access(_BINARY, os.X_OK):
        sys.stderr.write(
            f"launchwatch: the bundled program {_BINARY} is missing or not executable; "
            "reinstall the wheel (scripts/wheel, then pip install --force-reinstall "
            "dist/launchwatch-*.whl)\n"
        )
        return 127
    os.execv(_BINARY, ["launchwatch", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
