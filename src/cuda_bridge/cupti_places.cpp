// Where CUPTI is found at run time, and opening it (cupti_places.hpp).
#include "cupti_places.hpp"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include <launchwatch/cuda_bridge.hpp>

namespace launchwatch::detail::cuda_bridge {
namespace {

namespace fs = std::filesystem;
using reason = cuda_bridge_unavailable::reason;

/// The folder of a toolkit's targets/ that holds this machine's libraries.
#if defined(__aarch64__)
constexpr const char* toolkit_target = "sbsa-linux";
#else
constexpr const char* toolkit_target = "x86_64-linux";
#endif

[[noreturn]] void not_found(const std::string& message) {
  throw cuda_bridge_unavailable{reason::cupti_not_found, "launchwatch::cuda_bridge: " + message};
}

std::string environment(std::string_view name) {
  const char* value = std::getenv(std::string{name}.c_str());
  return value == nullptr ? std::string{} : std::string{value};
}

void add_once(std::vector<fs::path>& folders, fs::path folder) {
  if (folder.empty()) return;
  if (std::find(folders.begin(), folders.end(), folder) == folders.end()) {
    folders.push_back(std::move(folder));
  }
}

/// Where a toolkit installed at `root` keeps CUPTI: NVIDIA's runfile and packages (extras/CUPTI,
/// lib64) and the cross-target layout.
void add_toolkit_root(std::vector<fs::path>& folders, const fs::path& root) {
  if (root.empty()) return;
  add_once(folders, root / "extras" / "CUPTI" / "lib64");
  add_once(folders, root / "lib64");
  add_once(folders, root / "targets" / toolkit_target / "lib");
}

/// The wheel that brings CUPTI for this major version: nvidia-cuda-cupti from CUDA 13 on,
/// nvidia-cuda-cupti-cu12 before.
std::string wheel_name(int major) {
  if (major >= 13) return "nvidia-cuda-cupti";
  return fmt::format("nvidia-cuda-cupti-cu{}", major);
}

std::string joined(const std::vector<fs::path>& folders) {
  std::string text;
  for (const auto& folder : folders) {
    if (!text.empty()) text += ", ";
    text += folder.string();
  }
  return text;
}

/// Every place looked in, and how to put CUPTI in one of them.
std::string nothing_found(const cupti_places& places, const std::vector<std::string>& refused) {
  const std::string file = cupti_file_name(places.major);
  std::string message = fmt::format(
      "no CUPTI library ({}) was found, so CUDA kernels cannot be watched (CUPTI's callbacks are "
      "how the bridge sees a launch). Looked in, in order:\n"
      "  1. {}: not set\n",
      file, cupti_library_variable);
  if (places.site_packages.empty()) {
    message += fmt::format(
        "  2. the {} wheel of the program's Python environment: no site-packages folder is known "
        "(none of the program's libraries was loaded from one)\n",
        wheel_name(places.major));
  } else {
    message += fmt::format(
        "  2. the {} wheel of the program's Python environment: nvidia/cu{}/lib and "
        "nvidia/cuda_cupti/lib under {}\n",
        wheel_name(places.major), places.major, joined(places.site_packages));
  }
  message += fmt::format(
      "  3. the CUDA toolkit: {}{}the dynamic loader's own search (LD_LIBRARY_PATH, ldconfig)\n",
      joined(places.toolkit_folders), places.toolkit_folders.empty() ? "" : ", then ");
  for (const auto& why : refused) message += fmt::format("  (found but not opened: {})\n", why);
  message += fmt::format(
      "Install CUPTI into the program's Python environment (pip install {}; PyTorch's CUDA wheels "
      "bring it) or with the CUDA toolkit, or set {} to the path of a {}.",
      wheel_name(places.major), cupti_library_variable, file);
  return message;
}

/// The file the loader loaded `handle` from.
std::string loaded_path(void* handle) {
  link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr) {
    return map->l_name;
  }
  return {};
}

std::string last_error() {
  const char* text = ::dlerror();
  return text == nullptr ? std::string{"unknown error"} : std::string{text};
}

/// `handle`, opened from `path`, as CUPTI; throws (closing it) when it has no cuptiGetVersion.
opened_cupti as_cupti(void* handle, const fs::path& path, cupti_source source) {
  if (::dlsym(handle, "cuptiGetVersion") == nullptr) {
    ::dlclose(handle);
    not_found(fmt::format("{} opens, but is not CUPTI: it has no cuptiGetVersion. {}",
                          path.string(),
                          source == cupti_source::variable
                              ? fmt::format("Point {} at a libcupti.so, or unset it.",
                                            cupti_library_variable)
                              : std::string{"Remove it, or set LAUNCHWATCH_CUPTI_LIBRARY to the "
                                            "CUPTI library to use."}));
  }
  std::string loaded = loaded_path(handle);
  return {handle, loaded.empty() ? path.string() : std::move(loaded), source};
}

int add_loaded_site_packages(dl_phdr_info* info, size_t /*size*/, void* folders) {
  if (info->dlpi_name == nullptr) return 0;
  const std::string_view name = info->dlpi_name;
  for (const std::string_view marker : {"/site-packages/", "/dist-packages/"}) {
    if (const auto at = name.find(marker); at != std::string_view::npos) {
      add_once(*static_cast<std::vector<fs::path>*>(folders),
               fs::path{std::string{name.substr(0, at + marker.size() - 1)}});
      break;
    }
  }
  return 0;
}

}  // namespace

std::string cupti_file_name(int major) { return fmt::format("libcupti.so.{}", major); }

std::vector<cupti_candidate> cupti_candidates(const cupti_places& places) {
  const std::string file = cupti_file_name(places.major);
  std::vector<cupti_candidate> candidates;
  if (!places.variable.empty()) candidates.push_back({places.variable, cupti_source::variable});
  for (const auto& site : places.site_packages) {
    for (const auto& wheel : {fmt::format("cu{}", places.major), std::string{"cuda_cupti"}}) {
      candidates.push_back({site / "nvidia" / wheel / "lib" / file, cupti_source::python_wheel});
    }
  }
  for (const auto& folder : places.toolkit_folders) {
    candidates.push_back({folder / file, cupti_source::toolkit});
  }
  candidates.push_back({file, cupti_source::toolkit});
  return candidates;
}

std::vector<fs::path> loaded_site_packages() {
  std::vector<fs::path> folders;
  ::dl_iterate_phdr(&add_loaded_site_packages, &folders);
  return folders;
}

cupti_places cupti_places_here(int major, const std::vector<fs::path>& built_with) {
  cupti_places places;
  places.major = major;
  places.variable = environment(cupti_library_variable);
  const std::string named = environment(python_site_variable);
  for (std::size_t start = 0; start <= named.size();) {
    const std::size_t end = std::min(named.find(':', start), named.size());
    add_once(places.site_packages, fs::path{named.substr(start, end - start)});
    start = end + 1;
  }
  for (auto& folder : loaded_site_packages()) add_once(places.site_packages, std::move(folder));
  for (const char* root : {"CUDA_HOME", "CUDA_PATH"}) {
    add_toolkit_root(places.toolkit_folders, environment(root));
  }
  for (const auto& folder : built_with) add_once(places.toolkit_folders, folder);
  add_toolkit_root(places.toolkit_folders, "/usr/local/cuda");
  return places;
}

opened_cupti open_cupti(const cupti_places& places) {
  const std::string file = cupti_file_name(places.major);
  if (void* loaded = ::dlopen(file.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
    return as_cupti(loaded, file, cupti_source::already_loaded);
  }
  std::vector<std::string> refused;
  for (const auto& candidate : cupti_candidates(places)) {
    const bool bare = !candidate.path.has_parent_path();
    std::error_code error;
    if (!bare && candidate.source != cupti_source::variable &&
        !fs::exists(candidate.path, error)) {
      continue;
    }
    if (void* handle = ::dlopen(candidate.path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      return as_cupti(handle, candidate.path, candidate.source);
    }
    const std::string why = last_error();
    if (candidate.source == cupti_source::variable) {
      not_found(fmt::format("{} is '{}', which does not open: {}. Point it at a {}, or unset it "
                            "to look in the Python environment and the CUDA toolkit.",
                            cupti_library_variable, places.variable, why, file));
    }
    if (!bare) refused.push_back(why);
  }
  not_found(nothing_found(places, refused));
}

const char* resolve_functions(void* handle, std::span<const char* const> names,
                              std::span<void*> functions) noexcept {
  for (std::size_t i = 0; i < names.size() && i < functions.size(); ++i) {
    functions[i] = ::dlsym(handle, names[i]);
    if (functions[i] == nullptr) return names[i];
  }
  return nullptr;
}

}  // namespace launchwatch::detail::cuda_bridge
