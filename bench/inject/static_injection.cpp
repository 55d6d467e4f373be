// NVTX's static injection hook for launchwatch_run_memory_bench: this program's NVTX ranges go to
// the injection's handlers in-process. Apart from run_memory.cpp, since NVTX declares the hook weak
// where its implementation is included, and it is defined here, where it is not (NVTX_NO_IMPL).

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include "nvtx_ranges.hpp"

extern "C" {
NvtxInitializeInjectionNvtxFunc_t InitializeInjectionNvtx2_fnptr = &launchwatch::detail::fill_nvtx_export_table;
}
