#include "transformer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace launchwatch::demo {
namespace {

/// SplitMix64: tiny, fast and fully specified, so weights match across standard libraries.
class splitmix64 {
 public:
  explicit splitmix64(std::uint64_t seed) : state_{seed} {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [-1, 1).
  float symmetric() {
    return static_cast<float>(static_cast<double>(next() >> 11) * 0x1.0p-53 * 2.0 - 1.0);
  }

 private:
  std::uint64_t state_;
};

std::vector<float> random_values(splitmix64& random, std::size_t count, float scale) {
  std::vector<float> values(count);
  for (auto& v : values) v = random.symmetric() * scale;
  return values;
}

std::vector<float> filled(std::size_t count, float value) { return std::vector<float>(count, value); }

void layer_norm(const float* x, const std::vector<float>& gamma, const std::vector<float>& beta,
                float* y, std::uint32_t rows, std::uint32_t width) {
  for (std::uint32_t r = 0; r < rows; ++r) {
    const float* in = x + std::size_t{r} * width;
    float mean = 0.0f;
    for (std::uint32_t c = 0; c < width; ++c) mean += in[c];
    mean /= static_cast<float>(width);
    float variance = 0.0f;
    for (std::uint32_t c = 0; c < width; ++c) variance += (in[c] - mean) * (in[c] - mean);
    variance /= static_cast<float>(width);
    const float scale = 1.0f / std::sqrt(variance + 1e-5f);
    for (std::uint32_t c = 0; c < width; ++c)
      y[std::size_t{r} * width + c] = (in[c] - mean) * scale * gamma[c] + beta[c];
  }
}

void linear(const float* x, const std::vector<float>& w, const std::vector<float>& b, float* y,
            std::uint32_t rows, std::uint32_t in, std::uint32_t out) {
  for (std::uint32_t r = 0; r < rows; ++r) {
    for (std::uint32_t o = 0; o < out; ++o) {
      float sum = b[o];
      for (std::uint32_t k = 0; k < in; ++k) sum += x[std::size_t{r} * in + k] * w[std::size_t{k} * out + o];
      y[std::size_t{r} * out + o] = sum;
    }
  }
}

}  // namespace

void transformer_config::validate() const {
  auto require = [](bool ok, const std::string& message) {
    if (!ok) throw std::invalid_argument{message};
  };
  require(vocabulary > 0, "vocabulary must be at least 1");
  require(tokens > 0, "tokens must be at least 1");
  require(layers > 0, "layers must be at least 1");
  require(heads > 0 && width % heads == 0,
          "width (" + std::to_string(width) + ") must be a positive multiple of heads (" +
              std::to_string(heads) + ")");
  require(hidden > 0, "hidden must be at least 1");
  require(std::uint64_t{heads} * tokens * tokens < (std::uint64_t{1} << 31),
          "heads x tokens x tokens must stay below 2^31 attention scores; use fewer tokens");
}

transformer_weights make_weights(const transformer_config& config) {
  splitmix64 random{config.seed};
  const auto w = std::size_t{config.width};
  const auto h = std::size_t{config.hidden};
  transformer_weights weights;
  weights.token_table = random_values(random, std::size_t{config.vocabulary} * w, 0.5f);
  weights.positions = random_values(random, std::size_t{config.tokens} * w, 0.1f);
  const float in_scale = 1.0f / std::sqrt(static_cast<float>(w));
  const float hidden_scale = 1.0f / std::sqrt(static_cast<float>(h));
  for (std::uint32_t l = 0; l < config.layers; ++l) {
    layer_weights layer;
    layer.norm1_gamma = filled(w, 1.0f);
    layer.norm1_beta = filled(w, 0.0f);
    layer.qkv_weight = random_values(random, w * 3 * w, in_scale);
    layer.qkv_bias = random_values(random, 3 * w, 0.02f);
    layer.proj_weight = random_values(random, w * w, in_scale);
    layer.proj_bias = random_values(random, w, 0.02f);
    layer.norm2_gamma = filled(w, 1.0f);
    layer.norm2_beta = filled(w, 0.0f);
    layer.fc1_weight = random_values(random, w * h, in_scale);
    layer.fc1_bias = random_values(random, h, 0.02f);
    layer.fc2_weight = random_values(random, h * w, hidden_scale);
    layer.fc2_bias = random_values(random, w, 0.02f);
    weights.layers.push_back(std::move(layer));
  }
  weights.final_gamma = filled(w, 1.0f);
  weights.final_beta = filled(w, 0.0f);
  return weights;
}

std::vector<std::int32_t> make_tokens(const transformer_config& config) {
  splitmix64 random{config.seed ^ 0x746F6B656E73ull};
  std::vector<std::int32_t> tokens(config.tokens);
  for (auto& t : tokens) t = static_cast<std::int32_t>(random.next() % config.vocabulary);
  return tokens;
}

std::vector<float> reference_forward(const transformer_config& config,
                                     const transformer_weights& weights,
                                     const std::vector<std::int32_t>& tokens) {
  const std::uint32_t n = config.tokens, w = config.width, heads = config.heads,
                      hw = config.head_width(), hidden = config.hidden;
  std::vector<float> x(std::size_t{n} * w), normed(x.size()), qkv(std::size_t{n} * 3 * w),
      mixed(x.size()), projected(x.size()), up(std::size_t{n} * hidden), down(x.size());
  std::vector<float> probabilities(std::size_t{heads} * n * n);
  for (std::uint32_t t = 0; t < n; ++t)
    for (std::uint32_t c = 0; c < w; ++c)
      x[std::size_t{t} * w + c] = weights.token_table[static_cast<std::size_t>(tokens[t]) * w + c] +
                                  weights.positions[std::size_t{t} * w + c];

  for (const auto& layer : weights.layers) {
    layer_norm(x.data(), layer.norm1_gamma, layer.norm1_beta, normed.data(), n, w);
    linear(normed.data(), layer.qkv_weight, layer.qkv_bias, qkv.data(), n, w, 3 * w);
    for (std::uint32_t h = 0; h < heads; ++h) {
      for (std::uint32_t i = 0; i < n; ++i) {
        float* p = probabilities.data() + (std::size_t{h} * n + i) * n;
        float largest = -std::numeric_limits<float>::infinity();
        for (std::uint32_t j = 0; j < n; ++j) {
          if (j > i) {
            p[j] = -std::numeric_limits<float>::infinity();
            continue;
          }
          float dot = 0.0f;
          for (std::uint32_t d = 0; d < hw; ++d)
            dot += qkv[std::size_t{i} * 3 * w + h * hw + d] * qkv[std::size_t{j} * 3 * w + w + h * hw + d];
          p[j] = dot / std::sqrt(static_cast<float>(hw));
          largest = std::max(largest, p[j]);
        }
        float sum = 0.0f;
        for (std::uint32_t j = 0; j < n; ++j) {
          p[j] = std::exp(p[j] - largest);
          sum += p[j];
        }
        for (std::uint32_t j = 0; j < n; ++j) p[j] /= sum;
        for (std::uint32_t d = 0; d < hw; ++d) {
          float mix = 0.0f;
          for (std::uint32_t j = 0; j <= i; ++j) mix += p[j] * qkv[std::size_t{j} * 3 * w + 2 * w + h * hw + d];
          mixed[std::size_t{i} * w + h * hw + d] = mix;
        }
      }
    }
    linear(mixed.data(), layer.proj_weight, layer.proj_bias, projected.data(), n, w, w);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += projected[i];

    layer_norm(x.data(), layer.norm2_gamma, layer.norm2_beta, normed.data(), n, w);
    linear(normed.data(), layer.fc1_weight, layer.fc1_bias, up.data(), n, w, hidden);
    for (auto& v : up) v = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
    linear(up.data(), layer.fc2_weight, layer.fc2_bias, down.data(), n, hidden, w);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += down[i];
  }
  std::vector<float> out(x.size());
  layer_norm(x.data(), weights.final_gamma, weights.final_beta, out.data(), n, w);
  return out;
}

}  // namespace launchwatch::demo
