# Decides whether the CUDA backend is built. AUTO builds it where nvcc can be found, so a machine
# with the toolkit and no GPU still compiles and links every CUDA source (the GPU tests then skip).
set(LAUNCHWATCH_HAS_CUDA OFF)
# How launchwatch's binaries link the CUDA runtime. Shared (libcudart.so) is what a program's own
# CUDA code shares with launchwatch's backend, and what the tests and the installed package use.
# Static copies the runtime into the launchwatch program and liblaunchwatch_inject.so, so they run
# with nothing of the toolkit but the driver: the wheel's (docs/design.md, "The wheel").
set(LAUNCHWATCH_CUDA_RUNTIME Shared
  CACHE STRING "How launchwatch links the CUDA runtime: Shared or Static")
set_property(CACHE LAUNCHWATCH_CUDA_RUNTIME PROPERTY STRINGS Shared Static)
if(NOT LAUNCHWATCH_CUDA_RUNTIME MATCHES "^(Shared|Static)$")
  message(FATAL_ERROR
    "LAUNCHWATCH_CUDA_RUNTIME is '${LAUNCHWATCH_CUDA_RUNTIME}'; use Shared or Static")
endif()
if(LAUNCHWATCH_CUDA_RUNTIME STREQUAL "Static" AND
   (LAUNCHWATCH_BUILD_TESTS OR LAUNCHWATCH_BUILD_BENCHMARKS))
  message(FATAL_ERROR "LAUNCHWATCH_CUDA_RUNTIME=Static is for the wheel's binaries: the tests and "
    "benchmarks link the shared CUDA runtime. Configure with -DLAUNCHWATCH_BUILD_TESTS=OFF "
    "-DLAUNCHWATCH_BUILD_BENCHMARKS=OFF (the `wheel` preset does), or keep Shared.")
endif()
if(NOT LAUNCHWATCH_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # No GPU here to ask (`native` fails without one): build for the H200 the project measures on.
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    # Every CUDA target links the same CUDA runtime as launchwatch's backend: a kernel registered
    # with another copy of the runtime is unknown to launchwatch's, and cannot launch.
    set(CMAKE_CUDA_RUNTIME_LIBRARY ${LAUNCHWATCH_CUDA_RUNTIME})
    enable_language(CUDA)
    # CMake 3.25 does not know how to ask nvcc for C++20 through CMAKE_CUDA_STANDARD.
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(LAUNCHWATCH_HAS_CUDA ON)
    # The runtime target every launchwatch library that calls the CUDA runtime links.
    if(LAUNCHWATCH_CUDA_RUNTIME STREQUAL "Static")
      set(LAUNCHWATCH_CUDART CUDA::cudart_static)
    else()
      set(LAUNCHWATCH_CUDART CUDA::cudart)
    endif()
  elseif(LAUNCHWATCH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "LAUNCHWATCH_CUDA=ON but no CUDA compiler was found: install the CUDA toolkit "
      "or set CMAKE_CUDA_COMPILER to nvcc, or configure with -DLAUNCHWATCH_CUDA=OFF")
  endif()
endif()
set(LAUNCHWATCH_HAS_CUDA ${LAUNCHWATCH_HAS_CUDA} CACHE INTERNAL "Whether the CUDA backend is built")
message(STATUS "launchwatch: CUDA backend ${LAUNCHWATCH_HAS_CUDA}")
