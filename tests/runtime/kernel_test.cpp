// Kernels: how a launch finds the buffers a kernel references, and what it hands a backend.

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
  detail::profiled_submission submit_profiled(const detail::launch_descriptor& launch) override {
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

TEST(ClientConstruction, RejectsANullDevice) {
  EXPECT_THROW(client{std::shared_ptr<detail::device>{}}, std::invalid_argument);
}

}  // namespace
}  // namespace launchwatch
