# Compiles go through ccache where it is installed (scripts/ensure_packages.sh installs it), so one
# preset reuses what another compiled the same way: the wheel's build (scripts/wheel, after
# scripts/test in CI) compiles 97 of its 105 files exactly as the release build did, which without
# a cache took 148 s on 2 cores. The cache is launchwatch's own, build/.ccache beside the presets'
# folders, at most 4 GB (ccache evicts its oldest entries beyond that), so no other project's cache
# is touched; CCACHE_DIR set when configuring names another. Paths under the source folder are
# hashed relative to it, so two build folders at the same depth share entries. A language whose
# launcher is set already (CMAKE_<LANG>_COMPILER_LAUNCHER, from the cache or the environment) keeps
# it; -DLAUNCHWATCH_CCACHE=OFF compiles without one, and a project that includes launchwatch gets
# none unless it asks (the cache would be written into launchwatch's source folder).
option(LAUNCHWATCH_CCACHE "Compile through ccache where it is installed" ${PROJECT_IS_TOP_LEVEL})
if(LAUNCHWATCH_CCACHE)
  find_program(LAUNCHWATCH_CCACHE_PROGRAM ccache)
  if(LAUNCHWATCH_CCACHE_PROGRAM)
    # Depend mode: a miss costs nothing over the compile itself (without it ccache runs the
    # preprocessor first: 7.7% more on six files here), since the build asks for dependency files.
    set(launchwatch_ccache_settings CCACHE_BASEDIR=${PROJECT_SOURCE_DIR} CCACHE_DEPEND=1)
    if(NOT DEFINED ENV{CCACHE_DIR})
      list(APPEND launchwatch_ccache_settings CCACHE_DIR=${PROJECT_SOURCE_DIR}/build/.ccache
           CCACHE_MAXSIZE=4G)
    endif()
    foreach(language C CXX CUDA HIP)
      if(NOT DEFINED CMAKE_${language}_COMPILER_LAUNCHER AND
         NOT DEFINED ENV{CMAKE_${language}_COMPILER_LAUNCHER})
        set(CMAKE_${language}_COMPILER_LAUNCHER
            ${CMAKE_COMMAND} -E env ${launchwatch_ccache_settings} ${LAUNCHWATCH_CCACHE_PROGRAM})
      endif()
    endforeach()
    message(STATUS "launchwatch: compiling through ccache (${LAUNCHWATCH_CCACHE_PROGRAM})")
  endif()
endif()
