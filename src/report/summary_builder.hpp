// Building a pass_summary from groups of launches and kernels' places on the timeline: the one
// aggregation behind `summarize(pass)` (a group per launch) and an aggregate-only attribution (a
// group per scope, kernel and stream, whatever the number of launches).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <launchwatch/report/pass_record.hpp>
#include <launchwatch/report/summary.hpp>

namespace launchwatch::detail {

/// Launches of one kernel in one scope on one stream, counted the way a summary counts them.
struct launch_group {
  /// Index in the tables' scopes; none outside any scope.
  std::optional<std::uint32_t> scope;
  /// Index in the tables' kernels and streams.
  std::uint32_t kernel = 0;
  std::uint32_t stream = 0;
  /// When the first of them was issued: rows are shown in this order.
  instant first_issued;
  std::size_t launches = 0;
  /// Measured and not dry runs.
  std::size_t timed_launches = 0;
  std::size_t dry_run_launches = 0;
  std::size_t captured_launches = 0;
  /// The timed launches' time, and the part of it known only by length.
  std::chrono::nanoseconds time{0};
  std::chrono::nanoseconds unplaced{0};
  /// The shortest and the longest of the timed launches' times; none while no launch is timed.
  std::optional<std::chrono::nanoseconds> min_time;
  std::optional<std::chrono::nanoseconds> max_time;
  timing_methods methods;
  measurement_kinds measurements;

  /// Adds one launch (its scope, kernel and stream are the caller's business).
  void add(const launch_record& launch);
  /// Adds another group's counts; the earlier first issue wins.
  void merge(const launch_group& other);
};

/// The union of intervals added in any order: how long they covered, from the first start to the
/// last end, and how much of their length was covered more than once.
///
/// Intervals wait in a reorder buffer of `window` entries, earliest start first; when it is full
/// the earliest leaves it and joins the running union. Memory is bounded by `window` however many
/// intervals are added. The result is exact when no interval arrives more than `window` intervals
/// after one that starts later (always, for an unbounded window). An interval that does arrive
/// later than that is merged with the run of intervals it came after and counted in
/// `out_of_order()`, which then says that idle time and overlap are estimates.
///
/// The buffer is two parts that together leave in the order one priority queue would (earliest
/// first; equal intervals are indistinguishable): a FIFO of the intervals that arrived in order
/// (each no earlier than the one queued before it), and a heap of the rest. Kernels mostly reach
/// a union in time order (a stream runs its kernels one after another), so most adds are an append
/// and most leaves a pop from the front, where a heap alone costs two O(log window) sifts each.
/// With a bounded window both parts hold up to `window + 1` intervals, and the heap's room grows
/// with the FIFO's, so once the FIFO has grown to the window the heap allocates nothing either.
class interval_union {
 public:
  static constexpr std::size_t unbounded = std::numeric_limits<std::size_t>::max();
  explicit interval_union(std::size_t window = unbounded) : window_{window} {}

  /// Adds one interval. Cost: O(1) when it starts no earlier than the last one that arrived in
  /// order (ties broken by end), O(log window) otherwise; an allocation only while the buffer grows
  /// to the most it has held.
  void add(instant start, instant end);
  /// Empties the reorder buffer into the union. Call before reading the results.
  void finish();

  std::chrono::nanoseconds span() const;
  std::chrono::nanoseconds busy() const { return busy_ + run_length(); }
  std::chrono::nanoseconds length_sum() const { return length_sum_; }
  std::size_t out_of_order() const { return out_of_order_; }

 private:
  using interval = std::pair<instant, instant>;

  /// A FIFO of intervals in a ring that doubles when full, up to a limit (never shrinks, so a
  /// union allocates nothing once grown).
  class ring {
   public:
    bool empty() const noexcept { return size_ == 0; }
    std::size_t size() const noexcept { return size_; }
    std::size_t capacity() const noexcept { return slots_.size(); }
    const interval& front() const noexcept { return slots_[head_]; }
    const interval& back() const noexcept { return slots_[at(size_ - 1)]; }
    /// Appends `next`; when full, first grows to twice its room but no more than `limit` (which
    /// the caller keeps above its size). Returns whether it grew.
    bool push_back(const interval& next, std::size_t limit);
    void pop_front() noexcept {
      head_ = at(1);
      --size_;
    }

   private:
    std::size_t at(std::size_t i) const noexcept {
      const std::size_t slot = head_ + i;
      return slot >= slots_.size() ? slot - slots_.size() : slot;
    }
    std::vector<interval> slots_;
    std::size_t head_ = 0;
    std::size_t size_ = 0;
  };

  void join(const interval& next);
  /// Moves the earliest waiting interval (from either part of the buffer) into the union.
  void join_earliest();
  std::chrono::nanoseconds run_length() const;

  std::size_t window_;
  /// Waiting intervals that arrived in order: sorted, earliest at the front.
  ring in_order_;
  /// Waiting intervals that arrived earlier than the back of `in_order_`: a min-heap
  /// (std::push_heap with std::greater).
  std::vector<interval> late_;
  std::optional<interval> run_;
  std::optional<instant> first_;
  instant last_{};
  std::chrono::nanoseconds busy_{0};
  std::chrono::nanoseconds length_sum_{0};
  std::size_t out_of_order_ = 0;
};

/// Identifies a stream or a device across passes, whatever its index in one pass's tables.
using stream_key = std::tuple<std::string, int, std::uint64_t>;
using device_key = std::tuple<std::string, int>;

/// Orders stream and device keys with their backend's name compared as a string_view, so a lookup
/// can pass the name without building a std::string. (std::less<> would compare a tuple of
/// string_view with a tuple of string through tuple's own operators, which not every standard
/// library and compiler pair accepts: clang 14 with libstdc++ 12 does not.)
struct key_less {
  using is_transparent = void;
  template <class A, class B>
  bool operator()(const A& a, const B& b) const {
    return viewed(a) < viewed(b);
  }

 private:
  static std::string_view view_of(const std::string& s) noexcept { return s; }
  static std::string_view view_of(std::string_view s) noexcept { return s; }
  template <class T>
  static const T& view_of(const T& value) noexcept {
    return value;
  }
  template <class... T>
  static auto viewed(const std::tuple<T...>& key) {
    return std::apply([](const auto&... field) { return std::tuple{view_of(field)...}; }, key);
  }
};

/// Kernels' places on the timeline, united per stream and per device.
class timeline {
 public:
  explicit timeline(std::size_t window = interval_union::unbounded) : window_{window} {}
  // The last unions used are remembered by address, which a copy would share with the original.
  timeline(const timeline&) = delete;
  timeline& operator=(const timeline&) = delete;

  /// Places a kernel on its stream's and its device's union. Cost: one interval_union::add while
  /// its device has had one stream (the device's union is then the stream's, made when take() or
  /// snapshot() asks for it or a second stream comes), two after; and two map lookups unless the
  /// kernel is on the stream (and so the device) of the one before it.
  void add(const stream_info& stream, instant start, instant end);
  void add(std::string_view backend, int device, std::uint64_t stream, instant start, instant end);
  /// Finishes every union; the timeline reads as empty afterwards for the next pass.
  std::pair<std::map<stream_key, interval_union, key_less>,
            std::map<device_key, interval_union, key_less>>
  take();
  /// The unions as `take()` would give them, finished, leaving this timeline as it was: for a
  /// summary of the pass so far that does not start the next one (attribution::snapshot_summary).
  /// Cost: a copy of every union, reorder windows included (up to `window` intervals each).
  std::pair<std::map<stream_key, interval_union, key_less>,
            std::map<device_key, interval_union, key_less>>
  snapshot() const;

 private:
  /// The stream the last kernel was placed on, and its stream's and device's unions (map nodes,
  /// whose addresses hold until take() hands the maps over): kernels come in runs on one stream.
  /// `backend` views the key held in the stream's node. `device_union` is null while the device
  /// has had only this stream.
  struct last_stream {
    std::string_view backend;
    int device = 0;
    std::uint64_t stream = 0;
    interval_union* stream_union = nullptr;
    interval_union* device_union = nullptr;
  };

  /// The union a kernel on `stream_union`'s stream also goes to for its device: the device's own
  /// (in devices_, made here from its first stream's when this is its second), or null while this
  /// stream is the device's only one (sole_streams_ then names it).
  interval_union* device_union_of(std::string_view backend, int device,
                                  interval_union& stream_union);
  /// `devices` with the unions of the devices that had one stream added: copies of their stream's.
  void add_sole_streams(std::map<device_key, interval_union, key_less>& devices) const;

  std::size_t window_;
  std::map<stream_key, interval_union, key_less> streams_;
  /// The unions of the devices that have had more than one stream.
  std::map<device_key, interval_union, key_less> devices_;
  /// The devices that have had one stream, and that stream's union: the device's own would get
  /// every interval the stream's gets, so it is made only when needed.
  std::map<device_key, const interval_union*, key_less> sole_streams_;
  last_stream last_;
};

/// Assembles a pass_summary from groups over one set of tables.
class summary_builder {
 public:
  /// `tables` supplies the kernels, scopes and streams the groups index (its launches are not
  /// read); it must outlive the builder. Throws std::invalid_argument when a scope's parent does
  /// not come before it.
  summary_builder(const pass_record& tables);

  void add(const launch_group& group);

  /// The summary. `unions` gives each stream's and device's kernels on the timeline (from a
  /// timeline's take()); streams and devices without one had no placed kernels.
  pass_summary finish(const lost_measurements& lost, std::size_t host_threads,
                      const std::map<stream_key, interval_union, key_less>& stream_unions,
                      const std::map<device_key, interval_union, key_less>& device_unions);

 private:
  /// Where a row goes among its siblings: its first issue, then the order rows were made in.
  using issue_key = std::pair<instant, std::uint64_t>;
  struct row {
    summary_node node;
    std::optional<issue_key> first;
  };
  struct scope_rows {
    row self;
    std::map<std::uint32_t, row> kernels;
    std::vector<std::uint32_t> child_scopes;
  };
  void add_to(row& r, const launch_group& group, bool own_time);
  summary_node assemble(std::uint32_t scope);
  static std::vector<summary_node> in_issue_order(
      std::vector<std::pair<issue_key, summary_node>> rows);

  const pass_record& tables_;
  pass_summary summary_;
  std::vector<scope_rows> scopes_;
  std::map<std::uint32_t, row> outside_;
  std::uint64_t next_order_ = 0;
};

}  // namespace launchwatch::detail
