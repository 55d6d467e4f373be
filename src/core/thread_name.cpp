// Thread names (core/interface/thread_name.hpp).
#include "interface/thread_name.hpp"

#include <cstring>

#if defined(__linux__)
#include <pthread.h>
#endif

namespace launchwatch::detail {

void name_this_thread(const char* name) noexcept {
#if defined(__linux__)
  // Linux keeps 15 characters and a terminator, and refuses a longer name outright (ERANGE).
  char kept[16] = {};
  std::strncpy(kept, name, sizeof kept - 1);
  (void)::pthread_setname_np(::pthread_self(), kept);
#else
  (void)name;
#endif
}

}  // namespace launchwatch::detail
