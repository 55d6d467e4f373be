// CUPTI's callback parameters and the loaded driver's functions (cupti_calls.hpp).
#include "cupti_calls.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

#include "cupti_functions.hpp"

namespace launchwatch::detail::cuda_bridge {
namespace {

bool is_per_thread(CUpti_CallbackId id) noexcept {
  return id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
         id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz ||
         id == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz ||
         id == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz;
}

}  // namespace

launch_params params_of(CUpti_CallbackId id, const void* parameters) noexcept {
  launch_params params;
  if (parameters == nullptr) return params;
  if (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
      id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz) {
    const auto& ex = *static_cast<const cuLaunchKernelEx_params*>(parameters);
    if (ex.config == nullptr) return params;
    const CUlaunchConfig& config = *ex.config;
    params.grid = {config.gridDimX, config.gridDimY, config.gridDimZ};
    params.block = {config.blockDimX, config.blockDimY, config.blockDimZ};
    params.stream = config.hStream;
    return params;
  }
  // cuLaunchKernel and cuLaunchCooperativeKernel share these leading fields.
  const auto& kernel = *static_cast<const cuLaunchKernel_params*>(parameters);
  params.grid = {kernel.gridDimX, kernel.gridDimY, kernel.gridDimZ};
  params.block = {kernel.blockDimX, kernel.blockDimY, kernel.blockDimZ};
  params.stream = kernel.hStream;
  return params;
}

CUstream effective_stream(CUpti_CallbackId id, CUstream stream) noexcept {
  return stream == nullptr && is_per_thread(id) ? CU_STREAM_PER_THREAD : stream;
}

std::uint64_t stream_number(CUstream stream, CUcontext context) noexcept {
  const auto handle = reinterpret_cast<std::uintptr_t>(stream);
  if (handle > 2) return handle;
  return reinterpret_cast<std::uintptr_t>(context) | handle;
}

namespace {

/// The parameters of the node cuGraphAddNode[_v2] adds (null for the other node-adding calls, or
/// when CUPTI gave none).
const CUgraphNodeParams* generic_node_params(CUpti_CallbackId id, const void* parameters) noexcept {
  if (parameters == nullptr) return nullptr;
  if (id == CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode) {
    return static_cast<const cuGraphAddNode_params*>(parameters)->nodeParams;
  }
  if (id == CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2) {
    return static_cast<const cuGraphAddNode_v2_params*>(parameters)->nodeParams;
  }
  return nullptr;
}

}  // namespace

bool adds_kernel_node(CUpti_CallbackId id, const void* parameters) noexcept {
  // Parameters that cannot be read, cuGraphAddKernelNode, or a generic call's kernel node.
  if (parameters == nullptr) return true;
  if (id == CUPTI_DRIVER_TRACE_CBID_cuGraphAddChildGraphNode) return false;
  const CUgraphNodeParams* node = generic_node_params(id, parameters);
  return node == nullptr || node->type == CU_GRAPH_NODE_TYPE_KERNEL;
}

CUgraph embedded_graph(CUpti_CallbackId id, const void* parameters) noexcept {
  if (id == CUPTI_DRIVER_TRACE_CBID_cuGraphAddChildGraphNode) {
    return parameters == nullptr
               ? nullptr
               : static_cast<const cuGraphAddChildGraphNode_params*>(parameters)->childGraph;
  }
  const CUgraphNodeParams* node = generic_node_params(id, parameters);
  if (node == nullptr || node->type != CU_GRAPH_NODE_TYPE_GRAPH) return nullptr;
#if CUDA_VERSION >= 12090
  // A graph whose ownership moves to the node (CUDA 12.9) is not copied: its nodes keep their ids.
  if (node->graph.ownership == CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE) return nullptr;
#endif
  return node->graph.graph;
}

CUgraphExec instantiated_exec(const void* parameters) noexcept {
  if (parameters == nullptr) return nullptr;
  // cuGraphInstantiate[_v2], ...WithFlags, ...WithParams[_ptsz]: all begin with phGraphExec.
  CUgraphExec* const made = static_cast<const cuGraphInstantiate_v2_params*>(parameters)->phGraphExec;
  return made != nullptr ? *made : nullptr;
}

std::uint64_t graph_id(CUgraph graph) noexcept {
  std::uint32_t id = 0;
  if (graph == nullptr || cupti().get_graph_id(graph, &id) != CUPTI_SUCCESS) return 0;
  return id;
}

std::uint64_t exec_id(CUgraphExec exec) noexcept {
  std::uint32_t id = 0;
  if (exec == nullptr || cupti().get_graph_exec_id(exec, &id) != CUPTI_SUCCESS) return 0;
  return id;
}

std::uint64_t clone_exec_id(const CUpti_GraphData& clone) noexcept {
  if (clone.graphExec != nullptr) return exec_id(clone.graphExec);
  return graph_id(clone.graph);
}

std::string cupti_error(CUptiResult result) {
  const char* text = nullptr;
  if (cupti().get_result_string(result, &text) != CUPTI_SUCCESS || text == nullptr) {
    text = "unknown";
  }
  return fmt::format("{} (CUPTI error {})", text, static_cast<int>(result));
}

void* loaded_driver_function(const char* name) noexcept {
  void* driver = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (driver == nullptr) return nullptr;
  void* function = ::dlsym(driver, name);
  ::dlclose(driver);  // the process keeps its own reference: the driver stays loaded
  return function;
}

}  // namespace launchwatch::detail::cuda_bridge
