// Counting launches under a names-only observer.

#include <launchwatch/attribute/count.hpp>

#include <launchwatch/kernel_name.hpp>

#include <mutex>
#include <ostream>
#include <stdexcept>
#include <unordered_map>

namespace launchwatch {

namespace detail {

/// Counts launches by kernel name. Names only, no timing, so the launches it counts run as they
/// would unobserved. Kernel names outlive every launch, so they are kept as views until counts()
/// copies them.
class launch_counter final : public launch_observer {
 public:
  void launched(std::string_view kernel) override {
    std::lock_guard lock{mutex_};
    const auto [found, added] = index_.try_emplace(kernel, counts_.size());
    if (added) counts_.emplace_back(kernel, 0);
    ++counts_[found->second].second;
  }

  launch_counts counts() const {
    std::vector<launch_counts::entry> entries;
    {
      std::lock_guard lock{mutex_};
      entries.reserve(counts_.size());
      for (const auto& [kernel, count] : counts_) {
        entries.push_back(launch_counts::entry{std::string{kernel}, count});
      }
    }
    return launch_counts{std::move(entries)};
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string_view, std::size_t> index_;
  std::vector<std::pair<std::string_view, std::size_t>> counts_;
};

}  // namespace detail

namespace {

bool names_kernel(std::string_view name, const std::string& kernel) {
  return name == kernel || name == format_kernel_name(kernel, name_format::balanced) ||
         name == format_kernel_name(kernel, name_format::brief);
}

}  // namespace

launch_counts::launch_counts(std::vector<entry> kernels) : kernels_{std::move(kernels)} {
  for (std::size_t i = 0; i < kernels_.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (kernels_[i].kernel == kernels_[j].kernel) {
        throw std::invalid_argument{"launch_counts: kernel `" + kernels_[i].kernel +
                                    "` is listed twice; give each kernel once, with its total"};
      }
    }
    total_ += kernels_[i].count;
  }
}

std::size_t launch_counts::of(std::string_view name) const {
  std::size_t count = 0;
  for (const auto& e : kernels_) {
    if (names_kernel(name, e.kernel)) count += e.count;
  }
  return count;
}

std::map<std::string, std::size_t> launch_counts::by_brief_name() const {
  std::map<std::string, std::size_t> counts;
  for (const auto& e : kernels_) counts[format_kernel_name(e.kernel, name_format::brief)] += e.count;
  return counts;
}

std::ostream& operator<<(std::ostream& out, const launch_counts& counts) {
  if (counts.total() == 0) return out << "launched nothing";
  out << "launched " << counts.total() << (counts.total() == 1 ? " kernel: " : " kernels: ");
  const char* separator = "";
  for (const auto& e : counts.kernels()) {
    out << separator << format_kernel_name(e.kernel, name_format::balanced) << " x" << e.count;
    separator = ", ";
  }
  return out;
}

launch_counting::launch_counting()
    : counter_{std::make_shared<detail::launch_counter>()}, observation_{counter_} {}

launch_counting::~launch_counting() = default;

launch_counts launch_counting::counts() const { return counter_->counts(); }

}  // namespace launchwatch
