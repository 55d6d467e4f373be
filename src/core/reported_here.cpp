// launch_path::reported_here: one "reported already" flag per thread for the whole process, however
// many copies of launchwatch it holds.
//
// A program that links launchwatch and runs under `launchwatch run` holds two copies: its own, and
// the injection library's private one (inject.map exports none of it). The program's CUDA backend marks its launch calls; the bridge, in the injection
// library's copy, reads the mark. A thread_local of each copy would be two flags, and the bridge
// would report the backend's clock probes as the program's kernels. So every copy defines an
// accessor of its flag under one versioned C name, a program linking launchwatch::core exports it
// (src/CMakeLists.txt), and each copy asks the dynamic linker once for that name in the process's
// global scope: every copy finds the program's. A copy that finds none uses its own (it is alone,
// or out of reach: launch_path.hpp says the limit).

#include <launchwatch/launch_path.hpp>

#include <dlfcn.h>

#include <utility>

namespace {

/// This copy's flag for the calling thread; used only if this copy's accessor is the one agreed on.
thread_local bool reported = false;

}  // namespace

/// The accessor every copy exports. The name is versioned: a copy with another flag layout picks a
/// new name rather than sharing this one. Called once per thread per copy.
extern "C" __attribute__((visibility("default"))) bool*
launchwatch_reported_here_flag_v1() noexcept {
  return &reported;
}

namespace launchwatch::launch_path {
namespace {

using flag_accessor = bool* (*)() noexcept;

/// The accessor the process agrees on: the first definition in the global scope, else this copy's.
flag_accessor agreed_accessor() noexcept {
  static const flag_accessor agreed = []() noexcept {
    void* const found = ::dlsym(RTLD_DEFAULT, "launchwatch_reported_here_flag_v1");
    return found != nullptr ? reinterpret_cast<flag_accessor>(found)
                            : &launchwatch_reported_here_flag_v1;
  }();
  return agreed;
}

/// Looked up while the copy is loaded, not at the first mark: a thread's first mark may come inside
/// a CUDA call (the bridge's callback), and the dynamic linker's lock is not to be taken there.
[[maybe_unused]] const flag_accessor looked_up_at_load = agreed_accessor();

/// This thread's agreed flag, looked up on its first use (a pointer into the TLS of the copy that
/// owns it, valid for the thread's life).
thread_local bool* this_thread_flag = nullptr;

bool& flag() noexcept {
  if (this_thread_flag == nullptr) [[unlikely]] {
    this_thread_flag = agreed_accessor()();
  }
  return *this_thread_flag;
}

}  // namespace

reported_here::reported_here() noexcept : was_{std::exchange(flag(), true)} {}

reported_here::~reported_here() { flag() = was_; }

bool reported_here_now() noexcept { return flag(); }

}  // namespace launchwatch::launch_path
