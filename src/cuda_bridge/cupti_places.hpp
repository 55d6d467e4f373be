// Where the CUDA bridge finds CUPTI at run time, and opening it (docs/design.md §8, "CUPTI at run
// time"). The bridge links no CUPTI, so a wheel installed beside PyTorch uses the environment's
// own nvidia-cuda-cupti and a machine with the CUDA toolkit uses the toolkit's. Nothing here
// includes a CUDA or CUPTI header: the order, the copy already loaded and the errors are tested on
// the CPU with stand-in libraries (tests/cuda_bridge/cupti_places_test.cpp).
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace launchwatch::detail::cuda_bridge {

/// Names the CUPTI library to use before any other place (a path to libcupti.so.N).
inline constexpr std::string_view cupti_library_variable = "LAUNCHWATCH_CUPTI_LIBRARY";
/// The site-packages folders of the Python that runs `launchwatch run` from the wheel, separated by
/// ':' (python/launchwatch/_cli.py sets it; the program inherits it).
inline constexpr std::string_view python_site_variable = "LAUNCHWATCH_PYTHON_SITE_PACKAGES";

/// Where an opened CUPTI came from.
enum class cupti_source {
  /// A copy the process had loaded already (the program links it, or PyTorch's profiler loaded it).
  already_loaded,
  /// LAUNCHWATCH_CUPTI_LIBRARY.
  variable,
  /// An nvidia-cuda-cupti wheel in a site-packages folder.
  python_wheel,
  /// A CUDA toolkit's folder, or the dynamic loader's own search.
  toolkit,
};

/// The places to look in, each kind in the order it is tried.
struct cupti_places {
  /// CUPTI's major version, the one the bridge was built against: the file is libcupti.so.<major>.
  int major = 0;
  /// LAUNCHWATCH_CUPTI_LIBRARY's value; empty when unset.
  std::string variable;
  /// Python environments' site-packages folders. Each one's nvidia/cu<major>/lib (CUDA 13's
  /// wheels) and nvidia/cuda_cupti/lib (CUDA 12's) are looked in.
  std::vector<std::filesystem::path> site_packages;
  /// Folders of CUDA toolkits that may hold the library; after them the dynamic loader searches
  /// for the bare file name (LD_LIBRARY_PATH, ldconfig's cache).
  std::vector<std::filesystem::path> toolkit_folders;
};

/// "libcupti.so.<major>".
std::string cupti_file_name(int major);

/// One file to try.
struct cupti_candidate {
  /// A path, or (the last candidate) the bare file name, for the dynamic loader's search.
  std::filesystem::path path;
  cupti_source source;
};

/// The files to try, in order: the variable's; each site-packages folder's two wheel folders; each
/// toolkit folder; the bare file name. A copy already loaded is not among them (open_cupti asks
/// for it first).
std::vector<cupti_candidate> cupti_candidates(const cupti_places& places);

/// The site-packages (or dist-packages) folders that hold a library loaded in this process, in the
/// order they were loaded: the Python environments the program runs from (PyTorch's libraries,
/// launchwatch's injection from the wheel). Cost: one walk of the loaded libraries.
std::vector<std::filesystem::path> loaded_site_packages();

/// This process's places: LAUNCHWATCH_CUPTI_LIBRARY; the folders LAUNCHWATCH_PYTHON_SITE_PACKAGES
/// names, then loaded_site_packages() (each folder once); the toolkit folders of CUDA_HOME, of
/// CUDA_PATH, then `built_with` (where the build found CUPTI), then those of /usr/local/cuda.
cupti_places cupti_places_here(int major, const std::vector<std::filesystem::path>& built_with);

/// An opened CUPTI.
struct opened_cupti {
  /// dlopen's handle; never closed by the bridge (CUPTI stays for the process's life).
  void* handle = nullptr;
  /// The file, as the loader has it.
  std::string path;
  cupti_source source = cupti_source::toolkit;
};

/// Opens CUPTI: the copy the process has loaded already, if any (two CUPTIs in one process would
/// both claim the driver's callbacks), else the first candidate that exists and opens. Throws
/// cuda_bridge_unavailable (cupti_not_found) naming every place looked in and how to install
/// CUPTI when none is found, or naming the file when LAUNCHWATCH_CUPTI_LIBRARY's does not open or
/// a file found is not CUPTI (it has no cuptiGetVersion).
/// Thread safety: any thread; the bridge calls it once, under its own lock.
opened_cupti open_cupti(const cupti_places& places);

/// Looks up each of `names` in `handle`, into the same place of `functions` (as long as `names`).
/// Returns the first name the library lacks, or null when it has them all.
const char* resolve_functions(void* handle, std::span<const char* const> names,
                              std::span<void*> functions) noexcept;

}  // namespace launchwatch::detail::cuda_bridge
