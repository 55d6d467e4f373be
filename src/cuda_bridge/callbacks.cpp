// CUPTI's callbacks, dispatched (bridge_engine.hpp): each is translated into one of the core's
// events (bridge_core.hpp), which decides what is reported; nothing here decides.
#include <cuda.h>

#include "bridge_engine.hpp"
#include "capture_calls.hpp"
#include "cupti_calls.hpp"
#include "cupti_functions.hpp"
#include "inside_cuda_init.hpp"

namespace launchwatch::detail {

using cuda_bridge::cupti;

cuda_bridge_engine* cuda_bridge_engine::enter_callback(callback_gate& gate,
                                                       thread_presence::ticket& entered) noexcept {
  entered = gate.in_flight.enter();
  if (auto* engine = gate.engine.load(std::memory_order_seq_cst)) return engine;
  thread_presence::leave(entered);
  return nullptr;
}

void CUPTIAPI cuda_bridge_engine::on_callback(void* user_data, CUpti_CallbackDomain domain,
                                              CUpti_CallbackId id, const void* data) {
  // Only the gate, never freed, is read before enter_callback() says the engine is still there.
  auto& gate = *static_cast<callback_gate*>(user_data);
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cuda_bridge::one_of(cuda_bridge::launch_ids, id)) {
    const auto& call = *static_cast<const CUpti_CallbackData*>(data);
    // The cheap path: one load (ENTER) or one thread-local read (EXIT) before anything is counted.
    const bool wanted = call.callbackSite == CUPTI_API_ENTER
                            ? cuda_bridge::bridge_core::wants_launch_enter()
                            : cuda_bridge::bridge_core::wants_launch_exit();
    if (!wanted) return;
    thread_presence::ticket entered;
    cuda_bridge_engine* engine = enter_callback(gate, entered);
    if (engine == nullptr) return;
    engine->on_launch(id, call);
    thread_presence::leave(entered);
    return;
  }
  thread_presence::ticket entered;
  cuda_bridge_engine* engine = enter_callback(gate, entered);
  if (engine == nullptr) return;
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API || domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    engine->on_api_call(domain, id, *static_cast<const CUpti_CallbackData*>(data));
  } else if (domain == CUPTI_CB_DOMAIN_RESOURCE && id == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
    cuda_bridge::cuda_context_created();
  } else if (domain == CUPTI_CB_DOMAIN_RESOURCE &&
             (id == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING ||
              id == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING)) {
    cuda_bridge::bridge_core::symbols_may_move();
  } else if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    engine->on_graph_node(id, *static_cast<const CUpti_ResourceData*>(data));
  }
  thread_presence::leave(entered);
}

void cuda_bridge_engine::on_launch(CUpti_CallbackId id, const CUpti_CallbackData& call) {
  cuda_bridge::launch_call launch;
  launch.correlation = call.correlationId;
  launch.context = call.context;
  if (call.callbackSite == CUPTI_API_EXIT) {
    launch.launched = call.functionReturnValue == nullptr ||
                      *static_cast<const CUresult*>(call.functionReturnValue) == CUDA_SUCCESS;
    core_.launch_exited(launch);
    return;
  }
  const cuda_bridge::launch_params params = cuda_bridge::params_of(id, call.functionParams);
  const CUstream stream = cuda_bridge::effective_stream(id, params.stream);
  launch.symbol = call.symbolName;
  launch.stream = stream;
  launch.stream_number = cuda_bridge::stream_number(stream, call.context);
  launch.grid = params.grid;
  launch.block = params.block;
  core_.launch_entered(launch);
}

void cuda_bridge_engine::on_api_call(CUpti_CallbackDomain domain, CUpti_CallbackId id,
                                     const CUpti_CallbackData& call) {
  const bool driver = domain == CUPTI_CB_DOMAIN_DRIVER_API;
  const bool start = id == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart ||
                     id == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000;
  const bool stop = id == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop ||
                    id == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000;
  if (driver && cuda_bridge::one_of(cuda_bridge::begin_capture_ids, id)) {
    const std::uint64_t stream = cuda_bridge::capture_stream_key(id, call.functionParams);
    if (call.callbackSite == CUPTI_API_ENTER) {
      core_.capture_beginning(stream);
    } else if (call.functionReturnValue != nullptr &&
               *static_cast<const CUresult*>(call.functionReturnValue) != CUDA_SUCCESS) {
      core_.capture_ended(stream);  // it never began
    }
  } else if (driver && cuda_bridge::one_of(cuda_bridge::end_capture_ids, id)) {
    // Ended once the call returned, whatever it returned: an invalidated capture ends too.
    if (call.callbackSite == CUPTI_API_EXIT) {
      core_.capture_ended(cuda_bridge::capture_stream_key(id, call.functionParams));
    }
  } else if (driver && cuda_bridge::one_of(cuda_bridge::add_node_ids, id)) {
    const bool entering = call.callbackSite == CUPTI_API_ENTER;
    core_.node_adding_call(
        entering, cuda_bridge::adds_kernel_node(id, call.functionParams),
        entering ? cuda_bridge::graph_id(cuda_bridge::embedded_graph(id, call.functionParams))
                 : 0);
  } else if (driver && cuda_bridge::one_of(cuda_bridge::instantiate_ids, id)) {
    if (call.callbackSite == CUPTI_API_ENTER) {
      core_.instantiate_entered();
    } else {
      const bool made = call.functionReturnValue == nullptr ||
                        *static_cast<const CUresult*>(call.functionReturnValue) == CUDA_SUCCESS;
      core_.instantiate_exited(
          made ? cuda_bridge::exec_id(cuda_bridge::instantiated_exec(call.functionParams)) : 0);
    }
  } else if (driver && cuda_bridge::one_of(cuda_bridge::graph_launch_ids, id)) {
    if (call.callbackSite != CUPTI_API_ENTER || call.functionParams == nullptr) return;
    const auto& params = *static_cast<const cuGraphLaunch_params*>(call.functionParams);
    const CUstream stream = cuda_bridge::effective_stream(id, params.hStream);
    core_.graph_launch_entered(cuda_bridge::graph_launch_call{
        call.correlationId, cuda_bridge::exec_id(params.hGraph), call.context,
        cuda_bridge::stream_number(stream, call.context)});
  } else if (start && call.callbackSite == CUPTI_API_EXIT) {
    // The range opens once the profiler API call returned, closes as the stop call begins: the
    // launches between the two calls are the range, whatever the calls themselves do.
    core_.profiler_started();
  } else if (stop && call.callbackSite == CUPTI_API_ENTER) {
    core_.profiler_stopped();
  }
}

void cuda_bridge_engine::on_graph_node(CUpti_CallbackId id, const CUpti_ResourceData& resource) {
  const auto* graph = static_cast<const CUpti_GraphData*>(resource.resourceDescriptor);
  if (graph == nullptr) return;
  if (id == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) {
    cuda_bridge::created_node node;
    node.node = graph->node;
    node.kernel = graph->nodeType == CU_GRAPH_NODE_TYPE_KERNEL;
    if (std::uint64_t number = 0;
        cupti().get_graph_node_id(graph->node, &number) == CUPTI_SUCCESS) {
      node.id = number;
    }
    node.graph = cuda_bridge::graph_id(graph->graph);
    core_.node_created(node);
  } else if (id == CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING) {
    if (const std::uint64_t number = cuda_bridge::graph_id(graph->graph); number != 0) {
      core_.graph_destroyed(number);
    }
  } else if (id == CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING) {
    if (const std::uint64_t number = cuda_bridge::exec_id(graph->graphExec); number != 0) {
      core_.exec_destroyed(number);
    }
  } else if (id == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
    std::uint64_t original = 0;
    std::uint64_t clone = 0;
    if (cupti().get_graph_node_id(graph->originalNode, &original) != CUPTI_SUCCESS ||
        cupti().get_graph_node_id(graph->node, &clone) != CUPTI_SUCCESS) {
      return;
    }
    core_.node_cloned(original, clone, cuda_bridge::clone_exec_id(*graph));
  }
}

}  // namespace launchwatch::detail
