# Thread-local reads through TLS descriptors (-mtls-dialect=gnu2) where the compiler offers them.
# launchwatch's libraries are position-independent because `launchwatch run` injects them as a
# shared library (liblaunchwatch_inject.so, loaded by CUDA with dlopen), where the default dialect
# makes every thread-local read a call to the dynamic linker's __tls_get_addr: 22 ns of each
# names-only foreign launch on the H200's host (docs/benchmarks.md, "The same launches under
# launchwatch run"), and several calls in each NVTX range the PyTorch module hooks open. A
# descriptor resolves a library whose thread-local block got static room at dlopen to a constant
# offset (an indirect call returning it), and degrades to the same lookup where it did not. In an
# executable the linker relaxes either dialect to a direct read, so nothing changes there.
# Sanitized builds keep the default: their runtimes follow dynamic thread-local blocks through
# __tls_get_addr.
include(CheckCXXCompilerFlag)
if(NOT LAUNCHWATCH_SANITIZE AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  check_cxx_compiler_flag(-mtls-dialect=gnu2 LAUNCHWATCH_HAS_TLS_DESCRIPTORS)
  if(LAUNCHWATCH_HAS_TLS_DESCRIPTORS)
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-mtls-dialect=gnu2>)
  endif()
endif()
