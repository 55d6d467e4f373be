// Where the CUDA bridge finds CUPTI at run time (src/cuda_bridge/cupti_places.hpp), on the CPU:
// copies of a stand-in library (stand_in_cupti.cpp, soname libcupti.so.99) put in a scratch
// LAUNCHWATCH_CUPTI_LIBRARY file, site-packages tree and toolkit folder, and which one opens.
// Runs in every build, CI included.
#include <dlfcn.h>
#include <stdlib.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <launchwatch/cuda_bridge.hpp>

#include "cuda_bridge/cupti_places.hpp"

namespace launchwatch::detail::cuda_bridge {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int stand_in_major = 99;

/// A scratch folder, removed with everything in it.
class scratch_folder {
 public:
  scratch_folder() {
    std::string pattern = (fs::temp_directory_path() / "launchwatch-cupti-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~scratch_folder() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  scratch_folder(const scratch_folder&) = delete;
  scratch_folder& operator=(const scratch_folder&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

/// Copies the library built at `built` to `to`, making its folders.
fs::path put(const char* built, const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::copy_file(built, to, fs::copy_options::overwrite_existing);
  return to;
}

fs::path put_stand_in(const fs::path& to) { return put(LAUNCHWATCH_STAND_IN_CUPTI, to); }

/// What open_cupti opened, closed again at the end of the test.
class opened {
 public:
  explicit opened(const cupti_places& places) : cupti_{open_cupti(places)} {}
  ~opened() { ::dlclose(cupti_.handle); }
  opened(const opened&) = delete;
  opened& operator=(const opened&) = delete;
  const opened_cupti* operator->() const { return &cupti_; }

 private:
  opened_cupti cupti_;
};

/// Sets (or, for null, unsets) an environment variable for one test, then puts it back.
class with_variable {
 public:
  with_variable(const char* name, const char* value) : name_{name} {
    if (const char* was = ::getenv(name)) was_ = was;
    if (value == nullptr) {
      ::unsetenv(name);
    } else {
      ::setenv(name, value, 1);
    }
  }
  ~with_variable() {
    if (was_) {
      ::setenv(name_, was_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  with_variable(const with_variable&) = delete;
  with_variable& operator=(const with_variable&) = delete;

 private:
  const char* name_;
  std::optional<std::string> was_;
};

/// The message of the cuda_bridge_unavailable that opening CUPTI from `places` throws.
std::string refusal(const cupti_places& places) {
  try {
    opened cupti{places};
  } catch (const cuda_bridge_unavailable& error) {
    EXPECT_EQ(error.why(), cuda_bridge_unavailable::reason::cupti_not_found);
    return error.what();
  }
  ADD_FAILURE() << "CUPTI opened";
  return {};
}

TEST(CuptiPlaces, TheVariableComesFirstThenEachEnvironmentsWheelsThenTheToolkitThenTheLoader) {
  cupti_places places;
  places.major = 13;
  places.variable = "/chosen/libcupti.so.13";
  places.site_packages = {"/env/site-packages", "/base/site-packages"};
  places.toolkit_folders = {"/usr/local/cuda/lib64"};
  std::vector<std::string> paths;
  std::vector<cupti_source> sources;
  for (const auto& candidate : cupti_candidates(places)) {
    paths.push_back(candidate.path.string());
    sources.push_back(candidate.source);
  }
  EXPECT_THAT(paths, ElementsAre("/chosen/libcupti.so.13",
                                 "/env/site-packages/nvidia/cu13/lib/libcupti.so.13",
                                 "/env/site-packages/nvidia/cuda_cupti/lib/libcupti.so.13",
                                 "/base/site-packages/nvidia/cu13/lib/libcupti.so.13",
                                 "/base/site-packages/nvidia/cuda_cupti/lib/libcupti.so.13",
                                 "/usr/local/cuda/lib64/libcupti.so.13", "libcupti.so.13"));
  EXPECT_THAT(sources, ElementsAre(cupti_source::variable, cupti_source::python_wheel,
                                   cupti_source::python_wheel, cupti_source::python_wheel,
                                   cupti_source::python_wheel, cupti_source::toolkit,
                                   cupti_source::toolkit));
}

TEST(CuptiPlaces, WithTheVariableUnsetTheEnvironmentsWheelIsTheFirstPlace) {
  cupti_places places;
  places.major = 12;
  places.site_packages = {"/env/site-packages"};
  const auto candidates = cupti_candidates(places);
  ASSERT_FALSE(candidates.empty());
  EXPECT_EQ(candidates.front().path, "/env/site-packages/nvidia/cu12/lib/libcupti.so.12");
  EXPECT_EQ(candidates.front().source, cupti_source::python_wheel);
}

TEST(CuptiPlaces, TheVariablesLibraryIsOpenedRatherThanTheEnvironmentsOrTheToolkits) {
  scratch_folder scratch;
  cupti_places places;
  places.major = stand_in_major;
  places.variable = put_stand_in(scratch.path() / "chosen" / "libcupti.so.99").string();
  places.site_packages = {scratch.path() / "site-packages"};
  places.toolkit_folders = {scratch.path() / "toolkit"};
  put_stand_in(scratch.path() / "site-packages/nvidia/cu99/lib/libcupti.so.99");
  put_stand_in(scratch.path() / "toolkit/libcupti.so.99");
  const opened cupti{places};
  EXPECT_EQ(cupti->path, places.variable);
  EXPECT_EQ(cupti->source, cupti_source::variable);
}

TEST(CuptiPlaces, TheEnvironmentsCuda13WheelIsOpenedRatherThanTheToolkits) {
  scratch_folder scratch;
  cupti_places places;
  places.major = stand_in_major;
  places.site_packages = {scratch.path() / "empty-site-packages", scratch.path() / "site-packages"};
  places.toolkit_folders = {scratch.path() / "toolkit"};
  const auto wheel = put_stand_in(scratch.path() / "site-packages/nvidia/cu99/lib/libcupti.so.99");
  put_stand_in(scratch.path() / "toolkit/libcupti.so.99");
  const opened cupti{places};
  EXPECT_EQ(cupti->path, wheel.string());
  EXPECT_EQ(cupti->source, cupti_source::python_wheel);
}

TEST(CuptiPlaces, TheCuda12WheelsFolderIsLookedInToo) {
  scratch_folder scratch;
  cupti_places places;
  places.major = stand_in_major;
  places.site_packages = {scratch.path() / "site-packages"};
  const auto wheel =
      put_stand_in(scratch.path() / "site-packages/nvidia/cuda_cupti/lib/libcupti.so.99");
  const opened cupti{places};
  EXPECT_EQ(cupti->path, wheel.string());
  EXPECT_EQ(cupti->source, cupti_source::python_wheel);
}

TEST(CuptiPlaces, TheToolkitIsOpenedWhenNoEnvironmentHasTheWheel) {
  scratch_folder scratch;
  cupti_places places;
  places.major = stand_in_major;
  places.site_packages = {scratch.path() / "site-packages"};
  places.toolkit_folders = {scratch.path() / "cuda/extras/CUPTI/lib64",
                            scratch.path() / "cuda/lib64"};
  fs::create_directories(scratch.path() / "site-packages/nvidia");
  const auto toolkit = put_stand_in(scratch.path() / "cuda/lib64/libcupti.so.99");
  const opened cupti{places};
  EXPECT_EQ(cupti->path, toolkit.string());
  EXPECT_EQ(cupti->source, cupti_source::toolkit);
}

TEST(CuptiPlaces, ACopyTheProcessLoadedAlreadyIsUsedRatherThanASecondOne) {
  scratch_folder scratch;
  const auto first = put_stand_in(scratch.path() / "program/libcupti.so.99");
  void* program_copy = ::dlopen(first.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(program_copy, nullptr) << ::dlerror();
  cupti_places places;
  places.major = stand_in_major;
  places.variable = put_stand_in(scratch.path() / "chosen/libcupti.so.99").string();
  {
    const opened cupti{places};
    EXPECT_EQ(cupti->path, first.string());
    EXPECT_EQ(cupti->source, cupti_source::already_loaded);
  }
  ::dlclose(program_copy);
}

TEST(CuptiPlaces, AVariableNamingAFileThatDoesNotOpenIsAnErrorNamingItRatherThanAFallBack) {
  scratch_folder scratch;
  cupti_places places;
  places.major = stand_in_major;
  places.variable = (scratch.path() / "missing/libcupti.so.99").string();
  places.toolkit_folders = {scratch.path() / "toolkit"};
  put_stand_in(scratch.path() / "toolkit/libcupti.so.99");
  EXPECT_THAT(refusal(places), AllOf(HasSubstr("LAUNCHWATCH_CUPTI_LIBRARY is '" + places.variable +
                                               "', which does not open"),
                                     HasSubstr("unset it")));
}

TEST(CuptiPlaces, ALibraryWithoutCuptisFunctionsIsAnErrorNamingIt) {
  scratch_folder scratch;
  cupti_places places;
  places.major = stand_in_major;
  places.variable = put(LAUNCHWATCH_NOT_CUPTI, scratch.path() / "libcupti.so.99").string();
  EXPECT_THAT(refusal(places),
              AllOf(HasSubstr(places.variable), HasSubstr("is not CUPTI"),
                    HasSubstr("cuptiGetVersion")));
}

TEST(CuptiPlaces, NoneFoundIsAnErrorNamingTheThreePlacesAndHowToInstallCupti) {
  scratch_folder scratch;
  cupti_places places;
  places.major = stand_in_major;
  places.site_packages = {scratch.path() / "site-packages"};
  places.toolkit_folders = {scratch.path() / "cuda/lib64"};
  const std::string message = refusal(places);
  EXPECT_THAT(message,
              AllOf(HasSubstr("no CUPTI library (libcupti.so.99) was found"),
                    HasSubstr("1. LAUNCHWATCH_CUPTI_LIBRARY: not set"),
                    HasSubstr("2. the nvidia-cuda-cupti wheel of the program's Python environment: "
                              "nvidia/cu99/lib and nvidia/cuda_cupti/lib under " +
                              (scratch.path() / "site-packages").string()),
                    HasSubstr("3. the CUDA toolkit: " + (scratch.path() / "cuda/lib64").string() +
                              ", then the dynamic loader's own search"),
                    HasSubstr("pip install nvidia-cuda-cupti"),
                    HasSubstr("set LAUNCHWATCH_CUPTI_LIBRARY")));
}

TEST(CuptiPlaces, NoneFoundWithNoEnvironmentKnownSaysSo) {
  cupti_places places;
  places.major = 12;
  EXPECT_THAT(refusal(places),
              AllOf(HasSubstr("2. the nvidia-cuda-cupti-cu12 wheel of the program's Python "
                              "environment: no site-packages folder is known"),
                    HasSubstr("pip install nvidia-cuda-cupti-cu12")));
}

TEST(CuptiPlaces, TheSitePackagesOfALibraryLoadedInTheProcessAreAnEnvironmentToLookIn) {
  scratch_folder scratch;
  const auto site = scratch.path() / "venv/lib/python3.12/site-packages";
  const auto library = put(LAUNCHWATCH_NOT_CUPTI, site / "torch/lib/libtorch_stand_in.so");
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << ::dlerror();
  const auto folders = loaded_site_packages();
  ::dlclose(handle);
  EXPECT_THAT(folders, ::testing::Contains(site));
}

TEST(CuptiPlaces, ThisProcesssPlacesComeFromItsVariablesThenWhereTheBuildFoundCupti) {
  const with_variable chosen{"LAUNCHWATCH_CUPTI_LIBRARY", "/chosen/libcupti.so.13"};
  const with_variable sites{"LAUNCHWATCH_PYTHON_SITE_PACKAGES", "/env/site-packages:/base/dist"};
  const with_variable home{"CUDA_HOME", "/opt/cuda"};
  const with_variable path{"CUDA_PATH", nullptr};
  const auto places = cupti_places_here(13, {"/built/with"});
  EXPECT_EQ(places.major, 13);
  EXPECT_EQ(places.variable, "/chosen/libcupti.so.13");
  ASSERT_GE(places.site_packages.size(), 2u);
  EXPECT_EQ(places.site_packages[0], "/env/site-packages");
  EXPECT_EQ(places.site_packages[1], "/base/dist");
  EXPECT_THAT(places.toolkit_folders,
              ::testing::IsSupersetOf<fs::path>({"/opt/cuda/extras/CUPTI/lib64", "/opt/cuda/lib64",
                                                 "/built/with", "/usr/local/cuda/lib64"}));
  EXPECT_EQ(places.toolkit_folders.front(), "/opt/cuda/extras/CUPTI/lib64");
}

TEST(CuptiPlaces, AnEmptyVariableCountsAsUnset) {
  const with_variable chosen{"LAUNCHWATCH_CUPTI_LIBRARY", ""};
  EXPECT_EQ(cupti_places_here(13, {}).variable, "");
}

TEST(CuptiPlaces, ResolvingFunctionsNamesTheFirstOneTheLibraryLacks) {
  void* handle = ::dlopen(LAUNCHWATCH_STAND_IN_CUPTI, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << ::dlerror();
  const char* names[] = {"cuptiGetVersion", "cuptiSubscribe_v2"};
  void* functions[2] = {};
  EXPECT_STREQ(resolve_functions(handle, names, functions), "cuptiSubscribe_v2");
  EXPECT_EQ(functions[0], ::dlsym(handle, "cuptiGetVersion"));
  const char* present[] = {"cuptiGetVersion"};
  EXPECT_EQ(resolve_functions(handle, present, functions), nullptr);
  ::dlclose(handle);
}

}  // namespace
}  // namespace launchwatch::detail::cuda_bridge
