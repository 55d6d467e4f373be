// Uses the installed headers and library: installs an observer and checks it hears a launch.
#include <launchwatch/launch_path.hpp>
#include <launchwatch/launchwatch.hpp>

#include <cstdio>
#include <memory>

namespace {
struct counter : launchwatch::launch_observer {
  int launches = 0;
  void launched(std::string_view) override { ++launches; }
};
struct a_kernel {};
}  // namespace

int main() {
  auto observer = std::make_shared<counter>();
  {
    launchwatch::launch_observation watching{observer};
    launchwatch::launch_path::notify_launch(launchwatch::type_name<a_kernel>());
  }
  std::printf("consumer: observed %d launch(es)\n", observer->launches);
  return observer->launches == 1 ? 0 : 1;
}
