// The README's CPU example, as written there ("Launching kernels", "Watching launches",
// "Attributing device time to your code", count_launches and the matchers of
// <launchwatch/attribute/testing.hpp>), against the installed package.
#include <launchwatch/launchwatch.hpp>
#if CONSUMER_HAS_GMOCK
#include <launchwatch/attribute/testing.hpp>
#endif

#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string_view>
#include <vector>

#include "readme_axpy.hpp"

namespace {

struct count_them : launchwatch::launch_observer {
  std::mutex mutex;
  std::map<std::string_view, int> counts;
  void launched(std::string_view kernel) override {   // on the issuing thread, before submission
    std::lock_guard lock{mutex};
    ++counts[kernel];
  }
};

int failed(const char* what) {
  std::fprintf(stderr, "readme_cpu: %s\n", what);
  return 1;
}

}  // namespace

int main() {
  const std::vector<float> host_values(1000, 1.0f);
  const unsigned blocks = (1000 + 255) / 256;
  auto client = launchwatch::client::cpu();
  auto x = client.create<float>(host_values);
  auto y = client.empty<float>(host_values.size());
  auto launch = [&] {
    client.launch(axpy{2.0f, x.view(), y.view()}, launchwatch::cube_count{blocks}, launchwatch::cube_dim{256});
  };

  auto counts = std::make_shared<count_them>();
  {
    launchwatch::launch_observation watching{counts};   // installed until the end of this scope
    launch();
  }
  std::vector<float> out = client.read(y);           // waits only for the launches that touched y
  if (out.size() != 1000 || out[0] != 2.0f || out[999] != 2.0f) return failed("axpy gave a wrong y");
  if (counts->counts.size() != 1 || counts->counts.begin()->second != 1) {
    return failed("the observer did not hear exactly one launch");
  }

  auto pass = launchwatch::attribute_pass([&] {
    launchwatch::scope layer{"layer 0"};
    { launchwatch::scope s{"attention"}; launch(); }
    { launchwatch::scope s{"mlp"}; launch(); }
    client.sync();
  });
  auto summary = launchwatch::summarize(pass);
  std::ostringstream tree, trace, folded;
  launchwatch::write_tree(tree, summary);               // scope -> kernels, 100% accounted
  launchwatch::write_chrome_trace(trace, pass);         // Perfetto
  launchwatch::write_folded(folded, summary);           // flame graphs
  std::cout << tree.str();
  if (tree.str().find("attention") == std::string::npos || trace.str().find("mlp") == std::string::npos ||
      folded.str().find("layer 0;mlp") == std::string::npos) {
    return failed("the reports lack the pass's scopes");
  }

  const auto launched = launchwatch::count_launches([&] { launch(); client.sync(); });
  std::cout << launched << "\n";
  if (launched.total() != 1 || launched.of("axpy") != 1) return failed("count_launches did not count one axpy");
#if CONSUMER_HAS_GMOCK
  using namespace launchwatch::testing;
  if (!::testing::Value(launched, LaunchedKernel("axpy", 1))) return failed("LaunchedKernel(\"axpy\", 1) failed");
#endif
  std::printf("readme_cpu: ok\n");
  return 0;
}
