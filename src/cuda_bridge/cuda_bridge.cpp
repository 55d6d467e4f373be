// launchwatch::cuda_bridge: the public face of the engine (bridge_engine.hpp), shared by every
// bridge alive at once, since CUPTI has one subscriber per process.
#include <launchwatch/cuda_bridge.hpp>

#include <mutex>

#include "bridge_engine.hpp"
#include "live_bridge.hpp"

namespace launchwatch {
namespace {

// Construction and destruction are serialised here, so a bridge made while the last one is torn
// down waits for CUPTI to be given back rather than finding it still held.
std::mutex bridges_mutex;
std::weak_ptr<detail::cuda_bridge_engine> shared_engine;

}  // namespace

cuda_bridge::cuda_bridge(cuda_bridge_options options) {
  std::lock_guard lock{bridges_mutex};
  if (auto running = shared_engine.lock()) {
    engine_ = std::move(running);
    return;
  }
  engine_ = std::make_shared<detail::cuda_bridge_engine>(options);
  shared_engine = engine_;
}

cuda_bridge::~cuda_bridge() {
  std::lock_guard lock{bridges_mutex};
  engine_.reset();
}

void cuda_bridge::flush() { engine_->flush(); }

cuda_bridge_stats cuda_bridge::stats() const noexcept { return engine_->stats(); }

bool cuda_bridge::built() noexcept { return true; }

void detail::cuda_bridge::close_live_bridge_records() noexcept {
  std::lock_guard lock{bridges_mutex};
  if (auto running = shared_engine.lock()) running->close_records();
}

bool detail::cuda_bridge::lend_live_bridge_records() noexcept {
  std::lock_guard lock{bridges_mutex};
  const auto running = shared_engine.lock();
  if (running) running->lend_records();
  return running != nullptr;
}

bool detail::cuda_bridge::take_live_bridge_records_back() noexcept {
  std::lock_guard lock{bridges_mutex};
  const auto running = shared_engine.lock();
  return running && running->take_records_back();
}

detail::cuda_bridge::graph_table_sizes detail::cuda_bridge::live_bridge_graph_tables() noexcept {
  std::lock_guard lock{bridges_mutex};
  const auto running = shared_engine.lock();
  return running ? running->graph_tables() : graph_table_sizes{};
}

}  // namespace launchwatch
