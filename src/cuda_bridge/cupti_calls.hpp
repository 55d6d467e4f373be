// What the bridge reads of CUPTI's callbacks and of the CUDA driver: the callback ids it enables,
// a launch's parameters, the stream numbers it reports, CUPTI's error text, and functions of the
// driver already loaded in the process.
#pragma once

#include <cuda.h>
#include <cupti.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace launchwatch::detail::cuda_bridge {

/// The driver's kernel launch ids: every launch form, whatever API the program used above the
/// driver (research/cuda-bridge.md §1).
inline constexpr CUpti_CallbackId launch_ids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
};
/// The explicit graph API's calls that add a node.
inline constexpr CUpti_CallbackId add_node_ids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuGraphAddKernelNode,
    CUPTI_DRIVER_TRACE_CBID_cuGraphAddKernelNode_v2,
    CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode,
    CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2,
    CUPTI_DRIVER_TRACE_CBID_cuGraphAddChildGraphNode,
};
/// The driver's calls that make an executable graph.
inline constexpr CUpti_CallbackId instantiate_ids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate,
    CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2,
    CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags,
    CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams,
    CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz,
};
/// The driver's graph launch ids.
inline constexpr CUpti_CallbackId graph_launch_ids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

/// Whether the node-adding call `id` (one of add_node_ids) with CUPTI's `parameters` adds a kernel
/// node: cuGraphAddNode says by its parameters' type (a child-graph node is not one); true when
/// they cannot be read.
bool adds_kernel_node(CUpti_CallbackId id, const void* parameters) noexcept;

/// The graph a node-adding call `id` (one of add_node_ids) copies into a child-graph node, null
/// when it adds another kind of node.
CUgraph embedded_graph(CUpti_CallbackId id, const void* parameters) noexcept;

/// The executable graph an instantiate call (one of instantiate_ids) made, read at its EXIT from
/// CUPTI's `parameters` (every form's first parameter is where it is written); null when unknown.
CUgraphExec instantiated_exec(const void* parameters) noexcept;

/// CUPTI's id of a graph (cuptiGetGraphId), 0 when CUPTI cannot give one.
std::uint64_t graph_id(CUgraph graph) noexcept;

/// CUPTI's id of an executable graph (cuptiGetGraphExecId), 0 when CUPTI cannot give one. Never
/// reused in a process, unlike the exec's address.
std::uint64_t exec_id(CUgraphExec exec) noexcept;

/// The executable graph a GRAPHNODE_CLONED callback's clone belongs to. On driver 580 the callback
/// leaves `graphExec` null during cudaGraphInstantiate and names, as its `graph`, the executable
/// graph's own internal graph, whose CUPTI graph id is the exec's id (the clone's node id carries it
/// in its upper half, and its replays' kernel records carry it as graphId): a probe on the H200
/// (docs/benchmarks.md, 2026-12-02). 0 when neither is known.
std::uint64_t clone_exec_id(const CUpti_GraphData& clone) noexcept;

/// Whether `id` is one of `ids`.
template <std::size_t N>
bool one_of(const CUpti_CallbackId (&ids)[N], CUpti_CallbackId id) noexcept {
  for (const auto each : ids) {
    if (id == each) return true;
  }
  return false;
}

/// The grid, block and stream of a launch, from the driver call's parameters.
struct launch_params {
  std::array<std::uint32_t, 3> grid{1, 1, 1};
  std::array<std::uint32_t, 3> block{1, 1, 1};
  CUstream stream = nullptr;
};

/// A launch's parameters, from CUPTI's functionParams for the launch id `id` (defaults for null).
launch_params params_of(CUpti_CallbackId id, const void* parameters) noexcept;

/// The stream a launch (or graph launch) with `stream` means: a per-thread call's null stream is
/// the per-thread default stream.
CUstream effective_stream(CUpti_CallbackId id, CUstream stream) noexcept;

/// launch_info::stream for a foreign stream: its handle, unique while it lives; the default streams
/// (null, legacy, per-thread handles 0-2) are numbered per context, so two devices' never merge.
std::uint64_t stream_number(CUstream stream, CUcontext context) noexcept;

/// "<CUPTI's text> (CUPTI error <n>)".
std::string cupti_error(CUptiResult result);

/// A function of the CUDA driver already loaded in the process, or null. Looked up in the driver
/// itself rather than through the runtime, which cannot be called inside cuInit
/// (inside_cuda_init.hpp), and without linking libcuda, so a program built with the bridge still
/// starts without a driver.
void* loaded_driver_function(const char* name) noexcept;

}  // namespace launchwatch::detail::cuda_bridge
