// Two copies of launchwatch in one process (this program, which links the core, and a module with
// a private copy, as the injection library is under `launchwatch run`) agree on one reported_here
// flag per thread, so the CUDA bridge in one copy skips the launches the other copy's CUDA backend
// reports itself (its clock probes among them).

#include <launchwatch/launch_path.hpp>
#include <launchwatch/observe.hpp>

#include <dlfcn.h>

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "support/recording_observer.hpp"

namespace launchwatch {
namespace {

/// The module, opened as CUDA opens an injection library: its symbols kept to itself.
class second_copy {
 public:
  second_copy() : handle_{::dlopen(LAUNCHWATCH_SECOND_COPY, RTLD_NOW | RTLD_LOCAL)} {
    if (handle_ == nullptr) throw std::runtime_error{std::string{"dlopen: "} + ::dlerror()};
  }
  ~second_copy() { ::dlclose(handle_); }
  second_copy(const second_copy&) = delete;
  second_copy& operator=(const second_copy&) = delete;

  template <class F>
  F* entry(const char* name) const {
    void* found = ::dlsym(handle_, name);
    if (found == nullptr) throw std::runtime_error{std::string{"dlsym: "} + name};
    return reinterpret_cast<F*>(found);
  }

 private:
  void* handle_;
};

bool this_copy_reported_here_now() { return launch_path::reported_here_now(); }

TEST(TwoCopies, TheModuleHoldsACopyOfTheCoreOfItsOwn) {
  second_copy module;
  launch_observation watching{std::make_shared<testing::recording_observer>()};
  EXPECT_FALSE(module.entry<bool()>("second_copy_is_observing")());
}

TEST(TwoCopies, AReportedHereGuardOfThisCopyIsSeenByTheOther) {
  second_copy module;
  auto* reported_there = module.entry<bool()>("second_copy_reported_here_now");
  {
    launch_path::reported_here guard;
    EXPECT_TRUE(reported_there());
  }
  EXPECT_FALSE(reported_there());
}

TEST(TwoCopies, AReportedHereGuardOfTheOtherCopyIsSeenByThisOne) {
  second_copy module;
  auto* ask_there = module.entry<bool(bool (*)())>("second_copy_ask_while_reported_here");
  EXPECT_TRUE(ask_there(&this_copy_reported_here_now));
  EXPECT_FALSE(launch_path::reported_here_now());
}

}  // namespace
}  // namespace launchwatch
