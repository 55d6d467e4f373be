// What the runtime keeps for a capture window when a backend refuses to end it (fault table row
// 5). CUDA refuses to end a capture on a thread other than the one that began it and leaves the
// window open; the CPU backend ends it from any thread, so these tests run the CPU backend behind
// a stream that refuses the way CUDA does.

#include <launchwatch/runtime/client.hpp>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>

#include <gtest/gtest.h>

#include "backend/cpu/cpu_device.hpp"
#include "conformance/conformance_kernels.hpp"
#include "runtime/backend.hpp"

namespace launchwatch {
namespace {

/// A graph recorded by `inner`, replayed there whatever stream the runtime names.
class replayed_on_inner final : public detail::recorded_graph {
 public:
  replayed_on_inner(std::shared_ptr<detail::stream> inner,
                    std::unique_ptr<detail::recorded_graph> graph)
      : inner_{std::move(inner)}, graph_{std::move(graph)} {}
  std::size_t size() const noexcept override { return graph_->size(); }
  std::uint64_t replay(detail::stream&) override { return graph_->replay(*inner_); }

 private:
  std::shared_ptr<detail::stream> inner_;
  std::unique_ptr<detail::recorded_graph> graph_;
};

/// A CPU stream that, like a CUDA stream, refuses to end a capture on another thread than the one
/// that began it, and leaves the window open.
class ends_capture_on_its_thread final : public detail::stream {
 public:
  explicit ends_capture_on_its_thread(std::shared_ptr<detail::stream> inner)
      : inner_{std::move(inner)} {}

  void validate(const detail::launch_descriptor& launch) override { inner_->validate(launch); }
  void prepare(const detail::launch_descriptor& launch) override { inner_->prepare(launch); }
  std::uint64_t submit(const detail::launch_descriptor& launch) override {
    return inner_->submit(launch);
  }
  detail::profiled_submission submit_profiled(const detail::launch_descriptor& launch,
                                              launch_path::read_when when) override {
    return inner_->submit_profiled(launch, when);
  }
  bool record(const detail::launch_descriptor& launch) override { return inner_->record(launch); }
  void wait(std::uint64_t point) override { inner_->wait(point); }
  std::uint64_t last_point() const noexcept override { return inner_->last_point(); }
  bool passed(std::uint64_t point) const noexcept override { return inner_->passed(point); }
  std::exception_ptr take_failure() noexcept override { return inner_->take_failure(); }
  std::exception_ptr failure_through(std::uint64_t point) const noexcept override {
    return inner_->failure_through(point);
  }
  void begin_capture() override {
    inner_->begin_capture();
    began_on_ = std::this_thread::get_id();
  }
  std::unique_ptr<detail::recorded_graph> end_capture() override {
    if (inner_->capturing() && std::this_thread::get_id() != began_on_) {
      throw capture_error{"a capture must end on the thread that began it"};
    }
    return std::make_unique<replayed_on_inner>(inner_, inner_->end_capture());
  }
  bool capturing() const noexcept override { return inner_->capturing(); }

 private:
  std::shared_ptr<detail::stream> inner_;
  std::thread::id began_on_;
};

/// A CPU device whose streams are ends_capture_on_its_thread.
class device_ending_captures_on_their_thread final : public detail::device {
 public:
  std::string_view backend() const noexcept override { return inner_->backend(); }
  int index() const noexcept override { return inner_->index(); }
  std::string name() const override { return inner_->name(); }
  const detail::device_limits& limits() const noexcept override { return inner_->limits(); }
  void* allocate(std::size_t bytes, detail::stream& on) override {
    return inner_->allocate(bytes, on);
  }
  void deallocate(void* memory, std::size_t bytes,
                  std::span<const detail::stream_point> after) noexcept override {
    inner_->deallocate(memory, bytes, after);
  }
  void zero(void* memory, std::size_t bytes, detail::stream& on) override {
    inner_->zero(memory, bytes, on);
  }
  void copy_to_device(void* destination, const void* source, std::size_t bytes,
                      detail::stream& on) override {
    inner_->copy_to_device(destination, source, bytes, on);
  }
  void copy_to_host(void* destination, const void* source, std::size_t bytes,
                    detail::stream& on) override {
    inner_->copy_to_host(destination, source, bytes, on);
  }
  std::shared_ptr<detail::stream> create_stream() override {
    return std::make_shared<ends_capture_on_its_thread>(inner_->create_stream());
  }

 private:
  std::shared_ptr<detail::cpu_device> inner_ = std::make_shared<detail::cpu_device>(7);
};

using conformance::fill;

TEST(Capture, AnEndRefusedWithTheWindowStillOpenLeavesTheWindowItsBuffers) {
  const client pinned =
      client{std::make_shared<device_ending_captures_on_their_thread>()}.pinned();
  std::optional<buffer<int>> scratch{pinned.empty<int>(8)};
  const auto view = scratch->view();
  pinned.begin_capture();
  pinned.launch(fill{view, 1}, cube_count{1}, cube_dim{8});
  scratch.reset();  // only the window keeps the buffer now
  std::thread{[&] { EXPECT_THROW((void)pinned.end_capture(), capture_error); }}.join();
  ASSERT_TRUE(pinned.capturing()) << "the refused end closed the window";
  const graph recorded = pinned.end_capture();
  EXPECT_EQ(recorded.size(), 1u);
  // The graph holds the buffer: a launch on its span is accepted, and the replay writes memory
  // that is still allocated.
  EXPECT_NO_THROW(pinned.launch(fill{view, 2}, cube_count{1}, cube_dim{8}))
      << "the refused end let go of a buffer the window's launch uses";
  recorded.replay();
  EXPECT_NO_THROW(pinned.sync());
}

}  // namespace
}  // namespace launchwatch
