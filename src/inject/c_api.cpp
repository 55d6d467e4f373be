// The injection's C API (c_api.hpp): ranges on the domain `launchwatch`, as NVTX's would be.

#include "c_api.hpp"

#include "attribute/scope_paths.hpp"
#include "nvtx_ranges.hpp"
#include "range_names.hpp"

namespace {

namespace detail = launchwatch::detail;

/// The domain launchwatch's own scopes use when they reach a tool as NVTX ranges, so ranges from
/// Python and from a program's launchwatch::scope nest on one stack.
nvtxDomainHandle_t launchwatch_domain() {
  static const nvtxDomainHandle_t domain =
      detail::nvtx_registry::get().create_domain("launchwatch");
  return domain;
}

}  // namespace

extern "C" {

int launchwatch_c_api_version() { return 1; }

int launchwatch_range_push(const char* name) {
  try {
    return detail::push_domain_range(launchwatch_domain(), detail::ascii_range_name(name));
  } catch (...) {
    return -1;
  }
}

int launchwatch_range_push_under(std::uint32_t parent, const char* name) {
  try {
    return detail::push_domain_range_under(launchwatch_domain(), parent,
                                           detail::ascii_range_name(name));
  } catch (...) {
    return -1;
  }
}

int launchwatch_range_pop_to(int depth) {
  try {
    return detail::pop_domain_ranges_to(launchwatch_domain(), depth);
  } catch (...) {
    return 0;
  }
}

std::uint32_t launchwatch_current_path() { return detail::current_path(); }

int launchwatch_set_launch_scope_hook(void (*hook)(void)) {
  detail::set_launch_scope_hook(hook);
  return launchwatch_c_api_version();
}

}  // extern "C"
