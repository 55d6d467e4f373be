// docs/guide.md's CUDA rule: the file that calls client.launch is compiled by nvcc
// (LANGUAGE CUDA in CMakeLists.txt), so the launch can run on client::cuda().
#include <launchwatch/attribute/scope.hpp>
#include <launchwatch/runtime/client.hpp>

#include <vector>

#include "../readme_axpy.hpp"

std::vector<float> model(launchwatch::client& client, const std::vector<float>& values) {
  auto x = client.create<float>(values);
  auto y = client.empty<float>(values.size());
  launchwatch::scope s{"model"};
  const unsigned blocks = static_cast<unsigned>((values.size() + 255) / 256);
  client.launch(axpy{2.0f, x.view(), y.view()}, launchwatch::cube_count{blocks}, launchwatch::cube_dim{256});
  return client.read(y);
}
