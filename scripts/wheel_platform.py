#!/usr/bin/env python3
"""The wheel's platform tag: manylinux_2_NN_<arch>, where 2.NN is the newest GLIBC_ symbol version
any of the given ELF files needs (so the oldest glibc they load with), read with
`readelf --dyn-syms`.

Usage: scripts/wheel_platform.py FILE...   (prints the tag; scripts/wheel names the wheel with it)
"""

import platform
import re
import subprocess
import sys

# The libraries a manylinux wheel may take from the base system (PEP 600's policy, as auditwheel
# lists it): every other library the binaries load is bundled beside them (scripts/wheel_pack.py),
# and the installed wheel's check (tests/wheel) finds each one in the environment or in this list.
BASE_SYSTEM_LIBRARIES = frozenset({
    "linux-vdso.so.1", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1",
    "libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "libutil.so.1",
    "libresolv.so.2", "libnsl.so.1", "libcrypt.so.1", "libgcc_s.so.1", "libstdc++.so.6",
})

# The architectures a manylinux tag names, by what platform.machine() says.
_ARCHITECTURES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


def glibc_versions(path):
    """The GLIBC_x.y versions the dynamic symbols of the ELF file at `path` refer to."""
    try:
        symbols = subprocess.run(
            ["readelf", "--dyn-syms", "--wide", path], check=True, capture_output=True, text=True
        ).stdout
    except FileNotFoundError:
        sys.exit("wheel_platform: readelf is not on PATH; install binutils")
    except subprocess.CalledProcessError as failure:
        sys.exit(f"wheel_platform: readelf cannot read {path}: {failure.stderr.strip()}")
    return {
        (int(major), int(minor))
        for major, minor in re.findall(r"@GLIBC_(\d+)\.(\d+)(?:\.\d+)?\b", symbols)
    }


def platform_tag(paths, machine=None):
    """manylinux_2_NN_<arch> for the ELF files at `paths` (at least one must use glibc)."""
    machine = (machine or platform.machine()).lower()
    if machine not in _ARCHITECTURES:
        sys.exit(f"wheel_platform: no manylinux tag for the architecture {machine!r}")
    versions = set().union(*(glibc_versions(path) for path in paths))
    if not versions:
        sys.exit("wheel_platform: none of " + ", ".join(paths) + " names a GLIBC_ symbol version")
    major, minor = max(versions)
    return f"manylinux_{major}_{minor}_{_ARCHITECTURES[machine]}"


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__.strip())
    print(platform_tag(sys.argv[1:]))
