# Decides whether the Vulkan backend is built, and provides launchwatch_vulkan_shaders()
# (cmake/launchwatch_vulkan_shaders.cmake, installed with the package), which compiles GLSL compute
# shaders to SPIR-V at build time for the kernels that carry one.
#
# The backend needs the Vulkan headers (Debian: libvulkan-dev) and a GLSL compiler
# (glslangValidator from glslang-tools, or glslc). It does not link the Vulkan loader: it opens
# libvulkan.so.1 when the first Vulkan client is made, so a program built with it starts on a
# machine without Vulkan and client::vulkan() says what to install.
set(LAUNCHWATCH_VULKAN AUTO CACHE STRING "Build the Vulkan backend: AUTO (when the Vulkan headers and glslangValidator or glslc are found), ON or OFF")
set_property(CACHE LAUNCHWATCH_VULKAN PROPERTY STRINGS AUTO ON OFF)

set(LAUNCHWATCH_HAS_VULKAN OFF)
set(LAUNCHWATCH_GLSL_COMPILER "")
if(NOT LAUNCHWATCH_VULKAN STREQUAL "OFF")
  find_path(LAUNCHWATCH_VULKAN_INCLUDE_DIR vulkan/vulkan.h
    HINTS ${Vulkan_INCLUDE_DIR} ENV VULKAN_SDK PATH_SUFFIXES include)
  find_program(LAUNCHWATCH_GLSLANG glslangValidator HINTS ENV VULKAN_SDK PATH_SUFFIXES bin)
  find_program(LAUNCHWATCH_GLSLC glslc HINTS ENV VULKAN_SDK PATH_SUFFIXES bin)
  if(LAUNCHWATCH_GLSLANG)
    set(LAUNCHWATCH_GLSL_COMPILER ${LAUNCHWATCH_GLSLANG})
  elseif(LAUNCHWATCH_GLSLC)
    set(LAUNCHWATCH_GLSL_COMPILER ${LAUNCHWATCH_GLSLC})
  endif()
  if(LAUNCHWATCH_VULKAN_INCLUDE_DIR AND LAUNCHWATCH_GLSL_COMPILER)
    set(LAUNCHWATCH_HAS_VULKAN ON)
  elseif(LAUNCHWATCH_VULKAN STREQUAL "ON")
    message(FATAL_ERROR "LAUNCHWATCH_VULKAN=ON but the Vulkan headers (${LAUNCHWATCH_VULKAN_INCLUDE_DIR}) "
      "or a GLSL compiler (glslangValidator or glslc) were not found: apt-get install libvulkan-dev "
      "glslang-tools, or configure with -DLAUNCHWATCH_VULKAN=OFF")
  endif()
endif()
set(LAUNCHWATCH_HAS_VULKAN ${LAUNCHWATCH_HAS_VULKAN} CACHE INTERNAL "Whether the Vulkan backend is built")
message(STATUS "launchwatch: Vulkan backend ${LAUNCHWATCH_HAS_VULKAN}")

# In this tree launchwatch.glsl is read from the sources; the installed package's config file sets
# the same three variables for the installed copy before it includes the same file.
set(LAUNCHWATCH_GLSL_INCLUDE_DIR ${PROJECT_SOURCE_DIR}/include/launchwatch/vulkan)
include(${CMAKE_CURRENT_LIST_DIR}/launchwatch_vulkan_shaders.cmake)
