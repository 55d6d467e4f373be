# Runs one command line of the launchwatch program and checks how it ended.
#   COMMAND        the command, a ;-list
#   EXPECT_FAILURE ON when the command must exit non-zero
#   EXPECT_OUTPUT  a regular expression its stdout+stderr must match
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(EXPECT_FAILURE AND result EQUAL 0)
  message(FATAL_ERROR "expected a failure, but it exited 0:\n${all}")
elseif(NOT EXPECT_FAILURE AND NOT result EQUAL 0)
  message(FATAL_ERROR "exited ${result}:\n${all}")
endif()
if(DEFINED EXPECT_OUTPUT AND NOT all MATCHES "${EXPECT_OUTPUT}")
  message(FATAL_ERROR "output does not match '${EXPECT_OUTPUT}':\n${all}")
endif()
message(STATUS "${all}")
