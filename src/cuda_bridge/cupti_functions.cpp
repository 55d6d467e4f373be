// CUPTI's functions, looked up at run time (cupti_functions.hpp).
#include "cupti_functions.hpp"

#include <array>
#include <atomic>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include <launchwatch/cuda_bridge.hpp>

namespace launchwatch::detail::cuda_bridge {
namespace {

/// Where the build found CUPTI (src/cuda_bridge/CMakeLists.txt): a place the toolkit step looks
/// in, after CUDA_HOME and CUDA_PATH.
std::vector<std::filesystem::path> built_with() {
#ifdef LAUNCHWATCH_CUPTI_BUILT_WITH
  return {LAUNCHWATCH_CUPTI_BUILT_WITH};
#else
  return {};
#endif
}

std::mutex loading;
// Never destroyed: CUPTI's own threads and exit handlers may call back into the bridge while the
// process's statics go.
cupti_functions* const table = new cupti_functions;
std::atomic<bool> loaded{false};

}  // namespace

const cupti_functions& load_cupti() {
  if (loaded.load(std::memory_order_acquire)) return *table;
  std::lock_guard lock{loading};
  if (loaded.load(std::memory_order_relaxed)) return *table;
  const opened_cupti opened = open_cupti(cupti_places_here(CUDA_VERSION / 1000, built_with()));
  constexpr std::array names{
#define LAUNCHWATCH_CUPTI_NAME(member, function) #function,
      LAUNCHWATCH_CUPTI_FUNCTIONS(LAUNCHWATCH_CUPTI_NAME)
#undef LAUNCHWATCH_CUPTI_NAME
  };
  std::array<void*, names.size()> found{};
  if (const char* missing = resolve_functions(opened.handle, names, found)) {
    throw cuda_bridge_unavailable{
        cuda_bridge_unavailable::reason::incompatible,
        fmt::format("launchwatch::cuda_bridge: the CUPTI library {} has no {}: it is older than "
                    "the CUPTI launchwatch was built against (API {}). Install a newer one, or "
                    "set LAUNCHWATCH_CUPTI_LIBRARY to one.",
                    opened.path, missing, CUPTI_API_VERSION)};
  }
  std::size_t at = 0;
#define LAUNCHWATCH_CUPTI_STORE(member, function) \
  table->member = reinterpret_cast<decltype(&::function)>(found[at++]);
  LAUNCHWATCH_CUPTI_FUNCTIONS(LAUNCHWATCH_CUPTI_STORE)
#undef LAUNCHWATCH_CUPTI_STORE
  table->path = opened.path;
  table->source = opened.source;
  loaded.store(true, std::memory_order_release);
  return *table;
}

const cupti_functions& cupti() noexcept { return *table; }

}  // namespace launchwatch::detail::cuda_bridge
