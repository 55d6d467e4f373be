// The demo's transformer: its kernels reproduce the plain host reference, and a pass launches what
// the report says it does.

#include <cmath>
#include <optional>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/attribute/count.hpp>
#include <launchwatch/attribute/testing.hpp>
#include <launchwatch/errors.hpp>
#include <launchwatch/report/summary.hpp>
#include <launchwatch/runtime/client.hpp>

#include "forward.hpp"
#include "transformer.hpp"

namespace launchwatch::demo {
namespace {

transformer_config small_model() {
  transformer_config config;
  config.tokens = 16;
  config.width = 32;
  config.heads = 4;
  config.layers = 2;
  config.hidden = 64;
  return config;
}

double worst_error(const std::vector<float>& got, const std::vector<float>& want) {
  double worst = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(double{got[i]} - want[i]));
  return worst;
}

TEST(DemoModel, KernelsReproduceTheHostReference) {
  const auto config = small_model();
  const auto weights = make_weights(config);
  const auto tokens = make_tokens(config);
  transformer_runner runner{client::cpu(), config, weights, tokens};
  runner.forward();
  const auto got = runner.output();
  const auto want = reference_forward(config, weights, tokens);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_LT(worst_error(got, want), 1e-4);
  // Layer-normed output: every row has mean 0 and variance 1 (gamma 1, beta 0), so a kernel that
  // wrote nothing would fail here rather than agree with a reference that also computed nothing.
  for (std::uint32_t row = 0; row < config.tokens; ++row) {
    double mean = 0.0, square = 0.0;
    for (std::uint32_t c = 0; c < config.width; ++c) {
      mean += got[row * config.width + c];
      square += double{got[row * config.width + c]} * got[row * config.width + c];
    }
    mean /= config.width;
    EXPECT_NEAR(mean, 0.0, 1e-4);
    EXPECT_NEAR(square / config.width - mean * mean, 1.0, 1e-2);
  }
}

TEST(DemoModel, VulkanKernelsReproduceTheHostReference) {
  std::optional<client> vulkan;
  try {
    vulkan.emplace(client::vulkan());
  } catch (const backend_unavailable& why) {
    GTEST_SKIP() << why.what();
  }
  const auto config = small_model();
  const auto weights = make_weights(config);
  const auto tokens = make_tokens(config);
  transformer_runner runner{*vulkan, config, weights, tokens};
  runner.forward();
  const auto got = runner.output();
  const auto want = reference_forward(config, weights, tokens);
  ASSERT_EQ(got.size(), want.size());
  // The shaders' exp, tanh and sqrt are the device's, not the host library's: a little looser.
  EXPECT_LT(worst_error(got, want), 1e-3);
}

TEST(DemoModel, ReferenceDependsOnEveryLayer) {
  auto config = small_model();
  const auto weights = make_weights(config);
  const auto tokens = make_tokens(config);
  auto fewer = weights;
  fewer.layers.pop_back();
  EXPECT_GT(worst_error(reference_forward(config, weights, tokens), reference_forward(config, fewer, tokens)), 1e-3);
}

TEST(DemoModel, APassLaunchesTwoPlusTwelveKernelsPerLayer) {
  const auto config = small_model();
  transformer_runner runner{client::cpu(), config, make_weights(config), make_tokens(config)};
  const auto counts = count_launches([&] { runner.forward(); });
  EXPECT_EQ(counts.total(), runner.launches_per_pass());
  EXPECT_EQ(counts.total(), 2u + 12u * config.layers);
  EXPECT_THAT(counts, testing::LaunchedKernel("linear", std::size_t{4u * config.layers}));
  EXPECT_THAT(counts, testing::LaunchedKernel("softmax_rows", std::size_t{config.layers}));
}

TEST(DemoModel, EveryLaunchIsAttributedToALayerAndOp) {
  const auto config = small_model();
  transformer_runner runner{client::cpu(), config, make_weights(config), make_tokens(config)};
  auto pass = attribute_pass([&] {
    runner.forward();
    (void)runner.output();
  });
  ASSERT_EQ(pass.launches.size(), runner.launches_per_pass());
  std::size_t in_attention = 0;
  for (const auto& launch : pass.launches) {
    ASSERT_TRUE(launch.scope.has_value()) << "a launch outside every scope";
    const auto path = pass.scope_path_text(*launch.scope);
    EXPECT_THAT(path, ::testing::StartsWith("forward/"));
    if (path.find("/attention") != std::string::npos) ++in_attention;
  }
  EXPECT_EQ(in_attention, 7u * config.layers);
  const auto summary = summarize(pass);
  EXPECT_EQ(summary.launches, runner.launches_per_pass());
  EXPECT_EQ(summary.outside.launches, 0u);
}

TEST(DemoModel, AShapeThatCannotRunIsRejectedNamingTheField) {
  auto config = small_model();
  config.heads = 5;
  try {
    config.validate();
    FAIL() << "a width that is not a multiple of heads was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("multiple of heads"));
  }
}

}  // namespace
}  // namespace launchwatch::demo
