"""The `launchwatch` command of the wheel (scripts/wheel): runs the launchwatch program bundled in
the package's _bin folder with this command's arguments.

The program replaces this Python process (exec), so signals, the exit status and the terminal go
straight to it, and `launchwatch run` finds liblaunchwatch_inject.so beside itself and this package
two folders above itself. It is told this Python's site-packages folders
(LAUNCHWATCH_PYTHON_SITE_PACKAGES), where the CUDA bridge looks for the nvidia-cuda-cupti wheel's
CUPTI (docs/design.md, "CUPTI at run time").
"""

import os
import sys

_BINARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "launchwatch")


def _site_packages():
    """This Python's site-packages (and Debian's dist-packages) folders, in sys.path's order."""
    return [
        folder
        for folder in sys.path
        if os.path.basename(folder.rstrip(os.sep)) in ("site-packages", "dist-packages")
    ]


def main():
    if not os.access(_BINARY, os.X_OK):
        sys.stderr.write(
            f"launchwatch: the bundled program {_BINARY} is missing or not executable; "
            "reinstall the wheel (scripts/wheel, then pip install --force-reinstall "
            "dist/launchwatch-*.whl)\n"
        )
        return 127
    environment = dict(os.environ)
    environment.setdefault("LAUNCHWATCH_PYTHON_SITE_PACKAGES", os.pathsep.join(_site_packages()))
    os.execve(_BINARY, ["launchwatch", *sys.argv[1:]], environment)


if __name__ == "__main__":
    sys.exit(main())
