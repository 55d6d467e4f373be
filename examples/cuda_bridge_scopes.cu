// Every CUDA kernel of a C++ program in launchwatch's reports: cuBLAS's and the program's own
// `<<<>>>` kernels, named by launchwatch scopes and by NVTX ranges (plain and in a domain), on
// several threads.
//
// Run it on its own: it watches itself with an in-process launchwatch::cuda_bridge and prints the
// tree. Run it under `launchwatch run -- cuda_bridge_scopes`: it leaves CUPTI to that tool (which
// injected itself through CUDA_INJECTION64_PATH), and its scopes reach the tool as NVTX ranges.
//
//   cuda_bridge_scopes [--threads N] [--steps N] [--profile-window] [--graph REPLAYS]
//
// --profile-window brackets part of the work with cudaProfilerStart/Stop and says how many launches
// it made inside: `launchwatch run --capture-range cuda-profiler-api` counts exactly those.
// --graph REPLAYS then captures a CUDA graph of a few kernels in the NVTX range "graph capture" and
// replays it REPLAYS times in "graph replay": the replayed kernels' device time goes to the range
// the graph was captured in (cuda_graph_replays::per_node, which `launchwatch run` uses).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <cublas_v2.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <launchwatch/launchwatch.hpp>

namespace {

constexpr int n = 256;  // square matrices: one SGEMM a step

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s: cuBLAS status %d\n", what, static_cast<int>(status));
    std::exit(1);
  }
}

__global__ void fill(float* data, int count, float value) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) data[i] = value + static_cast<float>(i % 7);
}

__global__ void scale(float* data, int count, float by) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) data[i] *= by;
}

/// One thread's work: `steps` steps of fill, SGEMM and scale on its own stream.
void worker(int index, int steps, nvtxDomainHandle_t library) {
  launchwatch::scope named{"worker " + std::to_string(index)};
  cudaStream_t stream = nullptr;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  cublasHandle_t blas = nullptr;
  check(cublasCreate(&blas), "cublasCreate");
  check(cublasSetStream(blas, stream), "cublasSetStream");
  float* a = nullptr;
  float* b = nullptr;
  float* c = nullptr;
  for (float** matrix : {&a, &b, &c}) check(cudaMalloc(matrix, sizeof(float) * n * n), "cudaMalloc");
  const int blocks = (n * n + 255) / 256;
  for (int step = 0; step < steps; ++step) {
    nvtxRangePushA("step");  // a plain NVTX range: a scope under `launchwatch run`
    {
      launchwatch::scope inputs{"fill"};
      fill<<<blocks, 256, 0, stream>>>(a, n * n, 1.0f);
      fill<<<blocks, 256, 0, stream>>>(b, n * n, 2.0f);
    }
    nvtxEventAttributes_t gemm{};
    gemm.version = NVTX_VERSION;
    gemm.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    gemm.messageType = NVTX_MESSAGE_TYPE_ASCII;
    gemm.message.ascii = "gemm";
    nvtxDomainRangePushEx(library, &gemm);  // a range in a domain of its own, as libraries do
    const float one = 1.0f;
    const float zero = 0.0f;
    check(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n), "cublasSgemm");
    nvtxDomainRangePop(library);
    {
      launchwatch::scope output{"scale"};
      scale<<<blocks, 256, 0, stream>>>(c, n * n, 0.5f);
    }
    nvtxRangePop();
  }
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  for (float* matrix : {a, b, c}) check(cudaFree(matrix), "cudaFree");
  check(cublasDestroy(blas), "cublasDestroy");
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
}

/// Launches `count` scale kernels inside cudaProfilerStart/Stop, with launches before and after.
void profile_window(int count) {
  float* data = nullptr;
  check(cudaMalloc(&data, sizeof(float) * n), "cudaMalloc");
  fill<<<1, n>>>(data, n, 1.0f);  // before the window: not counted
  check(cudaProfilerStart(), "cudaProfilerStart");
  for (int i = 0; i < count; ++i) scale<<<1, n>>>(data, n, 1.0f);
  check(cudaProfilerStop(), "cudaProfilerStop");
  fill<<<1, n>>>(data, n, 1.0f);  // after it: not counted
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  check(cudaFree(data), "cudaFree");
  std::printf("launches inside the profiler window: %d\n", count);
}

constexpr int graph_kernels = 3;

/// Captures `graph_kernels` kernels into a graph in one NVTX range and replays it `replays` times in
/// another.
void graph_work(int replays) {
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  float* data = nullptr;
  check(cudaMalloc(&data, sizeof(float) * n * n), "cudaMalloc");
  const int blocks = (n * n + 255) / 256;
  cudaGraph_t graph = nullptr;
  nvtxRangePushA("graph capture");
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  fill<<<blocks, 256, 0, stream>>>(data, n * n, 1.0f);
  for (int i = 1; i < graph_kernels; ++i) scale<<<blocks, 256, 0, stream>>>(data, n * n, 0.5f);
  check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
  nvtxRangePop();
  cudaGraphExec_t exec = nullptr;
  check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  nvtxRangePushA("graph replay");
  for (int r = 0; r < replays; ++r) check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
  nvtxRangePop();
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  check(cudaGraphExecDestroy(exec), "cudaGraphExecDestroy");
  check(cudaGraphDestroy(graph), "cudaGraphDestroy");
  check(cudaFree(data), "cudaFree");
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  std::printf("graph replays: %d of %d kernels\n", replays, graph_kernels);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  int steps = 3;
  bool window = false;
  int replays = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--steps") == 0 && i + 1 < argc) {
      steps = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--profile-window") == 0) {
      window = true;
    } else if (std::strcmp(argv[i], "--graph") == 0 && i + 1 < argc) {
      replays = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: cuda_bridge_scopes [--threads N] [--steps N] [--profile-window] [--graph REPLAYS]\n");
      return 2;
    }
  }

  // Watched from outside (`launchwatch run`, Nsight): CUPTI has one subscriber, and it is that
  // tool's. Otherwise the bridge makes every CUDA kernel of this process a launchwatch launch.
  std::optional<launchwatch::cuda_bridge> bridge;
  if (std::getenv("CUDA_INJECTION64_PATH") == nullptr) {
    try {
      launchwatch::cuda_bridge_options options;
      options.graph_replays = launchwatch::cuda_graph_replays::per_node;  // replays in the reports
      bridge.emplace(options);
    } catch (const launchwatch::cuda_bridge_unavailable& unavailable) {
      std::fprintf(stderr, "not watching in-process: %s\n", unavailable.what());
    }
  }

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "no CUDA device here\n");
    return 1;
  }
  const nvtxDomainHandle_t library = nvtxDomainCreateA("example library");
  const auto work = [&] {
    if (window) {
      profile_window(5);
      return;
    }
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t, steps, library);
    for (auto& thread : pool) thread.join();
    if (replays > 0) graph_work(replays);
  };
  if (!bridge) {
    work();
    return 0;
  }
  const auto pass = launchwatch::attribute_pass([&] {
    work();
    bridge->flush();  // the replays' node times arrive from CUPTI's records
  });
  launchwatch::write_tree(std::cout, launchwatch::summarize(pass));
  return 0;
}
