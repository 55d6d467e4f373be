#!/usr/bin/env python3
"""Writes launchwatch's wheel from a built tree (scripts/wheel builds it; docs/design.md, "The
wheel"): the Python package, the launchwatch program and liblaunchwatch_inject.so in its _bin folder
with every library they load that the base system lacks (fmt, spdlog) beside them (their run path is
$ORIGIN), and the `launchwatch` console command (launchwatch._cli:main).

Usage: scripts/wheel_pack.py BUILD_DIR DIST_DIR   (prints the wheel's path)
Written with the `wheel` package's WheelFile (Debian's python3-wheel): nothing is downloaded.
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wheel_platform import BASE_SYSTEM_LIBRARIES, platform_tag  # noqa: E402

try:
    from wheel.wheelfile import WheelFile
except ImportError:
    sys.exit(f"wheel_pack: {sys.executable} has no `wheel` package; apt-get install python3-wheel")

# Libraries that belong to the machine's driver or toolkit: never copied into a wheel. The bridge
# opens CUPTI at run time, from the environment's nvidia-cuda-cupti wheel or the toolkit.
_NOT_BUNDLED = re.compile(r"^lib(cuda|cupti|cudart|nvidia-|vulkan)")


def _fail(message):
    sys.exit(f"wheel_pack: {message}")


def version(python_package):
    """The project's version, as CMake wrote it into the package's _version.py (from project())."""
    with open(os.path.join(python_package, "_version.py")) as file:
        match = re.search(r'__version__ = "([^"]+)"', file.read())
    if not match:
        _fail(f"no __version__ in {python_package}/_version.py; reconfigure the build")
    return match.group(1)


def libraries_to_bundle(binaries):
    """{soname: path} of what `binaries` load from outside the base system, as ldd resolves it."""
    bundle = {}
    for binary in binaries:
        listing = subprocess.run(["ldd", binary], check=True, capture_output=True, text=True).stdout
        for soname, path in re.findall(r"^\s*(\S+) => (\S+)", listing, re.MULTILINE):
            if soname in BASE_SYSTEM_LIBRARIES:
                continue
            if path == "not":
                _fail(f"{binary} needs {soname}, which is not found on this machine")
            if _NOT_BUNDLED.match(soname):
                _fail(f"{binary} links {soname}, which a wheel cannot carry: the driver and "
                      "CUPTI belong to the machine, the CUDA runtime is linked statically (the "
                      "`wheel` preset sets LAUNCHWATCH_CUDA_RUNTIME=Static); reconfigure "
                      "build/wheel with `cmake --preset wheel`")
            if os.path.dirname(os.path.realpath(path)) != os.path.dirname(os.path.realpath(binary)):
                bundle[soname] = path
    return bundle


def stage(build_dir, root):
    """Lays the wheel's files out under `root`; returns the version."""
    python_package = os.path.join(build_dir, "python", "launchwatch")
    programs = os.path.join(build_dir, "apps", "launchwatch")
    names = ("launchwatch", "liblaunchwatch_inject.so")
    binaries = [os.path.join(programs, name) for name in names]
    for path in [python_package, *binaries]:
        if not os.path.exists(path):
            _fail(f"{path} is missing; build the `wheel` preset first (scripts/wheel does)")
    package = os.path.join(root, "launchwatch")
    shutil.copytree(python_package, package,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.in"))
    bin_dir = os.path.join(package, "_bin")
    os.makedirs(bin_dir)
    for binary in binaries:
        shutil.copy2(binary, bin_dir)
    for soname, path in libraries_to_bundle(binaries).items():
        shutil.copyfile(os.path.realpath(path), os.path.join(bin_dir, soname))
    return version(python_package)


def dist_info(root, version, tag):
    """The wheel's metadata: METADATA, WHEEL and the console command."""
    info = os.path.join(root, f"launchwatch-{version}.dist-info")
    os.makedirs(info)
    files = {
        "METADATA": (
            "Metadata-Version: 2.1\nName: launchwatch\n"
            f"Version: {version}\n"
            "Summary: Every kernel launch watched from the program that issues it: "
            "`launchwatch run -- python3 train.py`\n"
            "Requires-Python: >=3.8\n"
        ),
        "WHEEL": (
            "Wheel-Version: 1.0\nGenerator: launchwatch scripts/wheel_pack.py\n"
            f"Root-Is-Purelib: false\nTag: py3-none-{tag}\n"
        ),
        "entry_points.txt": "[console_scripts]\nlaunchwatch = launchwatch._cli:main\n",
    }
    for name, text in files.items():
        with open(os.path.join(info, name), "w") as file:
            file.write(text)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip())
    build_dir, dist_dir = sys.argv[1:]
    with tempfile.TemporaryDirectory(prefix="launchwatch-wheel-") as root:
        version = stage(build_dir, root)
        bin_dir = os.path.join(root, "launchwatch", "_bin")
        binaries = [os.path.join(bin_dir, name) for name in sorted(os.listdir(bin_dir))]
        # The Python package's C extension, where it was built (it needs glibc too).
        binaries += sorted(glob.glob(os.path.join(root, "launchwatch", "*.so")))
        tag = platform_tag(binaries)
        dist_info(root, version, tag)
        os.makedirs(dist_dir, exist_ok=True)
        path = os.path.join(dist_dir, f"launchwatch-{version}-py3-none-{tag}.whl")
        with WheelFile(path, "w") as wheel:
            wheel.write_files(root)
    print(path)


if __name__ == "__main__":
    main()
