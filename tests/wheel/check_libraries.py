#!/usr/bin/env python3
"""The installed wheel's binaries load with nothing but their environment and the base system:
for each ELF file named, `ldd` finds every library, and each one is inside ENVIRONMENT or is one of
the base system's libraries a manylinux wheel may use (scripts/wheel_platform.py).

Usage: check_libraries.py ENVIRONMENT FILE...   (exit status 1 and each offence on stderr)
"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from wheel_platform import BASE_SYSTEM_LIBRARIES  # noqa: E402


def offences(environment, binary):
    environment = os.path.realpath(environment) + os.sep
    loader_environment = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    listing = subprocess.run(["ldd", binary], check=True, capture_output=True, text=True,
                             env=loader_environment).stdout
    found = []
    resolved = re.findall(r"^\s*(\S+) => (.+?)(?: \(0x[0-9a-f]+\))?$", listing, re.MULTILINE)
    for soname, path in resolved:
        if path.strip() == "not found":
            found.append(f"{binary}: {soname} is not found")
        elif (soname not in BASE_SYSTEM_LIBRARIES
              and not os.path.realpath(path).startswith(environment)):
            found.append(f"{binary}: {soname} loads from {path}, outside the environment and the "
                         "base system (bundle it in the wheel: scripts/wheel_pack.py)")
    return found


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.strip())
    problems = [problem for binary in sys.argv[2:] for problem in offences(sys.argv[1], binary)]
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
