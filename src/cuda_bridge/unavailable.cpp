// cuda_bridge in a build that cannot run it (no CUDA backend, or CUDA without CUPTI): it still links,
// so a program written for both kinds of build learns at run time that the bridge is absent.
#include <launchwatch/cuda_bridge.hpp>

#include <launchwatch/config.hpp>

#include "live_bridge.hpp"
#include "inside_cuda_init.hpp"

namespace launchwatch {

namespace detail {
class cuda_bridge_engine {};
}  // namespace detail

cuda_bridge::cuda_bridge(cuda_bridge_options /*options*/) {
#if LAUNCHWATCH_HAS_CUDA
  throw cuda_bridge_unavailable{
      cuda_bridge_unavailable::reason::not_built,
      "launchwatch::cuda_bridge: this build of launchwatch found no CUPTI beside the CUDA toolkit, "
      "so it cannot see kernels it did not launch. Install the toolkit's CUPTI (cuda-cupti-dev) "
      "and reconfigure; launchwatch's own CUDA launches are still reported."};
#else
  throw cuda_bridge_unavailable{
      cuda_bridge_unavailable::reason::not_built,
      "launchwatch::cuda_bridge: this build of launchwatch has no CUDA backend (it was configured "
      "with LAUNCHWATCH_CUDA=OFF, or without a CUDA compiler), so CUDA was not built and there are "
      "no CUDA launches to watch. Rebuild with the CUDA toolkit and -DLAUNCHWATCH_CUDA=ON"};
#endif
}

cuda_bridge::~cuda_bridge() = default;

void cuda_bridge::flush() {}

cuda_bridge_stats cuda_bridge::stats() const noexcept { return {}; }

bool cuda_bridge::built() noexcept { return false; }

namespace detail::cuda_bridge {

// Nothing here calls CUDA, so the guard has nothing to change, and there is no runtime to wait for.
bool constructing_inside_cuda_init() noexcept { return false; }
inside_cuda_init::inside_cuda_init() noexcept : was_{false} {}
inside_cuda_init::~inside_cuda_init() = default;
bool after_cuda_runtime_initialised(void (* /*then*/)()) noexcept { return false; }
void cuda_context_created() noexcept {}
void close_live_bridge_records() noexcept {}
bool lend_live_bridge_records() noexcept { return false; }
bool take_live_bridge_records_back() noexcept { return false; }
graph_table_sizes live_bridge_graph_tables() noexcept { return {}; }

}  // namespace detail::cuda_bridge

}  // namespace launchwatch
