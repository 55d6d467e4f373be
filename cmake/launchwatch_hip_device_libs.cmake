# HIP's device libraries for targets newer than the installed ones.
#
# Clang links into each target's device code the device libraries' bitcode and, per target, one
# oclc_isa_version_<n>.bc: a file holding only the constant __oclc_ISA_version (major * 1000 +
# minor * 100 + stepping, so 9402 for gfx942), by which the libraries choose their code paths.
# Debian's HIP 5.2 (rocm-device-libs 5.2) predates gfx942 (ROCm 5.7 added it): it has
# oclc_isa_version_940.bc and no _942, which is all clang 17 or newer lacks to compile and link
# gfx942 with it. So a folder in the build tree links to every bitcode file installed and adds the
# missing ISA version files, each an installed ISA version file with only its constant changed,
# so in the form ROCm-Device-Libs gives every target (oclc/src/isa_version_<n>.cl compiled with
# -fvisibility=protected, then made linkonce_odr: a protected 4-byte constant in address space 4),
# reassembled by the llvm-as of the compiler's own LLVM. A ROCm 5.7 or newer installation has every
# file, and none of this is made. Code compiled this way has been compiled and linked only, never
# run on an AMD GPU.

# Sets `out` to the folder to pass as --hip-device-lib-path for `architectures` (a list of target
# IDs such as gfx942 or gfx90a:xnack+): `installed` itself when it holds every target's ISA version
# file, else ${PROJECT_BINARY_DIR}/rocm/bitcode, made now with llvm-dis and llvm-as from `llvm_bin`
# (the compiler's folder). Sets `out` empty and `why` to the reason when a file is missing and
# those tools are not there to make it.
function(launchwatch_hip_device_libs out why installed llvm_bin architectures)
  string(REGEX REPLACE "/+$" "" installed "${installed}")
  set(missing)
  foreach(architecture IN LISTS architectures)
    # A target ID names major, minor and stepping (the last two one hex digit each), then features.
    if(architecture MATCHES "^gfx([0-9]+)([0-9a-f])([0-9a-f])(:.*)?$")
      set(name ${CMAKE_MATCH_1}${CMAKE_MATCH_2}${CMAKE_MATCH_3})
      if(NOT EXISTS ${installed}/oclc_isa_version_${name}.bc)
        math(EXPR version "${CMAKE_MATCH_1} * 1000 + 0x${CMAKE_MATCH_2} * 100 + 0x${CMAKE_MATCH_3}")
        list(APPEND missing "${name}=${version}")
      endif()
    endif()
  endforeach()
  list(REMOVE_DUPLICATES missing)
  set(${why} "" PARENT_SCOPE)
  if(NOT missing)
    set(${out} ${installed} PARENT_SCOPE)
    return()
  endif()
  set(llvm_as ${llvm_bin}/llvm-as)
  set(llvm_dis ${llvm_bin}/llvm-dis)
  if(NOT EXISTS ${llvm_as} OR NOT EXISTS ${llvm_dis})
    set(${out} "" PARENT_SCOPE)
    set(${why} "HIP's device libraries in ${installed} lack the ISA version file of ${missing} \
(name=version), made here with llvm-as and llvm-dis of the compiler's LLVM, not in ${llvm_bin} \
(install llvm-19 for clang-19), or set CMAKE_HIP_ARCHITECTURES to targets they have" PARENT_SCOPE)
    return()
  endif()

  set(folder ${PROJECT_BINARY_DIR}/rocm/bitcode)
  file(REMOVE_RECURSE ${folder})
  file(MAKE_DIRECTORY ${folder})
  file(GLOB bitcode ${installed}/*.bc)
  foreach(file IN LISTS bitcode)
    get_filename_component(name ${file} NAME)
    file(CREATE_LINK ${file} ${folder}/${name} SYMBOLIC)
  endforeach()
  # The model: an installed ISA version file, read back as LLVM IR by the same LLVM.
  file(GLOB models ${installed}/oclc_isa_version_*.bc)
  list(GET models 0 model)
  execute_process(COMMAND ${llvm_dis} ${model} -o -
    OUTPUT_VARIABLE model_ir RESULT_VARIABLE result ERROR_VARIABLE error)
  set(constant "(@__oclc_ISA_version = [^\n]* constant i32 )[0-9]+")
  string(REGEX MATCHALL "${constant}" found "${model_ir}")
  list(LENGTH found count)
  if(NOT result EQUAL 0 OR NOT count EQUAL 1)
    message(FATAL_ERROR "launchwatch: ${model} is not an ISA version file this build can copy \
(one constant @__oclc_ISA_version): ${error}")
  endif()
  foreach(entry IN LISTS missing)
    string(REPLACE "=" ";" entry ${entry})
    list(GET entry 0 name)
    list(GET entry 1 version)
    string(REGEX REPLACE "${constant}" "\\1${version}" ir "${model_ir}")
    file(WRITE ${folder}/oclc_isa_version_${name}.ll "${ir}")
    execute_process(COMMAND ${llvm_as} ${folder}/oclc_isa_version_${name}.ll
      -o ${folder}/oclc_isa_version_${name}.bc RESULT_VARIABLE result ERROR_VARIABLE error)
    if(NOT result EQUAL 0)
      message(FATAL_ERROR "launchwatch: ${llvm_as} could not make oclc_isa_version_${name}.bc: \
${error}")
    endif()
    message(STATUS "launchwatch: made oclc_isa_version_${name}.bc (__oclc_ISA_version ${version}), \
which HIP's device libraries in ${installed} lack")
  endforeach()
  set(${out} ${folder} PARENT_SCOPE)
endfunction()
