# Sanitizers apply to every target of the build, tests included, so a preset is one switch.
if(LAUNCHWATCH_SANITIZE)
  list(JOIN LAUNCHWATCH_SANITIZE "," launchwatch_sanitizers)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${launchwatch_sanitizers}>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize-recover=all>)
  add_link_options(-fsanitize=${launchwatch_sanitizers})
endif()

# A sanitized build carries line tables only (-g1: function names, files and lines, what the
# sanitizers' reports print) where the build type asks for CMake's default -g: CI builds two
# sanitized presets from nothing on 2 cores, and full debug information made their files 7% slower
# to compile and their objects 15-37% larger (2026-12-04). For a debugger's view of locals, configure
# with -DCMAKE_CXX_FLAGS_DEBUG=-ggdb (or any value other than CMake's default), which is kept.
if(LAUNCHWATCH_SANITIZE)
  if(CMAKE_CXX_FLAGS_DEBUG STREQUAL "-g")
    set(CMAKE_CXX_FLAGS_DEBUG "-g1")
  endif()
  if(CMAKE_CXX_FLAGS_RELWITHDEBINFO STREQUAL "-O2 -g -DNDEBUG")
    set(CMAKE_CXX_FLAGS_RELWITHDEBINFO "-O2 -g1 -DNDEBUG")
  endif()
endif()
