# Unity builds: CMake compiles a target's C++ files eight at a time, each batch one translation unit,
# so the headers they share (GoogleTest's and gmock's, fmt's, launchwatch's own) are parsed once a
# batch rather than once a file. CI builds every preset from nothing on 2 cores, and there a build of
# the tsan preset took 470 s one file at a time and about half that in batches (2026-12-04,
# CONTRIBUTING.md). A file whose names clash with another's once they share a unit (two anonymous
# namespaces become one) opts out with SKIP_UNITY_BUILD_INCLUSION, saying why; CUDA and HIP files are
# never batched (CMake 3.25 batches C and C++ only). -DLAUNCHWATCH_UNITY_BUILD=OFF builds file by
# file, and a project that includes launchwatch gets file by file unless it asks. A batch hides a
# file's missing include when a file before it in the batch has it, so the fuzz preset (the
# libraries, with clang) builds file by file: CI still compiles each library source alone.
option(LAUNCHWATCH_UNITY_BUILD "Compile C++ files in batches (unity builds)" ${PROJECT_IS_TOP_LEVEL})
if(LAUNCHWATCH_UNITY_BUILD)
  set(CMAKE_UNITY_BUILD ON)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE 8)
endif()
