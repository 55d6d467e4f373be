// The demo's forward pass on a launchwatch client: weights uploaded once, every op a kernel launch,
// each launch named by the scope it serves (`forward/layer 2/attention`).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <launchwatch/runtime/client.hpp>

#include "transformer.hpp"

namespace launchwatch::demo {

/// A transformer stack resident on one client's device.
///
/// Compiled by nvcc where the CUDA backend is built, so the same launches run on either backend.
class transformer_runner {
 public:
  /// Uploads `weights` and `tokens` to `on`'s device and allocates the activations.
  transformer_runner(client on, const transformer_config& config, const transformer_weights& weights,
                     const std::vector<std::int32_t>& tokens);
  ~transformer_runner();
  transformer_runner(const transformer_runner&) = delete;
  transformer_runner& operator=(const transformer_runner&) = delete;

  /// Issues one forward pass (2 + 12 x layers launches) under scopes; returns once they are queued.
  void forward();
  /// The final layer-normed activations, tokens x width; waits for the pass that wrote them.
  std::vector<float> output() const;
  /// Launches one forward pass issues.
  std::size_t launches_per_pass() const;

 private:
  struct resident;
  std::unique_ptr<resident> resident_;
};

}  // namespace launchwatch::demo
