// Folded stacks: `scope;scope;kernel <ns>` a line, for flamegraph.pl and speedscope.

#include <launchwatch/report/folded.hpp>

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace launchwatch {
namespace {

/// A frame's text with the format's separators taken out: `;` ends a frame and a line break ends
/// a line, so either inside a name would split it.
std::string frame(std::string_view name) {
  std::string text{name};
  for (char& c : text) {
    if (c == ';') c = ':';
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (text.empty()) text = "(unnamed)";
  return text;
}

void add_lines(const std::vector<summary_node>& children, const std::string& stack,
               const folded_options& options, std::map<std::string, std::int64_t>& lines) {
  for (const auto& child : children) {
    if (child.timed_launches == 0 || child.total.count() <= 0) continue;
    if (child.kind == summary_node::node_kind::kernel) {
      const auto name = frame(format_kernel_name(child.name, options.kernel_names));
      // Kernels that format alike under one scope are one frame: their times add up.
      lines[stack.empty() ? name : stack + ";" + name] += child.total.count();
    } else {
      add_lines(child.children, stack.empty() ? frame(child.name) : stack + ";" + frame(child.name),
                options, lines);
    }
  }
}

}  // namespace

folded_writer::folded_writer(const folded_options& options)
    : report_writer{"folded", default_file_name}, options_{options} {}

void folded_writer::do_write(std::ostream& out, const pass_summary& summary) {
  const auto& options = options_;
  std::map<std::string, std::int64_t> lines;
  add_lines(summary.scopes, "", options, lines);
  add_lines(summary.outside.children, "", options, lines);
  // Per device, as the tree's default 100%: time the device ran nothing on any of its streams.
  if (options.include_idle && summary.device_idle.count() > 0) {
    lines["[device idle]"] += summary.device_idle.count();
  }
  for (const auto& [stack, ns] : lines) out << stack << ' ' << ns << '\n';
}

void write_folded(std::ostream& out, const pass_summary& summary, const folded_options& options) {
  folded_writer{options}.write(out, summary);
}

}  // namespace launchwatch
