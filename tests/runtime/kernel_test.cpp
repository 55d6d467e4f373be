// Kernels: how a launch finds the buffers a kernel references, and what it hands a backend.

#include <launchwatch/observe.hpp>
#include <launchwatch/runtime/client.hpp>

#include <array>
#include <cstring>
#include <stdexcept>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/allocation.hpp"
#include "runtime/backend.hpp"

namespace launchwatch {
namespace {

struct axpy {
  float a;
  device_span<const float> x;
  device_span<float> y;
  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    auto i = u.absolute_pos();
    if (i < y.size()) y[i] += a * x[i];
  }
};

struct settings {
  int a;
  int b;
};

/// Fields of several kinds around its spans: a std::array, a nested struct, a plain value.
struct mixed {
  std::array<float, 4> weights;
  device_span<int> first;
  settings options;
  double scale;
  device_span<const int> second;
  void operator()(unit) const {}
};

/// Not an aggregate: says which spans it references itself.
class scaled_copy {
 public:
  scaled_copy(device_span<const float> in, device_span<float> out, float by)
      : in_{in}, out_{out}, by_{by} {}
  auto spans() const { return std::tuple{in_, out_}; }
  void operator()(unit u) const {
    const auto i = u.absolute_pos();
    if (i < out_.size()) out_[i] = by_ * in_[i];
  }

 private:
  device_span<const float> in_;
  device_span<float> out_;
  float by_;
};

static_assert(std::is_trivially_copyable_v<device_span<float>>);
static_assert(std::is_trivially_copyable_v<axpy>);
static_assert(std::is_convertible_v<device_span<float>, device_span<const float>>);
static_assert(!std::is_convertible_v<device_span<const float>, device_span<float>>);

TEST(KernelFields, CountsAnAggregatesFieldsWhateverTheirKind) {
  EXPECT_EQ(detail::field_count<axpy>(), 3u);
  EXPECT_EQ(detail::field_count<mixed>(), 5u);
  struct none {
    void operator()(unit) const {}
  };
  EXPECT_EQ(detail::field_count<none>(), 0u);
}

TEST(KernelSpans, FindsEveryDeviceSpanFieldInDeclarationOrder) {
  int a[3] = {};
  const int b[2] = {};
  const mixed kernel{{}, device_span<int>{a, 3, span_owner{7, 1}}, {1, 2}, 2.0,
                     device_span<const int>{b, 2, span_owner{7, 2}}};
  const auto spans = detail::kernel_spans(kernel);
  ASSERT_EQ(spans.view().size(), 2u);
  EXPECT_EQ(spans.view()[0].data, a);
  EXPECT_EQ(spans.view()[0].bytes, 3 * sizeof(int));
  EXPECT_EQ(spans.view()[0].owner, (span_owner{7, 1}));
  EXPECT_EQ(spans.view()[1].data, b);
  EXPECT_EQ(spans.view()[1].owner, (span_owner{7, 2}));
}

/// Nested fields that hold no span, of the kinds a kernel's settings take.
struct with_c_array {
  float w[4];
  int n;
};
struct tag {};
struct derived_settings : settings {};
struct nested_without_spans {
  device_span<float> out;
  std::array<settings, 2> pairs;
  with_c_array table;
  tag kind;
  derived_settings more;
  std::array<float, 3> bias;
  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    const auto i = u.absolute_pos();
    if (i < out.size()) out[i] = bias[i % 3] + static_cast<float>(pairs[1].b + table.n);
  }
};

struct strided {
  int stride;
  device_span<int> values;
};
/// Holds spans below its fields and says so through spans().
struct nested_with_declared_spans {
  strided input;
  std::array<device_span<int>, 2> outputs;
  auto spans() const { return std::tuple{input.values, outputs[0], outputs[1]}; }
  void operator()(unit) const {}
};
struct with_output {
  device_span<int> output;
};
/// Has a base class and says which spans it holds.
struct derived_with_declared_spans : with_output {
  auto spans() const { return std::tuple{output}; }
  void operator()(unit) const {}
};

TEST(KernelSpans, FindsSpansBelowTheFieldsOfAStructOrArrayAndNothingElse) {
  EXPECT_TRUE((detail::holds_span<strided, detail::max_span_nesting>()));
  EXPECT_TRUE((detail::holds_span<std::array<device_span<int>, 2>, detail::max_span_nesting>()));
  EXPECT_TRUE((detail::holds_span<std::array<strided, 2>, detail::max_span_nesting>()));
  EXPECT_FALSE((detail::holds_span<settings, detail::max_span_nesting>()));
  EXPECT_FALSE((detail::holds_span<std::array<float, 4>, detail::max_span_nesting>()));
  EXPECT_FALSE(detail::nests_spans<mixed>());
  EXPECT_FALSE(detail::nests_spans<nested_without_spans>());
}

TEST(KernelSpans, AKernelWithNestedFieldsThatHoldNoSpanRunsWithItsOwnSpansFound) {
  auto client = client::cpu();
  auto out = client.empty<float>(3);
  const nested_without_spans kernel{
      out.view(), {settings{1, 2}, settings{3, 4}}, {{}, 5}, {}, {}, {0.5f, 1.5f, 2.5f}};
  ASSERT_EQ(detail::kernel_spans(kernel).view().size(), 1u);
  EXPECT_EQ(detail::kernel_spans(kernel).view()[0].owner, out.owner());
  client.launch(kernel, cube_count{1}, cube_dim{3});
  EXPECT_EQ(client.read(out), (std::vector<float>{9.5f, 10.5f, 11.5f}));
}

TEST(KernelSpans, UsesTheSpansDeclaredByAKernelWhoseSpansAreNested) {
  int a[1] = {};
  int b[1] = {};
  int c[1] = {};
  const nested_with_declared_spans kernel{
      {1, device_span<int>{a, 1, span_owner{5, 1}}},
      {device_span<int>{b, 1, span_owner{5, 2}}, device_span<int>{c, 1, span_owner{5, 3}}}};
  const auto spans = detail::kernel_spans(kernel);
  ASSERT_EQ(spans.view().size(), 3u);
  EXPECT_EQ(spans.view()[0].data, a);
  EXPECT_EQ(spans.view()[2].data, c);
}

TEST(KernelSpans, UsesTheSpansDeclaredByAKernelWithABaseClass) {
  int a[1] = {};
  derived_with_declared_spans kernel{};
  kernel.output = device_span<int>{a, 1, span_owner{5, 1}};
  const auto spans = detail::kernel_spans(kernel);
  ASSERT_EQ(spans.view().size(), 1u);
  EXPECT_EQ(spans.view()[0].data, a);
}

TEST(KernelSpans, UsesTheSpansAKernelDeclaresWhenItIsNotAnAggregate) {
  float in[4] = {};
  float out[4] = {};
  const scaled_copy kernel{device_span<const float>{in, 4, span_owner{3, 9}},
                           device_span<float>{out, 4, span_owner{3, 10}}, 2.0f};
  const auto spans = detail::kernel_spans(kernel);
  ASSERT_EQ(spans.view().size(), 2u);
  EXPECT_EQ(spans.view()[0].data, in);
  EXPECT_EQ(spans.view()[1].data, out);
}

TEST(KernelSpans, ANonAggregateKernelThatDeclaresItsSpansRunsOnTheCpu) {
  auto client = client::cpu();
  auto in = client.create<float>({1, 2, 3, 4});
  auto out = client.empty<float>(4);
  client.launch(scaled_copy{in.view(), out.view(), 3.0f}, cube_count{1}, cube_dim{4});
  EXPECT_EQ(client.read(out), (std::vector<float>{3, 6, 9, 12}));
}

// ---------------------------------------------------------------------------------------------
// What client::launch hands a backend, seen through a backend that only records.

struct recorded_launch {
  std::string name;
  detail::launch_geometry geometry;
  std::vector<std::byte> kernel;
  std::size_t alignment;
  bool has_cpu_entry;
  const void* cuda_entry;
  std::vector<detail::span_ref> spans;
};

class recording_stream final : public detail::stream {
 public:
  void validate(const detail::launch_descriptor&) override {}
  void prepare(const detail::launch_descriptor&) override {}
  std::uint64_t submit(const detail::launch_descriptor& launch) override {
    const auto* bytes = static_cast<const std::byte*>(launch.kernel);
    launches.push_back(recorded_launch{
        std::string{launch.name}, launch.geometry,
        std::vector<std::byte>(bytes, bytes + launch.kernel_size), launch.kernel_alignment,
        launch.cpu_entry != nullptr, launch.cuda_entry,
        std::vector<detail::span_ref>(launch.spans.begin(), launch.spans.end())});
    return ++point_;
  }
  detail::profiled_submission submit_profiled(const detail::launch_descriptor& launch,
                                              launch_path::read_when) override {
    return detail::profiled_submission{submit(launch), std::nullopt, "recording only"};
  }
  bool record(const detail::launch_descriptor&) override { return false; }
  void wait(std::uint64_t) override {}
  std::uint64_t last_point() const noexcept override { return point_; }
  std::exception_ptr take_failure() noexcept override { return nullptr; }
  std::exception_ptr failure_through(std::uint64_t) const noexcept override { return nullptr; }
  void begin_capture() override {}
  std::unique_ptr<detail::recorded_graph> end_capture() override { return nullptr; }
  bool capturing() const noexcept override { return false; }

  std::vector<recorded_launch> launches;

 private:
  std::uint64_t point_ = 0;
};

class recording_device final : public detail::device {
 public:
  std::string_view backend() const noexcept override { return "recording"; }
  int index() const noexcept override { return 0; }
  std::string name() const override { return "recording"; }
  const detail::device_limits& limits() const noexcept override { return limits_; }
  void* allocate(std::size_t bytes, detail::stream&) override { return ::operator new(bytes); }
  void deallocate(void* memory, std::size_t, std::span<const detail::stream_point>) noexcept override {
    ::operator delete(memory);
  }
  void zero(void* memory, std::size_t bytes, detail::stream&) override {
    std::memset(memory, 0, bytes);
  }
  void copy_to_device(void* d, const void* s, std::size_t n, detail::stream&) override {
    std::memcpy(d, s, n);
  }
  void copy_to_host(void* d, const void* s, std::size_t n, detail::stream&) override {
    std::memcpy(d, s, n);
  }
  std::shared_ptr<detail::stream> create_stream() override {
    stream = std::make_shared<recording_stream>();
    return stream;
  }

  std::shared_ptr<recording_stream> stream;

 private:
  detail::device_limits limits_;
};

TEST(LaunchDescriptor, CarriesTheKernelsNameGridBytesAndSpans) {
  auto device = std::make_shared<recording_device>();
  const client recording{device};
  auto pinned = recording.pinned();
  auto x = pinned.create<float>({1, 2});
  auto y = pinned.empty<float>(2);
  const axpy kernel{2.5f, x.view(), y.view()};
  pinned.launch(kernel, cube_count{3u, 2u}, cube_dim{4u});

  ASSERT_EQ(device->stream->launches.size(), 1u);
  const auto& launch = device->stream->launches[0];
  EXPECT_EQ(launch.name, type_name<axpy>());
  EXPECT_EQ(launch.geometry.count, (cube_count{3u, 2u, 1u}));
  EXPECT_EQ(launch.geometry.dim, (cube_dim{4u, 1u, 1u}));
  ASSERT_EQ(launch.kernel.size(), sizeof(axpy));
  EXPECT_EQ(std::memcmp(launch.kernel.data(), &kernel, sizeof(axpy)), 0);
  EXPECT_EQ(launch.alignment, alignof(axpy));
  EXPECT_TRUE(launch.has_cpu_entry);
  ASSERT_EQ(launch.spans.size(), 2u);
  EXPECT_EQ(launch.spans[0].owner, x.owner());
  EXPECT_EQ(launch.spans[1].owner, y.owner());
}

TEST(LaunchDescriptor, CarriesNoCudaEntryFromAFileTheHostCompilerBuilt) {
  auto device = std::make_shared<recording_device>();
  auto pinned = client{device}.pinned();
  pinned.launch(axpy{}, cube_count{1}, cube_dim{1});
  ASSERT_EQ(device->stream->launches.size(), 1u);
  EXPECT_EQ(device->stream->launches[0].cuda_entry, nullptr);
}

/// One side of a collective, as a native kernel declares it.
struct exchange_side {
  static constexpr bool collective = true;
  void operator()(unit) const {}
};

/// A kernel someone else wrote, marked collective from outside.
struct their_exchange {
  void operator()(unit) const {}
};

}  // namespace

template <>
inline constexpr bool is_collective<their_exchange> = true;

namespace {

static_assert(is_collective<exchange_side>);
static_assert(is_collective<their_exchange>);
static_assert(!is_collective<axpy>, "a kernel is not a collective unless it says so");

TEST(LaunchInfo, SaysALaunchIsACollectiveWhenItsKernelTypeSaysSo) {
  struct collective_flags : launch_observer {
    void launched(std::string_view) override {}
    void launched_with(const launch_info& info) override {
      std::lock_guard lock{mutex};
      flags.push_back(info.collective);
    }
    std::mutex mutex;
    std::vector<bool> flags;
  };
  auto observer = std::make_shared<collective_flags>();
  const client cpu = client::cpu();
  {
    launch_observation watching{observer};
    cpu.launch(exchange_side{}, cube_count{1}, cube_dim{1});
    cpu.launch(their_exchange{}, cube_count{1}, cube_dim{1});
    cpu.launch(axpy{}, cube_count{1}, cube_dim{1});
  }
  cpu.sync();
  EXPECT_EQ(observer->flags, (std::vector<bool>{true, true, false}));
}

TEST(ClientConstruction, RejectsANullDevice) {
  EXPECT_THROW(client{std::shared_ptr<detail::device>{}}, std::invalid_argument);
}

}  // namespace
}  // namespace launchwatch
