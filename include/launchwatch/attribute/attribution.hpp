// The attribution observer: pairs every launch with what the issuing thread was doing, counts it,
// keeps its measurement, and hands the whole pass over as plain data.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string_view>
#include <utility>

#include <launchwatch/attribute/scope.hpp>
#include <launchwatch/observe.hpp>
#include <launchwatch/profile.hpp>
#include <launchwatch/report/pass_record.hpp>
#include <launchwatch/report/summary.hpp>

namespace launchwatch {

namespace detail {
struct recorder;
}

/// A clock an attribution stamps host instants with (launches, scope starts and ends).
///
/// A plain function pointer, not a std::function, because it is called on every launch and scope
/// while attributing. Tests inject one to get exact, repeatable numbers.
using attribution_clock = instant (*)() noexcept;

/// Where an attribution charges a launch from a thread that has no scope open.
enum class unscoped_launches {
  /// Outside every scope: the report's explicit row for what no scope claims.
  outside,
  /// To the scope path open on the one other thread that has a scope open at that moment, when
  /// exactly one has; outside otherwise. For work handed to a helper thread while its caller waits
  /// inside a scope: PyTorch's autograd engine runs the backward pass's CUDA kernels on a thread
  /// of its own while the calling thread waits in its `backward` range, and a library's worker
  /// pool does the same. With two or more threads in scopes there is no telling whose work it is,
  /// so the launch stays outside rather than being charged to a guess.
  sole_scoped_thread,
};

/// How an attribution collects.
struct attribution_options {
  /// What it asks the launch path to do with each launch's measurement.
  ///
  /// `deferred` (the default) keeps measurements unread until `collect`, so kernels run back to back
  /// and each one has its start and end on the device's clock: the pass as it really runs, with the
  /// device's idle time visible. `resolved` reads each one on the issuing thread, so kernels run one
  /// at a time and only their lengths are known (no device tracks in the trace). `none` counts and
  /// attributes launches without timing them, at the least cost.
  timing_request timing = timing_request::deferred;

  /// The clock for host instants; null means std::chrono::steady_clock. Must be the clock device
  /// timestamps are mapped onto, or host and device events will not line up.
  attribution_clock clock = nullptr;

  /// Launches to make room for up front, so the pass neither allocates nor takes a page fault
  /// while it runs: the storage is allocated and written once when the attribution is created
  /// (about 200 bytes a launch), so the operating system has handed over every page of it before
  /// the first launch. Without it, storage is added in chunks as the pass fills it, each chunk's
  /// pages faulting in as they are first written; either way it is reused after each `collect`.
  std::size_t reserve_launches = 0;

  /// Scope intervals to make room for up front, likewise (about 24 bytes an interval).
  std::size_t reserve_scopes = 0;

  /// Keep only the aggregate, for long runs: memory bounded by the distinct (scope path, kernel,
  /// stream) triples a thread launched, however many launches.
  ///
  /// Each thread's launches are folded into per-(scope path, kernel, stream) totals every 4,096
  /// launches: where the process may run on 4 cores or more, on a thread the attribution starts
  /// for this at its first fold, the launching thread only handing them over (a few pointer
  /// moves); elsewhere, and in a forked child, on the launching thread (with fewer cores the
  /// records' trips to another core cost it more than the fold). The fold reads their
  /// measurements (so it waits for their kernels), places them on the timeline through a reorder
  /// window of 4,096 kernels per stream and per device, and gives their storage back for reuse.
  /// When the fold thread falls more than two folds behind a launching thread (kernels that have
  /// not finished), the launching thread waits and folds them itself, so the launches waiting
  /// stay bounded. Scope intervals are not kept, except in a trace prefix (see
  /// `trace_prefix_events`). What it gives up: there is no pass_record of the whole pass, so the
  /// trace is of the prefix at most; read the pass with `collect_summary()` or `collect_bounded()`
  /// (`collect()` throws std::logic_error), and so far with `snapshot_summary()`. Idle time and
  /// overlap are exact unless a kernel's measurement reaches the timeline more than 4,096 kernels
  /// late (pass_summary::out_of_order_kernels counts those, and the tree says so). A launch whose
  /// measurement arrives after a collect is counted in that pass and its time in the next.
  bool aggregate_only = false;

  /// Aggregate-only: also keep the pass's beginning as a record for a trace, up to about this many
  /// trace events; 0 (the default) keeps none. `unlimited_trace_prefix` keeps the whole pass.
  ///
  /// Why: a long job's summary must stay bounded, but its first steps drawn in a trace are what a
  /// person opens to see how the work is laid out. The prefix is a stretch of the pass from its
  /// start: every launch and every scope interval while it has room, then nothing more (read it
  /// with `collect_bounded()`). A launch takes 4 events of room (its host slice, its kernel slice
  /// and the two ends of the arrow between them; a replayed graph node 1), a scope interval 1, so a
  /// trace written from the prefix has at most this many events, plus the scopes still open when it
  /// filled, which are kept too (at most the depth of each thread's scopes), so the trace shows the
  /// scopes its launches ran in. Launches in the prefix are folded into the summary like every
  /// other: the summary is the whole pass's, and its totals do not depend on this option. Memory:
  /// about 100 bytes a kept launch and 24 an interval, bounded by this cap, not by the pass.
  /// Cost per launch: while the prefix has room, an atomic update of the shared room (contended
  /// only while it has room) and, at the fold, one record appended (amortised allocation); once it
  /// is full, a relaxed load and a counter under the lock the launch already holds: nothing more
  /// than aggregate-only costs. A scope entered once it is full reads no clock at either end and
  /// takes no lock (an acquire load and a relaxed counter): its interval cannot be kept. Each
  /// `collect_bounded` or `collect_summary` starts the next pass with an empty prefix of the same
  /// size; a scope entered while the last pass's prefix was full that ends in that pass with room
  /// is kept from the pass's origin, where the pass's own part of it begins. Ignored without
  /// `aggregate_only`, where the whole pass is kept anyway.
  std::size_t trace_prefix_events = 0;

  /// Where a launch from a thread with no scope open goes (see unscoped_launches). Cost with
  /// `sole_scoped_thread`, while such an attribution lives: a launch from a thread with no scope,
  /// while exactly one thread is listed in scopes, takes a process-wide lock to read that thread's
  /// path (a relaxed load otherwise), and a thread entering its first
  /// scope or leaving its last takes one to list itself; a launch inside a scope and a nested scope
  /// cost what they did. A thread already in scopes when the attribution is made counts from its
  /// next first scope (as scopes entered before an attribution are not in its paths).
  unscoped_launches unscoped = unscoped_launches::outside;
};

/// `attribution_options::trace_prefix_events` for a prefix that never fills: the whole pass.
inline constexpr std::size_t unlimited_trace_prefix = static_cast<std::size_t>(-1);

/// A pass read by `attribution::collect_bounded()`: its summary, whole, and its beginning as a
/// record for a trace, with what the record left out.
///
/// Plain data. `trace_prefix` is a pass_record like `collect()` gives, of the prefix's launches
/// and scope intervals only (same origin and timing as the pass, threads named as `collect()`
/// names them, its own tables; its `lost` counts are zero: the pass's are in `summary.lost`).
/// Hand `left_out` to `trace_options::beyond_prefix` so the trace says what it does not show.
struct bounded_pass {
  /// The whole pass, every launch counted, as `collect_summary()` gives it.
  pass_summary summary;
  /// The pass's beginning (see attribution_options::trace_prefix_events); empty when no prefix
  /// was asked for.
  pass_record trace_prefix;
  /// What the pass had beyond `trace_prefix`.
  prefix_left_out left_out;
};

/// A launch observer that attributes every launch to the issuing thread's scope path.
///
/// At each `launched` it records the kernel, the thread's innermost scope, the stream and the host
/// instant; the measurement that follows on the same thread (unread under `deferred`, a length under
/// `resolved` or while the profiling logger reads every measurement) is paired with that launch.
/// While an attribution lives, every `scope` in the process records its path and interval (the
/// newest live attribution receives the intervals). Nothing is read or formatted during the pass;
/// `collect` reads the kept measurements afterwards and produces a `pass_record`.
///
/// Install it with a launch_observation; create it just before the pass and destroy it afterwards,
/// since scopes cost more while it lives. `attribute_pass` does all of that for one callable.
///
/// Thread safety: observer methods may run on many threads at once, and `collect` may run while
/// they do (launches it misses, and launches still waiting for their measurement, go to the next
/// pass). Cost per launch while installed: a thread-local lookup, a clock read and an uncontended
/// lock; no heap allocation once its storage has grown to the pass's size (see
/// `attribution_options::reserve_launches`).
class attribution final : public launch_observer, public graph_replay_observer {
 public:
  /// Starts recording: scopes entered from now on are part of launches' paths.
  explicit attribution(attribution_options options = {});
  /// Stops recording and frees its storage. Measurements never collected are dropped unread.
  ///
  /// A thread that recorded for it may keep a small handle on its log until the thread exits or
  /// works for newer attributions, but none of the pass's storage: that is freed here, whichever
  /// threads still run. Precondition: no other thread is in one of its methods.
  ~attribution() override;

  attribution(const attribution&) = delete;
  attribution& operator=(const attribution&) = delete;
  attribution(attribution&&) = delete;
  attribution& operator=(attribution&&) = delete;

  /// Records a launch reported by name only (no stream or grid known).
  void launched(std::string_view kernel) override;
  /// Records a launch with its stream, grid and dry-run flag.
  void launched_with(const launch_info& info) override;
  /// The timing asked for in the options; constant while installed, as the contract requires.
  timing_request timing() const override;
  /// Keeps `profile` unread, paired with the launch of `kernel` this thread reported last.
  void profiled(std::string_view kernel, profile_duration profile) override;
  /// Pairs a length with the launch of `kernel` this thread reported last.
  void timed(std::string_view kernel, std::chrono::nanoseconds length,
             timing_method method) override;
  /// Records a replayed graph node (cuda_graph_replays::per_node) as a launch with its device
  /// time, under the scope path its capture-time launch had (outside every scope when that launch
  /// was not seen by this attribution, or was forgotten: the newest 65,536 captured launches are
  /// kept). Replayed nodes are on a host thread of their own, "CUDA graph replays", with no host
  /// side: nothing was issued for them (launch_record::replayed).
  /// Cost: a lock shared with capturing launches, and an entry in the pass.
  void replayed(const replayed_node& node) override;

  /// Everything recorded since construction or the previous `collect`, with every kept
  /// measurement read, and starts the next pass.
  ///
  /// Reading blocks until the device has passed each measured kernel, so call it once the pass's
  /// work is issued (after the observation ends, typically). A measurement whose read throws (a
  /// kernel that faulted) or carries nothing is counted in `pass_record::lost` and its launch kept
  /// without timing, with one warning per collect. Scopes still open are not included.
  ///
  /// A launch another thread has reported but not yet handed the measurement of (it is submitting
  /// the kernel) is left for the next pass, so a collect never parts a launch from its measurement;
  /// that pass's origin is then no later than the launch. This holds only while this attribution
  /// is the installed observer and times launches: otherwise no measurement can arrive any more
  /// (one reaches only the installed observer, and only when it asked for timing), and such a
  /// launch is collected now, untimed. So is a launch recorded into a graph, whose profile is
  /// always refused.
  /// Thread safety: safe while launches are reported; calls to `collect` are serialised.
  pass_record collect();

  /// The pass's summary: `summarize(collect())`, or, under `aggregate_only`, the totals folded so
  /// far and the launches not yet folded, from memory bounded by the distinct (scope path, kernel,
  /// stream) triples. Starts the next pass like `collect`.
  ///
  /// Thread safety and blocking as `collect`.
  pass_summary collect_summary();

  /// The pass's summary, its trace prefix and what the prefix left out
  /// (attribution_options::trace_prefix_events), in one read, and starts the next pass.
  ///
  /// Under `aggregate_only` the summary comes from the folded totals (bounded memory, as
  /// `collect_summary()`), the prefix from what was kept while it had room; the origin of the next
  /// pass is chosen as `collect()` chooses it. Without `aggregate_only` it is `collect()` whole:
  /// the prefix is the pass, its summary `summarize(pass)`, nothing left out.
  /// Thread safety and blocking as `collect`.
  bounded_pass collect_bounded();

  /// The summary of everything recorded since construction or the previous collect, without
  /// starting the next pass: a later `collect_summary()` or `collect_bounded()` still has every
  /// launch. For snapshots of a long run (launchwatch run --snapshot-every).
  ///
  /// Requires `aggregate_only` (throws std::logic_error otherwise: a full record's measurements
  /// are read once, by `collect`). Folds each thread's launches not yet folded (as that thread
  /// would at its next 4,096th launch), so it reads their measurements: it may wait for the device
  /// to pass them, and a thread launching meanwhile waits for its log's lock. A launch caught
  /// between its report and its measurement stays unfolded, as `collect_summary` leaves it, and is
  /// in the next snapshot. The timeline's unions are copied and finished, never emptied. Neither
  /// the prefix nor the pass's origin changes.
  /// Thread safety: safe while launches are reported; serialised with `collect` and the other
  /// collects. Cost: a copy of every (scope path, kernel, stream) total and of the timeline's
  /// reorder windows; nothing on the launch path.
  pass_summary snapshot_summary();

 private:
  /// Whether this attribution is the installed observer now (launch_observation::is_installed: an
  /// attribution does not hold the observation that installs it). May be stale once it returns.
  bool installed() const;
  // Whether a launch another thread reported may still be handed its measurement: this
  // attribution asked for timing and is the installed observer (collect and collect_summary keep
  // such a launch for the next pass).
  bool measurements_may_come() const;

  std::unique_ptr<detail::recorder> recorder_;
};

/// Runs `fn` under a new attribution, installed for exactly that call, and returns its pass.
///
/// The usual way to attribute one piece of work: `auto pass = attribute_pass([&] { model(x); });`.
/// While `fn` runs the attribution is the process's only observer (it replaces any installed one
/// and puts it back after). Exceptions from `fn` propagate; what was recorded is then dropped.
template <class F>
pass_record attribute_pass(F&& fn, attribution_options options = {}) {
  auto observer = std::make_shared<attribution>(options);
  {
    launch_observation watching{observer};
    std::forward<F>(fn)();
  }
  return observer->collect();
}

}  // namespace launchwatch
