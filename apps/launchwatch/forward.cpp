// Compiled as CUDA where the CUDA backend is built (see CMakeLists.txt): only a translation unit
// nvcc compiles can hand a kernel to the CUDA backend.

#include "forward.hpp"

#include <string>
#include <utility>

#include <launchwatch/attribute/scope.hpp>
#include <launchwatch/runtime/buffer.hpp>

#include "transformer_kernels.hpp"

namespace launchwatch::demo {
namespace {

constexpr std::uint32_t units_per_cube = 128;

cube_count cubes_for(std::uint64_t units) {
  return cube_count{(units + units_per_cube - 1) / units_per_cube};
}

struct layer_buffers {
  buffer<float> norm1_gamma, norm1_beta, qkv_weight, qkv_bias, proj_weight, proj_bias;
  buffer<float> norm2_gamma, norm2_beta, fc1_weight, fc1_bias, fc2_weight, fc2_bias;
};

}  // namespace

struct transformer_runner::resident {
  explicit resident(client device) : on{std::move(device)} {}

  client on;
  transformer_config config;
  buffer<std::int32_t> tokens;
  buffer<float> token_table, positions, final_gamma, final_beta;
  std::vector<layer_buffers> layers;
  // Activations, reused by every layer.
  buffer<float> x, normed, qkv, scores, mixed, projected, up, down, out;
  // The scope names of each layer, built once: a scope interns its name on every entry.
  std::vector<std::string> layer_names;
};

transformer_runner::transformer_runner(client on, const transformer_config& config,
                                       const transformer_weights& weights,
                                       const std::vector<std::int32_t>& tokens)
    : resident_{std::make_unique<resident>(on)} {
  config.validate();
  auto& r = *resident_;
  r.config = config;
  r.tokens = on.create(tokens);
  r.token_table = on.create(weights.token_table);
  r.positions = on.create(weights.positions);
  r.final_gamma = on.create(weights.final_gamma);
  r.final_beta = on.create(weights.final_beta);
  for (const auto& w : weights.layers) {
    r.layers.push_back(layer_buffers{
        on.create(w.norm1_gamma), on.create(w.norm1_beta), on.create(w.qkv_weight),
        on.create(w.qkv_bias), on.create(w.proj_weight), on.create(w.proj_bias),
        on.create(w.norm2_gamma), on.create(w.norm2_beta), on.create(w.fc1_weight),
        on.create(w.fc1_bias), on.create(w.fc2_weight), on.create(w.fc2_bias)});
  }
  const std::size_t n = config.tokens, w = config.width;
  r.x = on.empty<float>(n * w);
  r.normed = on.empty<float>(n * w);
  r.qkv = on.empty<float>(n * 3 * w);
  r.scores = on.empty<float>(std::size_t{config.heads} * n * n);
  r.mixed = on.empty<float>(n * w);
  r.projected = on.empty<float>(n * w);
  r.up = on.empty<float>(n * config.hidden);
  r.down = on.empty<float>(n * w);
  r.out = on.empty<float>(n * w);
  for (std::uint32_t l = 0; l < config.layers; ++l) r.layer_names.push_back("layer " + std::to_string(l));
}

transformer_runner::~transformer_runner() = default;

std::size_t transformer_runner::launches_per_pass() const {
  return 2 + 12 * std::size_t{resident_->config.layers};
}

void transformer_runner::forward() {
  auto& r = *resident_;
  const auto& c = r.config;
  const std::uint32_t n = c.tokens, w = c.width;
  const cube_dim dim{units_per_cube};
  const auto rows = cubes_for(n);
  const auto activations = cubes_for(std::uint64_t{n} * w);

  scope pass{"forward"};
  {
    scope s{"embedding"};
    r.on.launch(embed{r.tokens.view(), r.token_table.view(), r.positions.view(), r.x.view(), w},
                activations, dim);
  }
  for (std::uint32_t l = 0; l < c.layers; ++l) {
    const auto& b = r.layers[l];
    scope layer{r.layer_names[l]};
    {
      scope s{"attention"};
      r.on.launch(layer_norm{r.x.view(), b.norm1_gamma.view(), b.norm1_beta.view(), r.normed.view(), n, w, 1e-5f},
                  rows, dim);
      r.on.launch(linear{r.normed.view(), b.qkv_weight.view(), b.qkv_bias.view(), r.qkv.view(), n, w, 3 * w},
                  cubes_for(std::uint64_t{n} * 3 * w), dim);
      r.on.launch(attention_scores{r.qkv.view(), r.scores.view(), n, c.heads, c.head_width()},
                  cubes_for(std::uint64_t{c.heads} * n * n), dim);
      r.on.launch(softmax_rows{r.scores.view(), c.heads * n, n}, cubes_for(std::uint64_t{c.heads} * n), dim);
      r.on.launch(attention_mix{r.scores.view(), r.qkv.view(), r.mixed.view(), n, c.heads, c.head_width()},
                  activations, dim);
      r.on.launch(linear{r.mixed.view(), b.proj_weight.view(), b.proj_bias.view(), r.projected.view(), n, w, w},
                  activations, dim);
      r.on.launch(add_residual{r.x.view(), r.projected.view()}, activations, dim);
    }
    {
      scope s{"mlp"};
      r.on.launch(layer_norm{r.x.view(), b.norm2_gamma.view(), b.norm2_beta.view(), r.normed.view(), n, w, 1e-5f},
                  rows, dim);
      r.on.launch(linear{r.normed.view(), b.fc1_weight.view(), b.fc1_bias.view(), r.up.view(), n, w, c.hidden},
                  cubes_for(std::uint64_t{n} * c.hidden), dim);
      r.on.launch(gelu{r.up.view()}, cubes_for(std::uint64_t{n} * c.hidden), dim);
      r.on.launch(linear{r.up.view(), b.fc2_weight.view(), b.fc2_bias.view(), r.down.view(), n, c.hidden, w},
                  activations, dim);
      r.on.launch(add_residual{r.x.view(), r.down.view()}, activations, dim);
    }
  }
  scope s{"final norm"};
  r.on.launch(layer_norm{r.x.view(), r.final_gamma.view(), r.final_beta.view(), r.out.view(), n, w, 1e-5f},
              rows, dim);
}

std::vector<float> transformer_runner::output() const { return resident_->on.read(resident_->out); }

}  // namespace launchwatch::demo
