// Compiled by g++: kernels launched from here have no CUDA entry.

#include "cuda/host_only_launch.hpp"

namespace launchwatch::cuda_testing {

struct host_only_fill {
  device_span<int> out;
  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    if (u.absolute_pos() < out.size()) out[u.absolute_pos()] = 1;
  }
};

void launch_from_a_host_only_file(const client& on, buffer<int>& out) {
  on.launch(host_only_fill{out.view()}, cube_count{1}, cube_dim{8});
}

}  // namespace launchwatch::cuda_testing
