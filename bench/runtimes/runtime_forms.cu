// The C++ program of bench/runtimes: the CUDA launch forms a real process mixes, inside one
// profiler API range (cudaProfilerStart/Stop), for `launchwatch run --capture-range
// cuda-profiler-api` against the kernel counter (kernel_counter.cpp) in another process:
//   - several threads, each launching on a stream of its own;
//   - cudaLaunchCooperativeKernel (a grid-wide sync);
//   - cudaLaunchKernelEx with thread-block clusters of 2 (Hopper, sm_90; a cluster-wide sync);
//   - an explicit graph holding a child graph, built before the range and replayed inside it;
//   - a captured graph replayed, updated with cudaGraphExecUpdate to a capture of other
//     parameters, and replayed again, captured before the range;
//   - a graph captured inside the range (its launches are recorded, not run) and replayed.
// Every kernel spins for a fixed time on the GPU's global timer, so two runs' kernel times agree.
// Prints `expected kernels: N` (the kernels it ran inside the range) and exits 0, or says what
// failed and exits 1.
//
//   runtime_forms [--threads N] [--per-thread N] [--replays N] [--spin-ns N]
#include <cooperative_groups.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace cg = cooperative_groups;

__device__ unsigned long long globaltimer() {
  unsigned long long t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ void spin(unsigned long long nanoseconds) {
  const unsigned long long start = globaltimer();
  while (globaltimer() - start < nanoseconds) {
  }
}

__global__ void busy(unsigned long long nanoseconds) { spin(nanoseconds); }

__global__ void busy_then_grid_sync(unsigned long long nanoseconds) {
  spin(nanoseconds);
  cg::this_grid().sync();
}

__global__ void busy_then_cluster_sync(unsigned long long nanoseconds) {
  spin(nanoseconds);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cg::this_cluster().sync();
#endif
}

namespace {

[[noreturn]] void fail(const char* what, cudaError_t status) {
  std::fprintf(stderr, "runtime_forms: %s failed: %s\n", what, cudaGetErrorString(status));
  std::exit(1);
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) fail(what, status);
}

int option(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

/// A graph of `kernels` busy kernels one after the other, captured on `stream`.
cudaGraph_t captured(cudaStream_t stream, int kernels, unsigned long long nanoseconds) {
  cudaGraph_t graph = nullptr;
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
  for (int k = 0; k < kernels; ++k) busy<<<1, 32, 0, stream>>>(nanoseconds);
  check(cudaStreamEndCapture(stream, &graph), "end capture");
  return graph;
}

/// Adds a busy kernel node after `after` (none when null); returns it.
cudaGraphNode_t add_busy(cudaGraph_t graph, cudaGraphNode_t after, unsigned long long* argument) {
  cudaKernelNodeParams params{};
  params.func = reinterpret_cast<void*>(&busy);
  params.gridDim = dim3{1};
  params.blockDim = dim3{32};
  void* arguments[1] = {argument};
  params.kernelParams = arguments;
  cudaGraphNode_t node = nullptr;
  check(cudaGraphAddKernelNode(&node, graph, after != nullptr ? &after : nullptr,
                               after != nullptr ? 1 : 0, &params),
        "cudaGraphAddKernelNode");
  return node;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = option(argc, argv, "--threads", 4);
  const int per_thread = option(argc, argv, "--per-thread", 250);
  const int replays = option(argc, argv, "--replays", 50);
  unsigned long long spin_ns =
      static_cast<unsigned long long>(option(argc, argv, "--spin-ns", 20000));
  constexpr int cooperative_launches = 20;
  constexpr int cluster_launches = 20;

  check(cudaFree(nullptr), "CUDA initialisation");
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
  if (properties.major < 9) {
    std::fprintf(stderr,
                 "runtime_forms: thread-block clusters need sm_90 or newer, this is sm_%d%d\n",
                 properties.major, properties.minor);
    return 1;
  }
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

  // Before the range: the explicit graph with a child, and the graphs captured for an update.
  unsigned long long child_ns = spin_ns;
  cudaGraph_t child = nullptr;
  check(cudaGraphCreate(&child, 0), "cudaGraphCreate");
  add_busy(child, add_busy(child, nullptr, &child_ns), &child_ns);
  cudaGraph_t parent = nullptr;
  check(cudaGraphCreate(&parent, 0), "cudaGraphCreate");
  cudaGraphNode_t first = add_busy(parent, nullptr, &spin_ns);
  cudaGraphNode_t child_node = nullptr;
  check(cudaGraphAddChildGraphNode(&child_node, parent, &first, 1, child),
        "cudaGraphAddChildGraphNode");
  add_busy(parent, child_node, &spin_ns);
  constexpr int parent_kernels = 4;  // first, the child's two, last
  cudaGraphExec_t with_child = nullptr;
  check(cudaGraphInstantiate(&with_child, parent, 0), "cudaGraphInstantiate (child)");

  constexpr int update_kernels = 3;
  cudaGraph_t before_update = captured(stream, update_kernels, spin_ns);
  cudaGraph_t after_update = captured(stream, update_kernels, 2 * spin_ns);
  cudaGraphExec_t updated = nullptr;
  check(cudaGraphInstantiate(&updated, before_update, 0), "cudaGraphInstantiate (update)");
  check(cudaDeviceSynchronize(), "warm-up sync");

  long long expected = 0;
  check(cudaProfilerStart(), "cudaProfilerStart");

  // Several threads, a stream each.
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      cudaStream_t own = nullptr;
      check(cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking), "worker stream");
      for (int i = 0; i < per_thread; ++i) busy<<<1, 32, 0, own>>>(spin_ns);
      check(cudaStreamSynchronize(own), "worker sync");
      check(cudaStreamDestroy(own), "worker stream destroy");
    });
  }
  for (auto& worker : workers) worker.join();
  expected += static_cast<long long>(threads) * per_thread;

  // Cooperative launches: one block per multiprocessor, all resident, a grid-wide sync.
  for (int i = 0; i < cooperative_launches; ++i) {
    void* arguments[1] = {&spin_ns};
    check(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(&busy_then_grid_sync),
                                      dim3(properties.multiProcessorCount), dim3(128), arguments,
                                      0, stream),
          "cudaLaunchCooperativeKernel");
  }
  expected += cooperative_launches;

  // Thread-block clusters of two.
  for (int i = 0; i < cluster_launches; ++i) {
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(16);
    config.blockDim = dim3(128);
    config.stream = stream;
    cudaLaunchAttribute cluster{};
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim.x = 2;
    cluster.val.clusterDim.y = 1;
    cluster.val.clusterDim.z = 1;
    config.attrs = &cluster;
    config.numAttrs = 1;
    check(cudaLaunchKernelEx(&config, busy_then_cluster_sync, spin_ns), "cudaLaunchKernelEx");
  }
  expected += cluster_launches;

  // The explicit graph with its child graph.
  for (int r = 0; r < replays; ++r) check(cudaGraphLaunch(with_child, stream), "replay (child)");
  expected += static_cast<long long>(replays) * parent_kernels;

  // The captured graph, updated in place to other parameters between its replays.
  for (int r = 0; r < replays; ++r) check(cudaGraphLaunch(updated, stream), "replay (before)");
  cudaGraphExecUpdateResultInfo result{};
  check(cudaGraphExecUpdate(updated, after_update, &result), "cudaGraphExecUpdate");
  for (int r = 0; r < replays; ++r) check(cudaGraphLaunch(updated, stream), "replay (after)");
  expected += 2LL * replays * update_kernels;

  // A graph captured inside the range: its launches are recorded, run only at its replays.
  cudaGraph_t inside = captured(stream, 2, spin_ns);
  cudaGraphExec_t inside_exec = nullptr;
  check(cudaGraphInstantiate(&inside_exec, inside, 0), "cudaGraphInstantiate (inside)");
  for (int r = 0; r < replays; ++r) check(cudaGraphLaunch(inside_exec, stream), "replay (inside)");
  expected += 2LL * replays;

  check(cudaStreamSynchronize(stream), "sync");
  check(cudaProfilerStop(), "cudaProfilerStop");

  check(cudaGraphExecDestroy(inside_exec), "destroy");
  check(cudaGraphDestroy(inside), "destroy");
  check(cudaGraphExecDestroy(updated), "destroy");
  check(cudaGraphDestroy(before_update), "destroy");
  check(cudaGraphDestroy(after_update), "destroy");
  check(cudaGraphExecDestroy(with_child), "destroy");
  check(cudaGraphDestroy(parent), "destroy");
  check(cudaGraphDestroy(child), "destroy");
  check(cudaStreamDestroy(stream), "destroy");
  std::printf("expected kernels: %lld\n", expected);
  return 0;
}
