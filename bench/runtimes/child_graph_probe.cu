// What CUPTI says about child graphs, printed: the GRAPHNODE_CREATED and GRAPHNODE_CLONED callbacks
// (node, original, graph and exec ids, node type) and each replayed kernel's record (graphId,
// graphNodeId, correlation). The bridge maps a replayed kernel to the launch that recorded its node
// by these ids; this probe shows, on the driver at hand, which ids a kernel inside a child graph
// carries, for a child built with the graph API (runtime_forms.cu's) and one built by a stream
// capture (XLA's command buffers: cuBLAS captured into a graph, added as a child node).
//
// Built as launchwatch_child_graph_probe (bench/runtimes/CMakeLists.txt); run with no arguments.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

void check(CUptiResult status, const char* what) {
  if (status != CUPTI_SUCCESS) {
    const char* text = nullptr;
    cuptiGetResultString(status, &text);
    std::fprintf(stderr, "%s: %s\n", what, text);
    std::exit(1);
  }
}

__global__ void tagged(int tag) {
  if (threadIdx.x == 1000) printf("%d", tag);
}

std::uint64_t node_id(CUgraphNode node) {
  std::uint64_t id = 0;
  if (node) cuptiGetGraphNodeId(node, &id);
  return id;
}
std::uint64_t graph_id(CUgraph graph) {
  std::uint32_t id = 0;
  if (graph) cuptiGetGraphId(graph, &id);
  return id;
}
std::uint64_t exec_id(CUgraphExec exec) {
  std::uint32_t id = 0;
  if (exec) cuptiGetGraphExecId(exec, &id);
  return id;
}
const char* site = "setup";

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                          const void* data) {
  if (domain != CUPTI_CB_DOMAIN_RESOURCE) return;
  const auto* resource = static_cast<const CUpti_ResourceData*>(data);
  const auto* graph = static_cast<const CUpti_GraphData*>(resource->resourceDescriptor);
  if (id == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) {
    CUgraphNodeType type{};
    cuGraphNodeGetType(graph->node, &type);
    std::printf("[%s] CREATED node %llx type %d graph %llu\n", site,
                (unsigned long long)node_id(graph->node), int(type),
                (unsigned long long)graph_id(graph->graph));
  } else if (id == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
    CUgraphNodeType type{};
    cuGraphNodeGetType(graph->node, &type);
    std::printf("[%s] CLONED node %llx from %llx type %d graph %llu exec %llu\n", site,
                (unsigned long long)node_id(graph->node),
                (unsigned long long)node_id(graph->originalNode), int(type),
                (unsigned long long)graph_id(graph->graph),
                (unsigned long long)exec_id(graph->graphExec));
  } else if (id == CUPTI_CBID_RESOURCE_GRAPH_CREATED) {
    std::printf("[%s] GRAPH_CREATED %llu\n", site, (unsigned long long)graph_id(graph->graph));
  } else if (id == CUPTI_CBID_RESOURCE_GRAPH_CLONED) {
    std::printf("[%s] GRAPH_CLONED %llu from %llu\n", site,
                (unsigned long long)graph_id(graph->graph),
                (unsigned long long)graph_id(graph->originalGraph));
  } else if (id == CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED) {
    std::printf("[%s] GRAPHEXEC_CREATED exec %llu graph %llu\n", site,
                (unsigned long long)exec_id(graph->graphExec),
                (unsigned long long)graph_id(graph->graph));
  }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 8 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    std::printf("record %s correlation %u graphId %u graphNodeId %llx\n", kernel->name,
                kernel->correlationId, kernel->graphId,
                (unsigned long long)kernel->graphNodeId);
  }
  std::free(buffer);
}

cudaGraphNode_t add_kernel(cudaGraph_t graph, cudaGraphNode_t after, int* tag) {
  cudaKernelNodeParams params{};
  params.func = reinterpret_cast<void*>(&tagged);
  params.gridDim = dim3(1);
  params.blockDim = dim3(32);
  void* arguments[1] = {tag};
  params.kernelParams = arguments;
  cudaGraphNode_t node = nullptr;
  check(cudaGraphAddKernelNode(&node, graph, after ? &after : nullptr, after ? 1 : 0, &params),
        "cudaGraphAddKernelNode");
  return node;
}

}  // namespace

int main() {
  check(cudaFree(nullptr), "init");
  CUpti_SubscriberHandle subscriber{};
  check(cuptiSubscribe(&subscriber, on_callback, nullptr), "cuptiSubscribe");
  check(cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE), "resource domain");
  check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "register");
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "enable");
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");

  std::printf("== A: child built with the graph API (tags 1, 2 in the child; 0, 3 around)\n");
  int tags[4] = {0, 1, 2, 3};
  site = "A build child";
  cudaGraph_t child = nullptr;
  check(cudaGraphCreate(&child, 0), "create");
  add_kernel(child, add_kernel(child, nullptr, &tags[1]), &tags[2]);
  site = "A build parent";
  cudaGraph_t parent = nullptr;
  check(cudaGraphCreate(&parent, 0), "create");
  cudaGraphNode_t first = add_kernel(parent, nullptr, &tags[0]);
  site = "A add child";
  cudaGraphNode_t child_node = nullptr;
  check(cudaGraphAddChildGraphNode(&child_node, parent, &first, 1, child), "add child");
  std::printf("child node %llx\n", (unsigned long long)node_id(child_node));
  cudaGraph_t embedded = nullptr;
  check(cudaGraphChildGraphNodeGetGraph(child_node, &embedded), "get child");
  std::printf("embedded graph %llu, child graph %llu, parent %llu\n",
              (unsigned long long)graph_id(embedded), (unsigned long long)graph_id(child),
              (unsigned long long)graph_id(parent));
  site = "A add last";
  add_kernel(parent, child_node, &tags[3]);
  site = "A instantiate";
  cudaGraphExec_t exec = nullptr;
  check(cudaGraphInstantiate(&exec, parent, 0), "instantiate");
  std::printf("exec %llu\n", (unsigned long long)exec_id(exec));
  site = "A launch";
  check(cudaGraphLaunch(exec, stream), "launch");
  check(cudaStreamSynchronize(stream), "sync");
  check(cuptiActivityFlushAll(1), "flush");

  std::printf("== B: child built by a stream capture (tags 11, 12), parent by the API (10, 13)\n");
  int more[4] = {10, 11, 12, 13};
  site = "B capture";
  cudaGraph_t captured = nullptr;
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
  tagged<<<1, 32, 0, stream>>>(11);
  tagged<<<1, 32, 0, stream>>>(12);
  check(cudaStreamEndCapture(stream, &captured), "end capture");
  site = "B build parent";
  cudaGraph_t outer = nullptr;
  check(cudaGraphCreate(&outer, 0), "create");
  cudaGraphNode_t head = add_kernel(outer, nullptr, &more[0]);
  site = "B add child";
  cudaGraphNode_t captured_node = nullptr;
  check(cudaGraphAddChildGraphNode(&captured_node, outer, &head, 1, captured), "add child");
  site = "B add last";
  add_kernel(outer, captured_node, &more[3]);
  site = "B instantiate";
  cudaGraphExec_t outer_exec = nullptr;
  check(cudaGraphInstantiate(&outer_exec, outer, 0), "instantiate");
  std::printf("exec %llu\n", (unsigned long long)exec_id(outer_exec));
  site = "B launch";
  check(cudaGraphLaunch(outer_exec, stream), "launch");
  check(cudaStreamSynchronize(stream), "sync");
  check(cuptiActivityFlushAll(1), "flush");

  std::printf("== C: a capture into an existing graph's child (cudaStreamBeginCaptureToGraph)\n");
  site = "C build";
  cudaGraph_t target = nullptr;
  check(cudaGraphCreate(&target, 0), "create");
  int c0 = 20;
  cudaGraphNode_t c_first = add_kernel(target, nullptr, &c0);
  site = "C capture to graph";
  check(cudaStreamBeginCaptureToGraph(stream, target, &c_first, nullptr, 1,
                                      cudaStreamCaptureModeThreadLocal),
        "begin capture to graph");
  tagged<<<1, 32, 0, stream>>>(21);
  cudaGraph_t same = nullptr;
  check(cudaStreamEndCapture(stream, &same), "end capture");
  site = "C instantiate";
  cudaGraphExec_t target_exec = nullptr;
  check(cudaGraphInstantiate(&target_exec, target, 0), "instantiate");
  std::printf("exec %llu\n", (unsigned long long)exec_id(target_exec));
  site = "C launch";
  check(cudaGraphLaunch(target_exec, stream), "launch");
  check(cudaStreamSynchronize(stream), "sync");
  check(cuptiActivityFlushAll(1), "flush");
  std::printf("== done\n");
  return 0;
}
