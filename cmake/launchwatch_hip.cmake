# Decides whether the HIP backend is built, and for which of HIP's platforms.
#
# LAUNCHWATCH_HIP=AUTO builds it where hipcc or HIP's headers are found, ON insists, OFF never.
# LAUNCHWATCH_HIP_PLATFORM says where its kernels run:
# - amd (the default): HIP's clang compiles kernels for AMD GPUs (CMake's HIP language), for the
#   architectures in CMAKE_HIP_ARCHITECTURES (default gfx90a;gfx942 with clang 17 or newer, see
#   cmake/launchwatch_hip_amd.cmake). A machine with no AMD GPU still compiles and links
#   everything; the GPU tests then skip. Nothing compiled so has run on an AMD GPU here.
# - nvidia: HIP's NVIDIA platform: HIP's API maps onto CUDA's (HIP's nvidia_detail headers), and
#   nvcc compiles the kernels, so the CUDA backend must be built too. CUDA 13 removed names that
#   HIP 5.2's nvidia_detail headers still use; src/backend/hip/hip_cuda13_shim.hpp restores them.
set(LAUNCHWATCH_HIP AUTO CACHE STRING
  "Build the HIP backend: AUTO (when hipcc or HIP's headers are found), ON or OFF")
set_property(CACHE LAUNCHWATCH_HIP PROPERTY STRINGS AUTO ON OFF)
set(LAUNCHWATCH_HIP_PLATFORM amd CACHE STRING
  "Where the HIP backend's kernels run: amd (HIP's clang) or nvidia (HIP over CUDA, nvcc)")
set_property(CACHE LAUNCHWATCH_HIP_PLATFORM PROPERTY STRINGS amd nvidia)
set(LAUNCHWATCH_HIP_INCLUDE_DIR "" CACHE PATH
  "The folder holding hip/hip_runtime_api.h, when it is not in a standard place")

set(LAUNCHWATCH_HAS_HIP OFF)
set(LAUNCHWATCH_HIP_ON_NVIDIA OFF)

# Gives `target`'s own sources HIP's headers for the NVIDIA platform (HIP over CUDA). Only the HIP
# backend's sources and tests that call HIP include them; kernel files need none (hip_entry.hpp).
function(launchwatch_use_hip_nvidia_headers target)
  target_include_directories(${target} SYSTEM PRIVATE ${LAUNCHWATCH_HIP_NVIDIA_HEADERS})
  target_compile_definitions(${target} PRIVATE __HIP_PLATFORM_NVIDIA__)
  target_link_libraries(${target} PRIVATE CUDA::cudart)
endfunction()

# fmt 9 turns constexpr off under nvcc, which then breaks its C++20 paths, and nvcc's front end
# cannot evaluate its consteval format checks: keep constexpr on and check format strings at run
# time in `target`'s files nvcc compiles (as tests/cuda does).
function(launchwatch_fmt_under_nvcc target)
  target_compile_definitions(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:FMT_USE_CONSTEXPR=1> $<$<COMPILE_LANGUAGE:CUDA>:FMT_CONSTEVAL=>)
endfunction()

function(launchwatch_hip_unavailable why)
  if(LAUNCHWATCH_HIP STREQUAL "ON")
    message(FATAL_ERROR "LAUNCHWATCH_HIP=ON but ${why}; or configure with -DLAUNCHWATCH_HIP=OFF")
  endif()
  message(STATUS "launchwatch: HIP backend OFF (${why})")
endfunction()

if(NOT LAUNCHWATCH_HIP STREQUAL "OFF")
  find_path(launchwatch_hip_headers hip/hip_runtime_api.h
    HINTS ${LAUNCHWATCH_HIP_INCLUDE_DIR} $ENV{HIP_PATH}/include /opt/rocm/include NO_CACHE)
  find_program(LAUNCHWATCH_HIPCC hipcc HINTS $ENV{HIP_PATH}/bin /opt/rocm/bin)
  if(NOT launchwatch_hip_headers)
    launchwatch_hip_unavailable("HIP's headers were not found (install libamdhip64-dev, or set \
LAUNCHWATCH_HIP_INCLUDE_DIR to the folder holding hip/hip_runtime_api.h)")
  elseif(LAUNCHWATCH_HIP_PLATFORM STREQUAL "nvidia")
    if(NOT LAUNCHWATCH_HAS_CUDA)
      launchwatch_hip_unavailable("LAUNCHWATCH_HIP_PLATFORM=nvidia needs the CUDA backend (nvcc)")
    else()
      set(LAUNCHWATCH_HIP_NVIDIA_HEADERS ${launchwatch_hip_headers} CACHE INTERNAL
        "HIP's headers for the NVIDIA platform")
      set(LAUNCHWATCH_HAS_HIP ON)
      set(LAUNCHWATCH_HIP_ON_NVIDIA ON)
    endif()
  elseif(NOT LAUNCHWATCH_HIPCC AND NOT CMAKE_HIP_COMPILER)
    launchwatch_hip_unavailable("hipcc was not found (install hipcc, or set CMAKE_HIP_COMPILER to \
HIP's clang++)")
  else()
    include(cmake/launchwatch_hip_amd.cmake)
  endif()
elseif(LAUNCHWATCH_HIP_PLATFORM STREQUAL "nvidia")
  message(STATUS "launchwatch: HIP backend OFF (LAUNCHWATCH_HIP=OFF)")
endif()
set(LAUNCHWATCH_HAS_HIP ${LAUNCHWATCH_HAS_HIP} CACHE INTERNAL "Whether the HIP backend is built")
set(LAUNCHWATCH_HIP_ON_NVIDIA ${LAUNCHWATCH_HIP_ON_NVIDIA} CACHE INTERNAL
  "Whether the HIP backend runs on HIP's NVIDIA platform")
if(LAUNCHWATCH_HAS_HIP)
  message(STATUS "launchwatch: HIP backend ON (platform ${LAUNCHWATCH_HIP_PLATFORM})")
endif()
