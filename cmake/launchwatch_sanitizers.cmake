# Sanitizers apply to every target of the build, tests included, so a preset is one switch.
if(LAUNCHWATCH_SANITIZE)
  list(JOIN LAUNCHWATCH_SANITIZE "," launchwatch_sanitizers)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${launchwatch_sanitizers}>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize-recover=all>)
  add_link_options(-fsanitize=${launchwatch_sanitizers})
endif()
