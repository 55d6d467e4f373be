# Decides whether the CUDA backend is built. AUTO builds it where nvcc can be found, so a machine
# with the toolkit and no GPU still compiles and links every CUDA source (the GPU tests then skip).
set(LAUNCHWATCH_HAS_CUDA OFF)
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
    # Every CUDA target links the shared CUDA runtime, the one launchwatch's backend uses: a kernel
    # registered with a static copy of the runtime is unknown to launchwatch's, and cannot launch.
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    enable_language(CUDA)
    # CMake 3.25 does not know how to ask nvcc for C++20 through CMAKE_CUDA_STANDARD.
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(LAUNCHWATCH_HAS_CUDA ON)
  elseif(LAUNCHWATCH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "LAUNCHWATCH_CUDA=ON but no CUDA compiler was found: install the CUDA toolkit "
      "or set CMAKE_CUDA_COMPILER to nvcc, or configure with -DLAUNCHWATCH_CUDA=OFF")
  endif()
endif()
set(LAUNCHWATCH_HAS_CUDA ${LAUNCHWATCH_HAS_CUDA} CACHE INTERNAL "Whether the CUDA backend is built")
message(STATUS "launchwatch: CUDA backend ${LAUNCHWATCH_HAS_CUDA}")
