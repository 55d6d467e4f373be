// docs/guide.md's CUDA example: a host file (g++) and model.cpp (nvcc), linked to the installed
// launchwatch::launchwatch with the shared CUDA runtime. The package test only builds it (CI has
// no GPU); run by hand it uses client::cuda(0), or the CPU backend where there is no GPU.
#include <launchwatch/launchwatch.hpp>

#include <cstdio>
#include <vector>

std::vector<float> model(launchwatch::client& client, const std::vector<float>& values);

namespace {
launchwatch::client a_client() {
  try {
    return launchwatch::client::cuda(0);
  } catch (const launchwatch::backend_unavailable& why) {
    std::printf("train: %s; on the CPU instead\n", why.what());
    return launchwatch::client::cpu();
  }
}
}  // namespace

int main() {
  auto client = a_client();
  const std::vector<float> out = model(client, std::vector<float>(1000, 1.0f));
  std::printf("train: y[0] = %g on %s\n", out[0], client.device_name().c_str());
  return out[0] == 2.0f ? 0 : 1;
}
