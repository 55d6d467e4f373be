"""check_layers.py against small trees with one known fault each, and against the repository."""

import pathlib

import pytest

import check_layers

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]


def write(root: pathlib.Path, path: str, text: str = "") -> None:
    file = root / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text)


@pytest.fixture
def tree(tmp_path):
    """A tree laid out as launchwatch is, breaking no rule."""
    write(tmp_path, "src/core/observation_slot.hpp")
    write(tmp_path, "src/core/interface/diagnostics.hpp")
    write(tmp_path, "src/core/launch_path.cpp", '#include "core/observation_slot.hpp"\n')
    write(tmp_path, "include/launchwatch/launch_path.hpp")
    write(tmp_path, "include/launchwatch/cuda_bridge.hpp")
    write(tmp_path, "src/runtime/backend.hpp", "#include <launchwatch/launch_path.hpp>\n")
    write(tmp_path, "src/backend/cpu/cpu_stream.cpp",
          '#include "runtime/backend.hpp"\n#include "core/interface/diagnostics.hpp"\n')
    write(tmp_path, "src/backend/cuda/cuda_stream.cpp", '#include "runtime/backend.hpp"\n')
    write(tmp_path, "src/report/report_cells.hpp")
    write(tmp_path, "src/attribute/recorder.hpp", '#include "report/report_cells.hpp"\n')
    write(tmp_path, "tests/unit/observe_test.cpp", '#include "core/observation_slot.hpp"\n')
    return tmp_path


def test_a_tree_that_keeps_the_layers_passes(tree):
    assert check_layers.violations(tree) == []


def test_a_backend_including_one_of_cores_insides_is_named(tree):
    write(tree, "src/backend/cpu/cpu_pool.cpp", '#include "core/observation_slot.hpp"\n')
    found = check_layers.violations(tree)
    assert len(found) == 1
    assert found[0].startswith("src/backend/cpu/cpu_pool.cpp:1: includes src/core/observation_slot.hpp")
    assert "core's insides" in found[0]


def test_a_test_of_another_layer_including_one_of_cores_insides_is_named(tree):
    write(tree, "tests/runtime/fork_test.cpp", '\n#include "core/observation_slot.hpp"\n')
    assert [line.split(":")[:2] for line in check_layers.violations(tree)] == [
        ["tests/runtime/fork_test.cpp", "2"]]


def test_core_including_the_bridge_is_named(tree):
    write(tree, "src/core/logger.cpp", "#include <launchwatch/cuda_bridge.hpp>\n")
    found = check_layers.violations(tree)
    assert len(found) == 1
    assert "core may not include cuda_bridge" in found[0]


def test_core_including_a_backend_by_a_quoted_path_is_named(tree):
    write(tree, "src/core/launch_sources.cpp", '#include "backend/cuda/cuda_stream.cpp"\n')
    assert any("core may not include backend/cuda" in line for line in check_layers.violations(tree))


def test_one_backend_including_another_is_named(tree):
    write(tree, "src/backend/cpu/cpu_graph.cpp", '#include "backend/cuda/cuda_stream.cpp"\n')
    found = check_layers.violations(tree)
    assert len(found) == 1
    assert "backend/cpu may not include backend/cuda" in found[0]


def test_the_gpu_backends_including_their_shared_layer_pass(tree):
    write(tree, "src/backend/gpu/gpu_stream.hpp", '#include "runtime/backend.hpp"\n')
    write(tree, "src/backend/cuda/cuda_stream.hpp", '#include "backend/gpu/gpu_stream.hpp"\n')
    write(tree, "src/backend/hip/hip_stream.hpp", '#include "backend/gpu/gpu_stream.hpp"\n')
    assert check_layers.violations(tree) == []


def test_another_backend_including_the_gpu_layer_is_named(tree):
    write(tree, "src/backend/gpu/gpu_stream.hpp")
    write(tree, "src/backend/cpu/cpu_graph.cpp", '#include "backend/gpu/gpu_stream.hpp"\n')
    found = check_layers.violations(tree)
    assert len(found) == 1
    assert "backend/cpu may not include gpu" in found[0]


def test_the_gpu_layer_including_a_gpu_backend_is_named(tree):
    write(tree, "src/backend/gpu/gpu_device.hpp", '#include "backend/cuda/cuda_stream.cpp"\n')
    assert any("gpu may not include backend/cuda" in line for line in check_layers.violations(tree))


def test_the_reports_including_the_attribution_are_named(tree):
    write(tree, "src/report/tree.cpp", '#include "attribute/recorder.hpp"\n')
    assert any("report may not include attribute" in line for line in check_layers.violations(tree))


def test_a_header_next_to_the_including_file_is_found_first(tree):
    write(tree, "src/backend/cuda/observation_slot.hpp")
    write(tree, "src/backend/cuda/cuda_graph.cpp", '#include "observation_slot.hpp"\n')
    assert check_layers.violations(tree) == []


def test_the_repository_keeps_its_layers():
    assert check_layers.violations(REPOSITORY) == []
