// Scopes as NVTX ranges (scope_nvtx.hpp).

#include "scope_nvtx.hpp"

#if LAUNCHWATCH_HAS_NVTX

#include <launchwatch/attribute/scope.hpp>

#include <array>
#include <cstdlib>
#include <functional>
#include <string>

#include <dlfcn.h>
#include <sys/stat.h>

#include <nvtx3/nvToolsExt.h>

namespace launchwatch::detail {
namespace {

nvtxDomainHandle_t launchwatch_domain = nullptr;
thread_local bool in_nvtx_call = false;

/// Whether `path` is the file this code was loaded from (compared by device and inode, so a
/// relative path or a symbolic link still matches).
bool is_this_module(const char* path) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&is_this_module), &info) == 0 || info.dli_fname == nullptr) {
    return false;
  }
  struct stat mine {};
  struct stat theirs {};
  return ::stat(info.dli_fname, &mine) == 0 && ::stat(path, &theirs) == 0 && mine.st_dev == theirs.st_dev &&
         mine.st_ino == theirs.st_ino;
}

bool detect() noexcept {
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  const bool configured = path != nullptr && *path != '\0';
  if (!configured && InitializeInjectionNvtx2_fnptr == nullptr) return false;  // NVTX stays untouched
  if (configured && is_this_module(path)) return false;
  // Initialises NVTX, which loads the tool; with none (or one that failed to load) it returns null.
  launchwatch_domain = nvtxDomainCreateA("launchwatch");
  return launchwatch_domain != nullptr;
}

/// A thread's registered names: one registration per distinct name, not per push.
struct registered_name {
  std::string name;
  nvtxStringHandle_t handle = nullptr;
};
constexpr std::size_t name_cache_size = 64;
thread_local std::array<registered_name, name_cache_size> name_cache;

nvtxStringHandle_t register_name(std::string_view name) {
  auto& slot = name_cache[std::hash<std::string_view>{}(name) % name_cache_size];
  if (slot.handle == nullptr || slot.name != name) {
    slot.name.assign(name);  // may throw: the caller then pushes nothing
    slot.handle = nvtxDomainRegisterStringA(launchwatch_domain, slot.name.c_str());
  }
  return slot.handle;
}

/// Decided during static initialisation, so a tool sees scopes from the first one on.
[[maybe_unused]] const bool decided_at_start = scopes_go_to_nvtx();

}  // namespace

bool scopes_go_to_nvtx() noexcept {
  static const bool attached = [] {
    const bool on = detect();
    // The one flag every scope reads: set for good, so scopes reach enter_scope and NVTX.
    if (on) attributing.store(true, std::memory_order_relaxed);
    return on;
  }();
  return attached;
}

bool push_nvtx_range(std::string_view name) noexcept {
  try {
    nvtxEventAttributes_t attributes{};
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attributes.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    attributes.message.registered = register_name(name);
    in_nvtx_call = true;
    nvtxDomainRangePushEx(launchwatch_domain, &attributes);
    in_nvtx_call = false;
    return true;
  } catch (...) {
    in_nvtx_call = false;
    return false;
  }
}

void pop_nvtx_range() noexcept {
  in_nvtx_call = true;
  nvtxDomainRangePop(launchwatch_domain);
  in_nvtx_call = false;
}

bool in_scope_nvtx_call() noexcept { return in_nvtx_call; }

}  // namespace launchwatch::detail

#else  // no NVTX in this build: scopes never go to a tool

namespace launchwatch::detail {
bool scopes_go_to_nvtx() noexcept { return false; }
bool push_nvtx_range(std::string_view) noexcept { return false; }
void pop_nvtx_range() noexcept {}
bool in_scope_nvtx_call() noexcept { return false; }
}  // namespace launchwatch::detail

#endif
