# The HIP backend for AMD GPUs: CMake's HIP language with HIP's clang.
#
# The compiler. Debian's hipcc drives clang 15, and clang 15 compiles the HIP backend, but it
# crashes (a segmentation fault in its device pass) on every GoogleTest file in C++20 HIP mode: the
# smallest case is a class holding a std::map<std::string, T> whose T has no default constructor,
# which gtest-internal.h declares. Debian's clang 19 (clang-19, lld-19, clang-tools-19 for its
# offload bundler, llvm-19 for llvm-as) does not, and it knows gfx942, so it is preferred where
# installed, then clang 16 (which does not know gfx942), with HIP 5.2's headers, device libraries
# and runtime all the same; called from its own folder, so it finds its own lld and offload bundler.
if(NOT CMAKE_HIP_COMPILER)
  find_program(launchwatch_hip_clang clang++
    HINTS /usr/lib/llvm-19/bin /usr/lib/llvm-16/bin NO_DEFAULT_PATH NO_CACHE)
  if(NOT launchwatch_hip_clang)
    # HIP's own clang: hipconfig says where; Debian's HIP 5.2 is built for clang 15.
    execute_process(COMMAND hipconfig --hipclangpath OUTPUT_VARIABLE launchwatch_hip_clang_dir
      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    find_program(launchwatch_hip_clang NAMES clang++-15 clang++
      HINTS ${launchwatch_hip_clang_dir} /opt/rocm/llvm/bin NO_CACHE)
  endif()
  if(launchwatch_hip_clang)
    set(CMAKE_HIP_COMPILER ${launchwatch_hip_clang})
  endif()
endif()
if(CMAKE_HIP_COMPILER)
  execute_process(COMMAND ${CMAKE_HIP_COMPILER} --version OUTPUT_VARIABLE launchwatch_hip_clang_says
    ERROR_QUIET)
  string(REGEX MATCH "clang version ([0-9]+)" launchwatch_hip_clang_says
    "${launchwatch_hip_clang_says}")
  set(launchwatch_hip_clang_major "${CMAKE_MATCH_1}")
  get_filename_component(launchwatch_hip_clang_dir ${CMAKE_HIP_COMPILER} DIRECTORY)
endif()

# Architectures: gfx90a (MI200) and gfx942 (MI300X, MI300A), compiled and linked here, never run
# (no AMD GPU is lent). gfx942 needs clang 17 or newer (older ones say "invalid target ID
# 'gfx942'"), so with an older clang the default is gfx90a alone. Debian's HIP 5.2 device libraries
# predate gfx942; cmake/launchwatch_hip_device_libs.cmake supplies the one file they lack.
if(NOT DEFINED CMAKE_HIP_ARCHITECTURES)
  if(launchwatch_hip_clang_major AND launchwatch_hip_clang_major LESS 17)
    set(CMAKE_HIP_ARCHITECTURES gfx90a)
    message(STATUS "launchwatch: HIP for gfx90a only: clang ${launchwatch_hip_clang_major} does \
not know gfx942 (clang 17 or newer does: install clang-19 lld-19 clang-tools-19 llvm-19)")
  else()
    set(CMAKE_HIP_ARCHITECTURES gfx90a gfx942)
  endif()
endif()

# Debian installs HIP's CMake packages under lib/<multiarch>/cmake, where CMake 3.25's HIP language
# does not look (it wants <ROCm root>/lib/cmake/hip-lang), and ships the device libraries' bitcode
# without their CMake package. A ROCm root of links in the build tree points CMake at Debian's
# files; a ROCm installation (/opt/rocm) needs none of it.
execute_process(COMMAND hipconfig --rocmpath OUTPUT_VARIABLE launchwatch_rocm_path
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT launchwatch_rocm_path)
  set(launchwatch_rocm_path /usr)
endif()
if(NOT CMAKE_HIP_COMPILER_ROCM_ROOT AND
   NOT EXISTS ${launchwatch_rocm_path}/lib/cmake/hip-lang/hip-lang-config.cmake)
  set(multiarch_cmake ${launchwatch_rocm_path}/lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake)
  find_path(launchwatch_device_libs oclc_isa_version_90a.bc
    HINTS ${launchwatch_rocm_path}/lib/${CMAKE_LIBRARY_ARCHITECTURE}/amdgcn/bitcode NO_CACHE)
  if(EXISTS ${multiarch_cmake}/hip-lang/hip-lang-config.cmake AND launchwatch_device_libs)
    # hip-lang's package finds HIP's headers and library four folders above itself (it expects
    # lib/<arch>/cmake/hip-lang, CMake's HIP language looks in lib/cmake/hip-lang), and would name
    # /usr/include a system include folder of every HIP source, which puts it before the C++
    # library's own and breaks its #include_next <math.h> under clang 16. So the root holds a copy
    # of the package four folders below a prefix that links to HIP's headers and library only.
    set(prefix ${PROJECT_BINARY_DIR}/rocm)
    set(root ${prefix}/root)
    file(MAKE_DIRECTORY ${root}/lib/cmake/AMDDeviceLibs ${prefix}/include
      ${prefix}/lib/${CMAKE_LIBRARY_ARCHITECTURE})
    file(COPY ${multiarch_cmake}/hip-lang DESTINATION ${root}/lib/cmake)
    file(GLOB launchwatch_amdhip64
      ${launchwatch_rocm_path}/lib/${CMAKE_LIBRARY_ARCHITECTURE}/libamdhip64.so*)
    foreach(library ${launchwatch_amdhip64})
      get_filename_component(name ${library} NAME)
      file(CREATE_LINK ${library} ${prefix}/lib/${CMAKE_LIBRARY_ARCHITECTURE}/${name} SYMBOLIC)
    endforeach()
    foreach(headers hip hsa)
      file(CREATE_LINK ${launchwatch_rocm_path}/include/${headers} ${prefix}/include/${headers}
        SYMBOLIC)
    endforeach()
    file(CREATE_LINK /usr/bin ${root}/bin SYMBOLIC)
    # hip-lang's package only asks that the device libraries' package be found; the compiler finds
    # the bitcode through --hip-device-lib-path below.
    file(WRITE ${root}/lib/cmake/AMDDeviceLibs/AMDDeviceLibsConfig.cmake
      "# Written by launchwatch: Debian ships the device libraries without this package.\n")
    # HIP's packages set old policies, under which CMake would warn about the _ROOT variables.
    set(CMAKE_POLICY_DEFAULT_CMP0074 NEW)
    set(ENV{AMDDeviceLibs_ROOT} ${root}/lib/cmake/AMDDeviceLibs)
    set(ENV{amd_comgr_ROOT} ${multiarch_cmake}/amd_comgr)
    set(ENV{hsa-runtime64_ROOT} ${multiarch_cmake}/hsa-runtime64)
    set(CMAKE_HIP_COMPILER_ROCM_ROOT ${root})
    string(APPEND CMAKE_HIP_FLAGS " --rocm-path=${launchwatch_rocm_path}")
    include(cmake/launchwatch_hip_device_libs.cmake)
    launchwatch_hip_device_libs(launchwatch_device_libs launchwatch_device_libs_missing
      ${launchwatch_device_libs} "${launchwatch_hip_clang_dir}" "${CMAKE_HIP_ARCHITECTURES}")
    if(launchwatch_device_libs)
      string(APPEND CMAKE_HIP_FLAGS " --hip-device-lib-path=${launchwatch_device_libs}")
    endif()
  endif()
endif()

# hip-lang links clang's compiler-rt builtins (for __fp16) and looks for them beside the compiler
# only; Debian's clang 19 and 16 come without them (libclang-rt-19-dev is only recommended), so
# take the compiler's own where installed, else any installed clang's (libclang-rt-dev).
if(CMAKE_HIP_COMPILER AND NOT launchwatch_device_libs_missing AND NOT CLANGRT_BUILTINS)
  execute_process(COMMAND ${CMAKE_HIP_COMPILER} --rtlib=compiler-rt -print-libgcc-file-name
    OUTPUT_VARIABLE launchwatch_clang_rt OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT EXISTS "${launchwatch_clang_rt}")
    file(GLOB launchwatch_clang_rt
      /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.builtins-${CMAKE_SYSTEM_PROCESSOR}.a
      /usr/lib/clang/*/lib/linux/libclang_rt.builtins-${CMAKE_SYSTEM_PROCESSOR}.a)
  endif()
  if(launchwatch_clang_rt)
    list(GET launchwatch_clang_rt 0 launchwatch_clang_rt)
    set(CLANGRT_BUILTINS ${launchwatch_clang_rt} CACHE FILEPATH "clang's compiler-rt builtins")
    # CMake's check of the compiler configures a project of its own, which sees the environment.
    get_filename_component(launchwatch_clang_rt_dir ${launchwatch_clang_rt} DIRECTORY)
    set(ENV{CMAKE_LIBRARY_PATH} "${launchwatch_clang_rt_dir}")
  endif()
endif()

if(launchwatch_device_libs_missing)
  launchwatch_hip_unavailable("${launchwatch_device_libs_missing}")
elseif(CMAKE_HIP_COMPILER)
  enable_language(HIP)
  set(CMAKE_HIP_STANDARD 20)
  set(CMAKE_HIP_STANDARD_REQUIRED ON)
  set(CMAKE_HIP_EXTENSIONS OFF)
  find_package(hip CONFIG REQUIRED
    HINTS ${launchwatch_rocm_path}/lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake)
  set(LAUNCHWATCH_HAS_HIP ON)
  message(STATUS "launchwatch: HIP for ${CMAKE_HIP_ARCHITECTURES} with ${CMAKE_HIP_COMPILER}")
else()
  launchwatch_hip_unavailable("no HIP compiler works here (install hipcc, or set \
CMAKE_HIP_COMPILER to HIP's clang++)")
endif()
