// Tests of the profiling logger: being written.
