"""Checks launchwatch's include graph against its layers (docs/design.md §1); exits 1 naming each
include that breaks a rule, 0 when there is none.

The rules:
1. Core keeps its insides: a file outside src/core/ includes from src/core/ only core's interface,
   src/core/interface/. Core's own tests (tests/unit/, the fuzz targets) are part of core here.
2. An arrow never points up: a file in src/ or include/launchwatch/ includes only its own layer and
   the layers listed below it in LAYERS (so core includes no backend, no bridge, no report). The
   backends include no other backend; the GPU backends (CUDA, HIP) share src/backend/gpu, a layer
   of its own beneath them.

An include is resolved as the compiler resolves it: a quoted name next to the including file first,
then in src/; <launchwatch/...> in include/. Includes that resolve to no file in the tree (system
and third-party headers, generated ones) are not launchwatch's layers and are skipped.

Usage: check_layers.py [ROOT]   (ROOT: the repository, default: two folders above this file)
"""

from __future__ import annotations

import pathlib
import re
import sys

# Each layer, and the layers it may include (besides itself). Backends are matched by
# src/backend/<name>/ and may not include one another; src/backend/gpu is the GPU backends' shared
# code (their device, stream, timing templates over a runtime class), which only they may include.
LAYERS: dict[str, frozenset[str]] = {
    "core": frozenset(),
    "runtime": frozenset({"core"}),
    "gpu": frozenset({"core", "runtime", "cuda_common"}),
    "backend": frozenset({"core", "runtime", "cuda_common"}),
    "gpu_backend": frozenset({"core", "runtime", "cuda_common", "gpu"}),
    "cuda_common": frozenset({"core"}),
    "cuda_bridge": frozenset({"core", "cuda_common"}),
    "report": frozenset({"core"}),
    "attribute": frozenset({"core", "report"}),
    "inject": frozenset({"core", "report", "attribute", "cuda_bridge"}),
    "umbrella": frozenset({"core", "runtime", "report", "attribute", "cuda_bridge"}),
}

# Public headers by layer: the top-level names are core's unless listed here.
PUBLIC_LAYER_OF_NAME = {
    "launchwatch.hpp": "umbrella",
    "cuda_bridge.hpp": "cuda_bridge",
    "detail/cuda_entry.hpp": "runtime",
    "detail/hip_entry.hpp": "runtime",
    "detail/device_entry.hpp": "runtime",
}
PUBLIC_LAYER_OF_FOLDER = {"runtime": "runtime", "report": "report", "attribute": "attribute"}

# The backends that stand on the GPU layer (src/backend/gpu).
GPU_BACKENDS = frozenset({"backend/cuda", "backend/hip"})

# Core's tests: they may include core's insides, as every layer's tests may include its own.
TESTS_OF_CORE = ("tests/unit/", "fuzz/")

SOURCE_SUFFIXES = {".hpp", ".cpp", ".h", ".cu", ".cuh", ".inl", ".hip"}
SCANNED_FOLDERS = ("src", "include", "apps", "tests", "bench", "fuzz")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def layer_of(path: str) -> str | None:
    """The layer of a file given relative to the root, or None for files outside every layer
    (programs, tests, benchmarks)."""
    parts = path.split("/")
    if parts[0] == "src" and len(parts) > 2:
        if parts[1] == "backend" and len(parts) > 3:
            return "gpu" if parts[2] == "gpu" else "backend/" + parts[2]
        return parts[1] if parts[1] in LAYERS else None
    if parts[:2] == ["include", "launchwatch"] and len(parts) > 2:
        inner = "/".join(parts[2:])
        if inner in PUBLIC_LAYER_OF_NAME:
            return PUBLIC_LAYER_OF_NAME[inner]
        if len(parts) > 3:
            return PUBLIC_LAYER_OF_FOLDER.get(parts[2], "core")
        return "core"
    return None


def allowed(from_layer: str, to_layer: str) -> bool:
    if from_layer == to_layer:
        return True
    base = from_layer
    if from_layer in GPU_BACKENDS:
        base = "gpu_backend"
    elif from_layer.startswith("backend/"):
        base = "backend"
    return to_layer in LAYERS.get(base, frozenset())


def resolve(root: pathlib.Path, including: pathlib.Path, quoted: bool, name: str) -> str | None:
    """The included file relative to `root`, or None when it is not in the tree."""
    candidates = []
    if quoted:
        candidates += [including.parent / name, root / "src" / name]
    if name.startswith("launchwatch/"):
        candidates.append(root / "include" / name)
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve().relative_to(root).as_posix()
    return None


def violations(root: pathlib.Path) -> list[str]:
    root = root.resolve()
    found = []
    for folder in SCANNED_FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
                continue
            relative = path.relative_to(root).as_posix()
            from_layer = layer_of(relative)
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            for number, line in enumerate(lines, start=1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                target = resolve(root, path, match.group(1) == '"', match.group(2))
                if target is None:
                    continue
                where = f"{relative}:{number}: includes {target}"
                in_core = relative.startswith("src/core/") or relative.startswith(TESTS_OF_CORE)
                if (target.startswith("src/core/") and not target.startswith("src/core/interface/")
                        and not in_core):
                    found.append(f"{where}, one of core's insides: include core's interface "
                                 "(src/core/interface/) or a public header, or move what is "
                                 "needed into the interface")
                    continue
                to_layer = layer_of(target)
                if from_layer and to_layer and not allowed(from_layer, to_layer):
                    found.append(f"{where}: {from_layer} may not include {to_layer} (a layer "
                                 "includes only the layers below it, docs/design.md §1)")
    return found


def main(argv: list[str]) -> int:
    root = pathlib.Path(argv[1]) if len(argv) > 1 else pathlib.Path(__file__).resolve().parents[2]
    if not (root / "src" / "core").is_dir():
        print(f"check_layers: {root} has no src/core/: pass the repository's root", file=sys.stderr)
        return 2
    found = violations(root)
    for line in found:
        print(line)
    if found:
        print(f"check_layers: {len(found)} include(s) break the layers", file=sys.stderr)
        return 1
    print("check_layers: the include graph keeps the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
