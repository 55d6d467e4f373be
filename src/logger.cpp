// The profiling logger: being written.
