// The kernels of the demo's transformer block: each a single-source function object that runs on
// the CPU backend and, compiled by nvcc, on CUDA. One unit computes one output element or one row,
// so every kernel is a plain loop nest a reader can check against the reference in reference.hpp.
// For Vulkan each carries its GLSL twin (shaders/<name>.comp, compiled at build time into
// demo_shaders.hpp); the demo checks every backend's result against the host reference.
#pragma once

#include <cmath>
#include <cstdint>

#include <launchwatch/runtime/device_span.hpp>
#include <launchwatch/runtime/geometry.hpp>
#include <launchwatch/runtime/vulkan_shader.hpp>

#include "demo_shaders.hpp"

namespace launchwatch::demo {

/// x[t, c] = table[token[t], c] + positions[t, c]: token embedding plus a learned position.
struct embed {
  device_span<const std::int32_t> tokens;
  device_span<const float> table;
  device_span<const float> positions;
  device_span<float> out;
  std::uint32_t width;

  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    const auto i = u.absolute_pos();
    if (i >= out.size()) return;
    const auto t = i / width;
    const auto c = i % width;
    out[i] = table[static_cast<std::uint64_t>(tokens[t]) * width + c] + positions[i];
  }

  static constexpr vulkan_shader vulkan = shaders::embed;
};

/// y = (x - mean) / sqrt(var + epsilon) * gamma + beta, one unit per row.
struct layer_norm {
  device_span<const float> x;
  device_span<const float> gamma;
  device_span<const float> beta;
  device_span<float> y;
  std::uint32_t rows;
  std::uint32_t width;
  float epsilon;

  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    const auto row = u.absolute_pos();
    if (row >= rows) return;
    const auto* in = x.data() + row * width;
    float mean = 0.0f;
    for (std::uint32_t c = 0; c < width; ++c) mean += in[c];
    mean /= static_cast<float>(width);
    float variance = 0.0f;
    for (std::uint32_t c = 0; c < width; ++c) variance += (in[c] - mean) * (in[c] - mean);
    variance /= static_cast<float>(width);
    const float scale = 1.0f / sqrtf(variance + epsilon);
    for (std::uint32_t c = 0; c < width; ++c) {
      y[row * width + c] = (in[c] - mean) * scale * gamma[c] + beta[c];
    }
  }

  static constexpr vulkan_shader vulkan = shaders::layer_norm;
};

/// y[r, o] = bias[o] + sum_k x[r, k] * weight[k, o], one unit per output element.
struct linear {
  device_span<const float> x;
  device_span<const float> weight;
  device_span<const float> bias;
  device_span<float> y;
  std::uint32_t rows;
  std::uint32_t in_width;
  std::uint32_t out_width;

  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    const auto i = u.absolute_pos();
    if (i >= std::uint64_t{rows} * out_width) return;
    const auto r = i / out_width;
    const auto o = i % out_width;
    float sum = bias[o];
    for (std::uint32_t k = 0; k < in_width; ++k) sum += x[r * in_width + k] * weight[k * out_width + o];
    y[i] = sum;
  }

  static constexpr vulkan_shader vulkan = shaders::linear;
};

/// scores[h, i, j] = q_i . k_j / sqrt(head_width) for j <= i, and -infinity above the diagonal
/// (causal). q, k, v are packed per token in `qkv` as [q | k | v], each `heads * head_width` wide.
struct attention_scores {
  device_span<const float> qkv;
  device_span<float> scores;
  std::uint32_t tokens;
  std::uint32_t heads;
  std::uint32_t head_width;

  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    const auto i = u.absolute_pos();
    if (i >= std::uint64_t{heads} * tokens * tokens) return;
    const auto h = i / (std::uint64_t{tokens} * tokens);
    const auto query = (i / tokens) % tokens;
    const auto key = i % tokens;
    if (key > query) {
      scores[i] = -INFINITY;
      return;
    }
    const auto model_width = std::uint64_t{heads} * head_width;
    const auto* q = qkv.data() + query * 3 * model_width + h * head_width;
    const auto* k = qkv.data() + key * 3 * model_width + model_width + h * head_width;
    float dot = 0.0f;
    for (std::uint32_t d = 0; d < head_width; ++d) dot += q[d] * k[d];
    scores[i] = dot / sqrtf(static_cast<float>(head_width));
  }

  static constexpr vulkan_shader vulkan = shaders::attention_scores;
};

/// Each row of `values` becomes its softmax, in place, one unit per row; subtracting the row's
/// maximum keeps the exponentials finite.
struct softmax_rows {
  device_span<float> values;
  std::uint32_t rows;
  std::uint32_t width;

  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    const auto row = u.absolute_pos();
    if (row >= rows) return;
    float* v = values.data() + row * width;
    float largest = -INFINITY;
    for (std::uint32_t c = 0; c < width; ++c) largest = v[c] > largest ? v[c] : largest;
    float sum = 0.0f;
    for (std::uint32_t c = 0; c < width; ++c) {
      v[c] = expf(v[c] - largest);
      sum += v[c];
    }
    for (std::uint32_t c = 0; c < width; ++c) v[c] /= sum;
  }

  static constexpr vulkan_shader vulkan = shaders::softmax_rows;
};

/// out[i, h * head_width + d] = sum_j probabilities[h, i, j] * v_j[h * head_width + d].
struct attention_mix {
  device_span<const float> probabilities;
  device_span<const float> qkv;
  device_span<float> out;
  std::uint32_t tokens;
  std::uint32_t heads;
  std::uint32_t head_width;

  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    const auto model_width = std::uint64_t{heads} * head_width;
    const auto i = u.absolute_pos();
    if (i >= tokens * model_width) return;
    const auto query = i / model_width;
    const auto column = i % model_width;
    const auto h = column / head_width;
    const auto* p = probabilities.data() + (h * tokens + query) * tokens;
    float sum = 0.0f;
    for (std::uint64_t key = 0; key <= query; ++key) {
      sum += p[key] * qkv[key * 3 * model_width + 2 * model_width + column];
    }
    out[i] = sum;
  }

  static constexpr vulkan_shader vulkan = shaders::attention_mix;
};

/// x += y, elementwise: the residual connection.
struct add_residual {
  device_span<float> x;
  device_span<const float> y;

  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    const auto i = u.absolute_pos();
    if (i < x.size()) x[i] += y[i];
  }

  static constexpr vulkan_shader vulkan = shaders::add_residual;
};

/// GELU in place, with the tanh approximation GPT-2 uses.
struct gelu {
  device_span<float> x;

  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    const auto i = u.absolute_pos();
    if (i >= x.size()) return;
    const float v = x[i];
    x[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
  }

  static constexpr vulkan_shader vulkan = shaders::gelu;
};

}  // namespace launchwatch::demo
