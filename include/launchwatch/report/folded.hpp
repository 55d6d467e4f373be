// Folded stacks, for flame graphs (flamegraph.pl, speedscope): a pass's device time by scope path
// and kernel, one line each.
#pragma once

#include <iosfwd>
#include <string_view>

#include <launchwatch/kernel_name.hpp>
#include <launchwatch/report/report_writer.hpp>
#include <launchwatch/report/summary.hpp>

namespace launchwatch {

/// How folded stacks are written.
struct folded_options {
  /// How much of each kernel's name is the leaf frame.
  name_format kernel_names = name_format::balanced;
  /// Whether device idle time (per device, its streams united) is written as a `[device idle]`
  /// frame, so the graph's width is the whole device window like the tree's total.
  bool include_idle = true;
};

/// Folded stacks (`folded`, file `flame.folded`), one line per scope path and kernel:
/// `scope;scope;kernel <ns>`, device nanoseconds as the count, lines sorted. flamegraph.pl and
/// speedscope read it. Kernels launched outside any scope are a single frame; untimed rows are
/// left out (a zero-width frame draws nothing). `;` in a name is written `:`, and a line break as a
/// space, since both end a frame or a line in this format.
class folded_writer final : public report_writer<pass_summary> {
 public:
  /// The file a report folder gives folded stacks (report_files).
  static constexpr std::string_view default_file_name = "flame.folded";

  explicit folded_writer(const folded_options& options = {});

 protected:
  void do_write(std::ostream& out, const pass_summary& summary) override;

 private:
  folded_options options_;
};

/// Writes `summary` as folded stacks (folded_writer). Thread safety: reads only its arguments.
void write_folded(std::ostream& out, const pass_summary& summary,
                  const folded_options& options = {});

}  // namespace launchwatch
