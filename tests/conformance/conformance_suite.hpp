// The backend conformance suite: every behaviour of the runtime's launch path (docs/design.md §2-§3),
// written once and run unchanged on every backend.
//
// A backend runs it by defining a fixture type and instantiating the suites for it, in a test file
// of its own (compiled by nvcc for CUDA, so the kernels of conformance_kernels.hpp are instantiated
// for the GPU):
//
//     struct my_backend {
//       // Empty when the backend can run here; otherwise why not, and every test skips with it.
//       static std::optional<std::string> unavailable();
//       // A client of the backend's device 0. Called after unavailable() said it can run.
//       static launchwatch::client make_client();
//       // A client of a different device, of any backend, whose buffers a launch on make_client()'s
//       // device must reject (CPU: client::cpu(1); CUDA: a CPU device works as well as a second GPU).
//       static launchwatch::client other_device();
//       // Whether a stream goes on working after one of its kernels failed. CUDA's device faults
//       // are sticky (the context is lost), so there the suite checks only that the failure is
//       // reported, naming the kernel.
//       static constexpr bool recovers_from_kernel_failure = true;
//     };
//     LAUNCHWATCH_INSTANTIATE_CONFORMANCE_SUITES(my, my_backend);
//
// and, in a binary of its own (ctest label `concurrency`), including concurrency_suite.hpp:
//
//     INSTANTIATE_TYPED_TEST_SUITE_P(my, backend_concurrency, my_backend);
//
// The suites, one file each along their jobs: launches_suite.hpp (running kernels, rejecting bad
// launches, kernel failures), buffers_suite.hpp (buffers, reads, streams), observation_suite.hpp
// (reporting and timing), dry_run_suite.hpp, graph_suite.hpp, launch_path_conformance.hpp (the
// launch path's reviewed defects), faults_suite.hpp (issue 14's fault table), and
// concurrency_suite.hpp; what they share is in conformance_fixture.hpp, their kernels in
// conformance_kernels.hpp.
//
// Each ctest test runs in its own process, so a test that sets the profiling logger, installs an
// observer or poisons a GPU context leaves nothing behind for the next.
#pragma once

#include "conformance/buffers_suite.hpp"
#include "conformance/dry_run_suite.hpp"
#include "conformance/faults_suite.hpp"
#include "conformance/graph_suite.hpp"
#include "conformance/launch_path_conformance.hpp"
#include "conformance/launches_suite.hpp"
#include "conformance/observation_suite.hpp"

/// Runs every suite above on `Backend`, its tests named `prefix/<suite>/0.<test>`: one macro,
/// so that a suite added here runs on every backend. Use at namespace scope, followed by `;`.
#define LAUNCHWATCH_INSTANTIATE_CONFORMANCE_SUITES(prefix, Backend)                              \
  INSTANTIATE_TYPED_TEST_SUITE_P(prefix, backend_launches, Backend);                             \
  INSTANTIATE_TYPED_TEST_SUITE_P(prefix, backend_buffers, Backend);                              \
  INSTANTIATE_TYPED_TEST_SUITE_P(prefix, backend_observation, Backend);                          \
  INSTANTIATE_TYPED_TEST_SUITE_P(prefix, backend_dry_runs, Backend);                             \
  INSTANTIATE_TYPED_TEST_SUITE_P(prefix, backend_graphs, Backend);                              \
  INSTANTIATE_TYPED_TEST_SUITE_P(prefix, launch_path_conformance, Backend);                      \
  INSTANTIATE_TYPED_TEST_SUITE_P(prefix, backend_faults, Backend)
