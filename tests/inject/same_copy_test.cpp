// launchwatch's injection attached in-process to a program that links the same copy of launchwatch
// (NVTX's static injection hook points at it): the program's NVTX ranges become scopes, and its
// launchwatch scopes, which reach the injection as NVTX ranges too, are entered once, not twice.

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include "nvtx_ranges.hpp"

extern "C" {
NvtxInitializeInjectionNvtxFunc_t InitializeInjectionNvtx2_fnptr = &launchwatch::detail::fill_nvtx_export_table;
}
