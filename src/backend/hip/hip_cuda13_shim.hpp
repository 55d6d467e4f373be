// What HIP 5.2's NVIDIA platform headers need of CUDA that CUDA 12 and 13 removed or changed.
//
// HIP's nvidia_detail/nvidia_hip_runtime_api.h maps each hip* call onto a cuda* call in an inline
// function, and every one of them must compile, used or not. Against CUDA 13 some no longer do
// (45 errors under nvcc, 16 under g++): the texture reference API (removed in CUDA 12), cooperative
// multi-device launches, five cudaDeviceProp fields, and the calls whose signatures CUDA 13 changed
// (graph edges gained edge data, prefetch and advice take a cudaMemLocation, cuCtxCreate takes
// creation parameters, cudaStreamGetCaptureInfo_v2 became cudaStreamGetCaptureInfo). Nothing here
// is HIP's code and nothing of HIP's is changed: this header, included just before HIP's, gives
// those inline functions the old names and signatures, each over its CUDA 13 replacement, or, for
// what CUDA dropped without one, a function that says it is not supported. launchwatch calls none
// of these: they only have to compile. Included only by hip_api.hpp, on the NVIDIA platform.
//
// The one name that cannot be given back by a declaration is a struct field: cudaDeviceProp is
// renamed, for HIP's header only, to a struct derived from it that holds the removed fields, filled
// from cudaDeviceGetAttribute where CUDA 13 still has the attribute (hip_api.hpp undoes the rename
// after HIP's header).
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#if CUDART_VERSION >= 12000

/// Texture references, removed in CUDA 12: declared so HIP's wrappers compile; never defined.
template <class T, int dim, enum cudaTextureReadMode mode>
struct texture;

inline cudaError_t cudaBindTexture(size_t*, const struct textureReference*, const void*,
                                   const cudaChannelFormatDesc*, size_t = ~size_t{0}) {
  return cudaErrorNotSupported;
}
template <class T, int dim, enum cudaTextureReadMode mode>
cudaError_t cudaBindTexture(size_t*, const texture<T, dim, mode>&, const void*,
                            const cudaChannelFormatDesc&, size_t = ~size_t{0}) {
  return cudaErrorNotSupported;
}
template <class T, int dim, enum cudaTextureReadMode mode>
cudaError_t cudaBindTexture(size_t*, const texture<T, dim, mode>&, const void*,
                            size_t = ~size_t{0}) {
  return cudaErrorNotSupported;
}
inline cudaError_t cudaBindTexture2D(size_t*, const struct textureReference*, const void*,
                                     const cudaChannelFormatDesc*, size_t, size_t, size_t) {
  return cudaErrorNotSupported;
}
template <class T, int dim, enum cudaTextureReadMode mode>
cudaError_t cudaBindTextureToArray(const texture<T, dim, mode>&, cudaArray_const_t,
                                   const cudaChannelFormatDesc&) {
  return cudaErrorNotSupported;
}
template <class T, int dim, enum cudaTextureReadMode mode>
cudaError_t cudaBindTextureToArray(const texture<T, dim, mode>&, cudaArray_const_t) {
  return cudaErrorNotSupported;
}
template <class T, int dim, enum cudaTextureReadMode mode>
cudaError_t cudaUnbindTexture(const texture<T, dim, mode>&) {
  return cudaErrorNotSupported;
}
inline cudaError_t cudaGetTextureAlignmentOffset(size_t*, const struct textureReference*) {
  return cudaErrorNotSupported;
}

#endif  // CUDART_VERSION >= 12000

#if CUDART_VERSION >= 13000

/// Cooperative launches over several devices, removed in CUDA 13.
inline cudaError_t cudaLaunchCooperativeKernelMultiDevice(struct cudaLaunchParams*, unsigned int,
                                                          unsigned int = 0) {
  return cudaErrorNotSupported;
}
/// Its attribute's number before CUDA 13 (cudaDevAttrCooperativeMultiDeviceLaunch); CUDA 13 answers
/// it as an invalid attribute.
inline constexpr cudaDeviceAttr cudaDevAttrCooperativeMultiDeviceLaunch =
    static_cast<cudaDeviceAttr>(96);

/// cudaDeviceProp with the fields CUDA 13 removed, for HIP's hipGetDeviceProperties.
struct launchwatch_cuda12_device_prop : cudaDeviceProp {
  int clockRate = 0;
  int memoryClockRate = 0;
  int computeMode = 0;
  int kernelExecTimeoutEnabled = 0;
  int cooperativeMultiDeviceLaunch = 0;
};

/// The properties, and the removed fields from the attributes CUDA 13 keeps for them.
inline cudaError_t cudaGetDeviceProperties(launchwatch_cuda12_device_prop* prop, int device) {
  const cudaError_t status = cudaGetDeviceProperties(static_cast<cudaDeviceProp*>(prop), device);
  if (status != cudaSuccess) return status;
  (void)cudaDeviceGetAttribute(&prop->clockRate, cudaDevAttrClockRate, device);
  (void)cudaDeviceGetAttribute(&prop->memoryClockRate, cudaDevAttrMemoryClockRate, device);
  (void)cudaDeviceGetAttribute(&prop->computeMode, cudaDevAttrComputeMode, device);
  (void)cudaDeviceGetAttribute(&prop->kernelExecTimeoutEnabled, cudaDevAttrKernelExecTimeout,
                               device);
  return cudaSuccess;
}

/// Prefetch and advice to a device by its number (CUDA 13 takes a cudaMemLocation).
inline cudaError_t cudaMemPrefetchAsync(const void* ptr, size_t count, int device,
                                        cudaStream_t stream = nullptr) {
  return cudaMemPrefetchAsync(ptr, count, cudaMemLocation{cudaMemLocationTypeDevice, device}, 0,
                              stream);
}
inline cudaError_t cudaMemAdvise(const void* ptr, size_t count, cudaMemoryAdvise advice,
                                 int device) {
  return cudaMemAdvise(ptr, count, advice, cudaMemLocation{cudaMemLocationTypeDevice, device});
}

/// The graph calls without edge data (CUDA 13 added it; null means plain edges).
inline cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                                            const cudaGraphNode_t* to, size_t count) {
  return cudaGraphAddDependencies(graph, from, to, nullptr, count);
}
inline cudaError_t cudaGraphRemoveDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                                               const cudaGraphNode_t* to, size_t count) {
  return cudaGraphRemoveDependencies(graph, from, to, nullptr, count);
}
inline cudaError_t cudaGraphGetEdges(cudaGraph_t graph, cudaGraphNode_t* from, cudaGraphNode_t* to,
                                     size_t* count) {
  return cudaGraphGetEdges(graph, from, to, nullptr, count);
}
inline cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t* nodes,
                                                size_t* count) {
  return cudaGraphNodeGetDependencies(node, nodes, nullptr, count);
}
inline cudaError_t cudaGraphNodeGetDependentNodes(cudaGraphNode_t node, cudaGraphNode_t* nodes,
                                                  size_t* count) {
  return cudaGraphNodeGetDependentNodes(node, nodes, nullptr, count);
}
inline cudaError_t cudaStreamGetCaptureInfo_v2(cudaStream_t stream, cudaStreamCaptureStatus* status,
                                               unsigned long long* id = nullptr,
                                               cudaGraph_t* graph = nullptr,
                                               const cudaGraphNode_t** nodes = nullptr,
                                               size_t* count = nullptr) {
  return cudaStreamGetCaptureInfo(stream, status, id, graph, nodes, nullptr, count);
}
inline cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t stream, cudaGraphNode_t* nodes,
                                                       size_t count, unsigned int flags) {
  return cudaStreamUpdateCaptureDependencies(stream, nodes, nullptr, count, flags);
}

/// cuCtxCreate as HIP 5.2 calls it (CUDA 13's takes creation parameters first).
inline CUresult launchwatch_cuda12_ctx_create(CUcontext* context, unsigned int flags,
                                              CUdevice device) {
  return cuCtxCreate_v4(context, nullptr, flags, device);
}
#undef cuCtxCreate
#define cuCtxCreate launchwatch_cuda12_ctx_create

#define cudaDeviceProp launchwatch_cuda12_device_prop

#endif  // CUDART_VERSION >= 13000
