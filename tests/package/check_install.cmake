# Installs BUILD_DIR into WORK_DIR/prefix, then builds and runs each project of CONSUMERS against it.
# Every consumer must produce an executable whose name is given by the file RUN_TARGET beside its
# CMakeLists.txt (default: the folder's name), which must exit 0.

function(run_step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "step failed (${result}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run_step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

foreach(consumer IN LISTS CONSUMERS)
  get_filename_component(name ${consumer} NAME)
  set(build ${WORK_DIR}/build-${name})
  set(extra)
  if(CUDA_COMPILER)
    list(APPEND extra -DCMAKE_CUDA_COMPILER=${CUDA_COMPILER})
  endif()
  run_step(${CMAKE_COMMAND} -S ${consumer} -B ${build} -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release ${extra})
  run_step(${CMAKE_COMMAND} --build ${build})
  set(target ${name})
  if(EXISTS ${consumer}/RUN_TARGET)
    file(STRINGS ${consumer}/RUN_TARGET target LIMIT_COUNT 1)
  endif()
  run_step(${build}/${target})
endforeach()
