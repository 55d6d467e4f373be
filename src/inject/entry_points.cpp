// liblaunchwatch_inject.so's entry points, which with the C API (c_api.hpp) are the only symbols
// it exports (inject.map): CUDA's driver calls InitializeInjection at cuInit when
// CUDA_INJECTION64_PATH names this library, NVTX calls InitializeInjectionNvtx2 once per module
// when NVTX_INJECTION64_PATH does (`launchwatch run` sets both), and launchwatch's Python package
// calls launchwatch_attach when it loads the library. Everything else in the library (launchwatch
// itself included) is private to it, so a program that links launchwatch too keeps its own copy
// apart from this one.

#include <nvtx3/nvToolsExt.h>

#include "c_api.hpp"
#include "nvtx_ranges.hpp"
#include "run_session.hpp"

extern "C" {

/// Starts the session and the CUDA bridge. Returns 1: the driver goes on whatever happened (the
/// program must run, watched or not).
__attribute__((visibility("default"))) int InitializeInjection() {
  launchwatch::detail::watch_cuda_in_run_session();
  return 1;
}

/// Starts the session and fills this module's NVTX table, so its ranges become scopes.
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  launchwatch::detail::start_run_session();
  return launchwatch::detail::fill_nvtx_export_table(get_export_table);
}

int launchwatch_attach() {
  launchwatch::detail::start_run_session();
  return launchwatch_c_api_version();
}

}  // extern "C"
