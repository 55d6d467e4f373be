# The libFuzzer build (LAUNCHWATCH_FUZZ, the `fuzz` preset): clang++ only, since libFuzzer is part of
# clang. Every library is compiled with libFuzzer's coverage instrumentation, so the fuzzer sees the
# branches of the code it feeds, not just of the small target; the targets themselves link libFuzzer
# (fuzz/CMakeLists.txt). The sanitizers come from LAUNCHWATCH_SANITIZE, which the preset sets.
option(LAUNCHWATCH_FUZZ "Build the libFuzzer targets under fuzz/ (clang++ only; see docs/fuzzing.md)" OFF)
if(LAUNCHWATCH_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR
      "LAUNCHWATCH_FUZZ needs clang++, which has libFuzzer, but the C++ compiler is "
      "${CMAKE_CXX_COMPILER_ID} (${CMAKE_CXX_COMPILER}). Configure with `cmake --preset fuzz`, or "
      "pass -DCMAKE_CXX_COMPILER=clang++ in a new build folder.")
  endif()
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
endif()
