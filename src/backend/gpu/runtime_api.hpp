// What the GPU backend, written once in this folder, asks of a GPU runtime API (CUDA's, HIP's).
//
// CUDA and HIP are one programming model under two names: HIP's runtime API is CUDA's with `hip`
// for `cuda` (and, on NVIDIA GPUs, literally CUDA's underneath). So the backend's devices, streams,
// graphs, deferred timing and device clock are templates here, over a *runtime* class that maps
// each call onto one API; src/backend/cuda and src/backend/hip each hold their runtime class, their
// error classification, their client entry point and the kernels only their compiler can build (the
// clock probe), and instantiate the templates. A difference between the APIs lives in a runtime
// class, never in a branch of the shared code.
//
// A runtime class `R` provides (see cuda/cuda_runtime.hpp for the full list, each with its doc):
// - types `error`, `stream_handle`, `event_handle`, `graph_handle`, `graph_exec_handle`,
//   `pool_handle`, `function_attributes`, `function_handle` (an entry's function on one device,
//   which `find_function` looks up once and `launch_kernel` launches), and the RAII
//   `relaxed_capture_mode`;
// - constants `success`, `not_ready`, `out_of_memory`, `capture_wrong_thread`,
//   `capture_invalidated`, and `wording` (the API's name and the hints its messages give);
// - static functions, one a call, named after the call without its prefix (`stream_synchronize`
//   for cudaStreamSynchronize / hipStreamSynchronize), returning the API's status;
// - error classification: `is_sticky`, `lacks_code_for_device`, `describe_failure`,
//   `throw_failure` (cuda_check.hpp / hip_check.hpp);
// - `entry_of(launch)`: the kernel entry its compiler instantiated for a launch (or null), and the
//   clock probe: `launch_clock_probe`, `load_clock_probe`.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace launchwatch::detail::gpu {

/// What a device's properties the backend reads, in one shape for every API (CUDA's cudaDeviceProp
/// and HIP's hipDeviceProp_t differ in fields the backend does not read, and CUDA 13 removed some).
struct device_properties {
  std::string name;
  int max_threads_per_block = 0;
  std::array<int, 3> max_threads_dim{};
  std::array<int, 3> max_grid_size{};
  std::size_t shared_memory_per_block = 0;
  /// The most shared memory a cube may opt in to (0 where the API does not say).
  std::size_t shared_memory_per_block_optin = 0;
  int major = 0;
  int minor = 0;
};

/// The words a runtime's messages use: the API's name and what to do about its common failures.
struct api_wording {
  /// "CUDA", "HIP".
  std::string_view api;
  /// What the API's calls start with ("cuda", "hip"): the shared code names a call by the rest
  /// ("StreamSynchronize"), and a message names it whole.
  std::string_view prefix;
  /// The backend's name as client::backend() says it: "cuda", "hip".
  std::string_view backend;
  /// Why a launch has no entry for this API, and what to do (compile the launching file with it).
  std::string_view no_entry;
  /// What to do when a kernel has no code for the device's architecture.
  std::string_view architecture_hint;
  /// The tool that finds a faulting access ("compute-sanitizer").
  std::string_view sanitizer;
  /// The name a graph replay's ordering point carries ("(CUDA graph replay)").
  std::string_view graph_replay;
  /// Why the API may see no device at all, for client::<backend>()'s message.
  std::string_view no_device;
  /// The variable that hides devices from the API ("CUDA_VISIBLE_DEVICES").
  std::string_view visible_devices;
};

/// `bytes` for people: "1.5 GiB", "512.0 MiB", "3 bytes".
std::string readable_bytes(std::size_t bytes);

/// The text of the device_error thrown when a buffer of `bytes` does not fit on `device`: out of
/// memory, the size asked for, what the device had free of its total when the request failed
/// (`total_bytes` 0 when the API could not say), and that nothing was allocated, so freeing buffers
/// or asking for less is all it takes. `api` names the API and `code` its error's name.
std::string describe_out_of_memory(std::string_view api, std::string_view code, std::size_t bytes,
                                   std::size_t free_bytes, std::size_t total_bytes, int device);

/// Why a call on `device` failed when an earlier sticky fault (`first_fault`) ended the device.
std::string describe_call_after_fault(std::string_view api, std::string_view call,
                                      std::string_view kernel, int device,
                                      std::string_view first_fault);

/// Why every operation on `device` fails: the sticky fault `first_fault` ended it.
std::string describe_unusable_device(std::string_view api, int device,
                                     std::string_view first_fault);

/// Why a deferred measurement of `kernel` never arrived: timing stopped first.
std::string describe_timing_never_read(std::string_view kernel, std::string_view api, int device);

}  // namespace launchwatch::detail::gpu
