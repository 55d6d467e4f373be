# Finds NVTX 3 (header-only, shipped with the CUDA toolkit) for scopes-as-NVTX-ranges and for the
# NVTX side of launchwatch's injection library. Found in CPU-only builds too when the toolkit is
# installed, so both are tested without CUDA; where it is absent both are left out and said so.
# Sets LAUNCHWATCH_HAS_NVTX and LAUNCHWATCH_NVTX_INCLUDE_DIR (a plain folder, not a target, so the
# installed package's static libraries name no target the package does not export).
set(launchwatch_nvtx_hints /usr/local/cuda/include)
if(CUDAToolkit_INCLUDE_DIRS)
  list(PREPEND launchwatch_nvtx_hints ${CUDAToolkit_INCLUDE_DIRS})
endif()
find_path(LAUNCHWATCH_NVTX_INCLUDE_DIR nvtx3/nvToolsExt.h HINTS ${launchwatch_nvtx_hints}
  DOC "The folder holding nvtx3/nvToolsExt.h (NVTX 3, from the CUDA toolkit)")
if(LAUNCHWATCH_NVTX_INCLUDE_DIR)
  set(LAUNCHWATCH_HAS_NVTX ON)
else()
  set(LAUNCHWATCH_HAS_NVTX OFF)
endif()
message(STATUS "launchwatch: NVTX ${LAUNCHWATCH_HAS_NVTX} ${LAUNCHWATCH_NVTX_INCLUDE_DIR}")
