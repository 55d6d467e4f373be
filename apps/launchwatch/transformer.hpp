// The demo's model: a small GPT-style transformer block stack, its weights, and a plain reference
// forward pass that the kernels are checked against.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace launchwatch::demo {

/// The model's shape. Small by default so the CPU demo finishes in well under a second per pass.
struct transformer_config {
  std::uint32_t vocabulary = 256;
  std::uint32_t tokens = 64;
  std::uint32_t width = 128;
  std::uint32_t heads = 4;
  std::uint32_t layers = 4;
  std::uint32_t hidden = 512;  ///< The MLP's inner width.
  std::uint64_t seed = 1;

  std::uint32_t head_width() const { return width / heads; }
  /// Throws std::invalid_argument naming the field when the shape cannot be run.
  void validate() const;
};

/// One block's weights, row-major, `in x out` for linear layers.
struct layer_weights {
  std::vector<float> norm1_gamma, norm1_beta;
  std::vector<float> qkv_weight, qkv_bias;    // width x 3 width
  std::vector<float> proj_weight, proj_bias;  // width x width
  std::vector<float> norm2_gamma, norm2_beta;
  std::vector<float> fc1_weight, fc1_bias;  // width x hidden
  std::vector<float> fc2_weight, fc2_bias;  // hidden x width
};

struct transformer_weights {
  std::vector<float> token_table;  // vocabulary x width
  std::vector<float> positions;    // tokens x width
  std::vector<layer_weights> layers;
  std::vector<float> final_gamma, final_beta;
};

/// Weights drawn from a seeded generator, the same on every platform (no std distributions, whose
/// output is implementation-defined), scaled like GPT-2's initialisation.
transformer_weights make_weights(const transformer_config& config);

/// A deterministic token sequence for the pass.
std::vector<std::int32_t> make_tokens(const transformer_config& config);

/// The forward pass in plain loops on the host, the numerics the kernels must reproduce: the final
/// layer-normed activations, tokens x width.
std::vector<float> reference_forward(const transformer_config& config,
                                     const transformer_weights& weights,
                                     const std::vector<std::int32_t>& tokens);

}  // namespace launchwatch::demo
