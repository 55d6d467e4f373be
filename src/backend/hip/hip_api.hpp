// HIP's runtime API, as the HIP backend's sources include it: on the NVIDIA platform through the
// shim that lets HIP 5.2's NVIDIA headers compile against CUDA 13 (hip_cuda13_shim.hpp).
#pragma once

#if defined(__HIP_PLATFORM_NVIDIA__)
#include "hip_cuda13_shim.hpp"
#endif

#include <hip/hip_runtime_api.h>

#if defined(__HIP_PLATFORM_NVIDIA__) && CUDART_VERSION >= 13000
// The shim's renames end with HIP's header: the code that follows sees CUDA's own names.
#undef cudaDeviceProp
#undef cuCtxCreate
#define cuCtxCreate cuCtxCreate_v4
#endif
