// The JSON summary: written for programs and regression tests, read back for `launchwatch report`.

#include <launchwatch/report/summary_json.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <istream>
#include <limits>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

namespace launchwatch {
namespace {

using ordered_json = nlohmann::ordered_json;
using json = nlohmann::json;
constexpr const char* format_tag = "launchwatch-summary";

ordered_json methods_json(timing_methods methods) {
  auto list = ordered_json::array();
  if (methods.device) list.push_back("device");
  if (methods.system) list.push_back("system");
  return list;
}

ordered_json measurements_json(const measurement_kinds& kinds) {
  ordered_json j;
  j["device_stamped"] = kinds.device_stamped;
  j["device_lengths"] = kinds.device_lengths;
  j["system_stamped"] = kinds.system_stamped;
  j["system_lengths"] = kinds.system_lengths;
  return j;
}

ordered_json lost_json(const lost_measurements& lost) {
  ordered_json j;
  j["empty"] = lost.empty;
  j["failed"] = lost.failed;
  j["unpaired"] = lost.unpaired;
  return j;
}

ordered_json node_json(const summary_node& node) {
  ordered_json j;
  j["kind"] = node.kind == summary_node::node_kind::scope ? "scope" : "kernel";
  j["name"] = node.name;
  j["launches"] = node.launches;
  j["timed_launches"] = node.timed_launches;
  j["dry_run_launches"] = node.dry_run_launches;
  j["self_ns"] = node.self.count();
  j["total_ns"] = node.total.count();
  if (node.min_time) j["min_ns"] = node.min_time->count();
  if (node.max_time) j["max_ns"] = node.max_time->count();
  j["methods"] = methods_json(node.methods);
  if (node.kind == summary_node::node_kind::scope) {
    auto children = ordered_json::array();
    for (const auto& child : node.children) children.push_back(node_json(child));
    j["children"] = std::move(children);
  }
  return j;
}

/// The fields a stream and a device share: their launches and how their window was spent.
template <class Window>
void add_window_fields(ordered_json& j, const Window& w) {
  j["launches"] = w.launches;
  j["timed_launches"] = w.timed_launches;
  j["window_ns"] = w.window.count();
  j["kernel_ns"] = w.kernel_time.count();
  j["idle_ns"] = w.idle.count();
  j["overlap_ns"] = w.overlap.count();
  j["unplaced_ns"] = w.unplaced.count();
}

ordered_json stream_json(const stream_summary& stream) {
  ordered_json j;
  if (!stream.process.empty()) j["process"] = stream.process;
  j["backend"] = stream.stream.backend;
  j["device"] = stream.stream.device;
  j["stream"] = stream.stream.stream;
  add_window_fields(j, stream);
  return j;
}

ordered_json device_json(const device_summary& device) {
  ordered_json j;
  if (!device.process.empty()) j["process"] = device.process;
  j["backend"] = device.backend;
  j["device"] = device.device;
  j["streams"] = device.streams;
  add_window_fields(j, device);
  return j;
}

/// Reads one summary, saying exactly where and what was wrong when it cannot.
class summary_reader {
 public:
  explicit summary_reader(std::string_view source) : source_{source} {}

  pass_summary read(const json& root) {
    if (!root.is_object()) fail("", "expected a JSON object, found " + describe(root));
    const auto& format = field(root, "", "format");
    if (!format.is_string() || format.get<std::string>() != format_tag) {
      throw summary_error{std::string{source_} + " is not a launchwatch summary: its \"format\" is " +
                          format.dump() + ", not \"" + format_tag +
                          "\". Pass a summary.json written by launchwatch (write_summary_json)."};
    }
    const auto version = integer(root, "", "version");
    if (version > summary_format_version) {
      throw summary_error{std::string{source_} + " was written by a newer launchwatch (summary " +
                          "format version " + std::to_string(version) + "; this build reads up to " +
                          std::to_string(summary_format_version) +
                          "). Update launchwatch to read it."};
    }
    if (version < 1) fail("/version", "expected a version of 1 or more, found " + std::to_string(version));
    if (version < summary_format_version) {
      throw summary_error{std::string{source_} + " was written by an older launchwatch (summary " +
                          "format version " + std::to_string(version) + "; this build reads version " +
                          std::to_string(summary_format_version) +
                          ", which records how each kernel was measured, each row's dry runs and "
                          "each device's idle time). "
                          "Run the pass again and write it again (write_summary_json, or "
                          "`launchwatch demo`)."};
    }

    pass_summary summary;
    summary.timing = timing(root, "", "timing");
    summary.methods = methods(root, "", "methods");
    const auto& measurements = object(root, "", "measurements");
    summary.measurements.device_stamped = count(measurements, "/measurements", "device_stamped");
    summary.measurements.device_lengths = count(measurements, "/measurements", "device_lengths");
    summary.measurements.system_stamped = count(measurements, "/measurements", "system_stamped");
    summary.measurements.system_lengths = count(measurements, "/measurements", "system_lengths");
    summary.launches = count(root, "", "launches");
    summary.timed_launches = count(root, "", "timed_launches");
    summary.dry_run_launches = count(root, "", "dry_run_launches");
    summary.captured_launches = count(root, "", "captured_launches");
    summary.host_threads = count(root, "", "host_threads");
    const auto& lost = object(root, "", "lost");
    summary.lost.empty = count(lost, "/lost", "empty");
    summary.lost.failed = count(lost, "/lost", "failed");
    summary.lost.unpaired = count(lost, "/lost", "unpaired");
    summary.window = duration(root, "", "window_ns");
    summary.kernel_time = duration(root, "", "kernel_ns");
    summary.idle = duration(root, "", "idle_ns");
    summary.overlap = duration(root, "", "overlap_ns");
    summary.unplaced = duration(root, "", "unplaced_ns");
    const auto& scopes = array(root, "", "scopes");
    for (std::size_t i = 0; i < scopes.size(); ++i) {
      summary.scopes.push_back(node(scopes[i], "/scopes/" + std::to_string(i), 0));
    }
    summary.outside = node(object(root, "", "outside_scopes"), "/outside_scopes", 0);
    const auto& streams = array(root, "", "streams");
    for (std::size_t i = 0; i < streams.size(); ++i) {
      summary.streams.push_back(stream(streams[i], "/streams/" + std::to_string(i)));
    }
    summary.device_window = duration(root, "", "device_window_ns");
    summary.device_idle = duration(root, "", "device_idle_ns");
    summary.device_overlap = duration(root, "", "device_overlap_ns");
    const auto& devices = array(root, "", "devices");
    for (std::size_t i = 0; i < devices.size(); ++i) {
      summary.devices.push_back(device(devices[i], "/devices/" + std::to_string(i)));
    }
    summary.out_of_order_kernels = count(root, "", "out_of_order_kernels");
    summary.process = optional_text(root, "", "process");
    return summary;
  }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw summary_error{std::string{source_} + ": " + (where.empty() ? "/" : where) + ": " + what +
                        ". The file is not a summary launchwatch wrote, or was edited; write it "
                        "again (write_summary_json, or `launchwatch demo`)."};
  }

  static std::string describe(const json& value) {
    std::string text = value.dump();
    if (text.size() > 40) text = text.substr(0, 37) + "...";
    return text + " (" + value.type_name() + ")";
  }

  const json& field(const json& object, const std::string& where, const char* key) const {
    const auto found = object.find(key);
    if (found == object.end()) fail(where + "/" + key, "this field is missing");
    return *found;
  }

  const json& object(const json& parent, const std::string& where, const char* key) const {
    const auto& value = field(parent, where, key);
    if (!value.is_object()) fail(where + "/" + key, "expected an object, found " + describe(value));
    return value;
  }

  const json& array(const json& parent, const std::string& where, const char* key) const {
    const auto& value = field(parent, where, key);
    if (!value.is_array()) fail(where + "/" + key, "expected an array, found " + describe(value));
    return value;
  }

  std::int64_t integer(const json& parent, const std::string& where, const char* key) const {
    const auto& value = field(parent, where, key);
    if (value.is_number_unsigned()) {
      const auto n = value.get<std::uint64_t>();
      if (n > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        fail(where + "/" + key, "the number " + value.dump() + " is too large");
      }
      return static_cast<std::int64_t>(n);
    }
    if (!value.is_number_integer()) {
      fail(where + "/" + key, "expected an integer, found " + describe(value));
    }
    return value.get<std::int64_t>();
  }

  std::size_t count(const json& parent, const std::string& where, const char* key) const {
    const auto n = integer(parent, where, key);
    if (n < 0) fail(where + "/" + key, "expected a count of 0 or more, found " + std::to_string(n));
    return static_cast<std::size_t>(n);
  }

  std::chrono::nanoseconds duration(const json& parent, const std::string& where,
                                    const char* key) const {
    return std::chrono::nanoseconds{integer(parent, where, key)};
  }

  std::string text(const json& parent, const std::string& where, const char* key) const {
    const auto& value = field(parent, where, key);
    if (!value.is_string()) fail(where + "/" + key, "expected a string, found " + describe(value));
    return value.get<std::string>();
  }

  /// A string that may be absent (empty then): fields added without a format version.
  std::string optional_text(const json& parent, const std::string& where, const char* key) const {
    if (!parent.contains(key)) return {};
    return text(parent, where, key);
  }

  timing_request timing(const json& parent, const std::string& where, const char* key) const {
    const auto name = text(parent, where, key);
    if (name == "none") return timing_request::none;
    if (name == "resolved") return timing_request::resolved;
    if (name == "deferred") return timing_request::deferred;
    fail(where + "/" + key, "expected \"none\", \"resolved\" or \"deferred\", found \"" + name + "\"");
  }

  timing_methods methods(const json& parent, const std::string& where, const char* key) const {
    const auto& list = array(parent, where, key);
    timing_methods methods;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const auto at = where + "/" + key + "/" + std::to_string(i);
      if (list[i] == "device") {
        methods.device = true;
      } else if (list[i] == "system") {
        methods.system = true;
      } else {
        fail(at, "expected \"device\" or \"system\", found " + describe(list[i]));
      }
    }
    return methods;
  }

  /// The row at `where`, `depth` levels below a top-level row. Recursive, so the depth is bounded:
  /// the JSON parser bounded the text's nesting already, this bound is the one a reader can act on.
  summary_node node(const json& value, const std::string& where, std::size_t depth) const {
    if (depth > summary_max_scope_depth) {
      constexpr std::size_t shown = 60;
      throw summary_error{std::string{source_} + ": " +
                          (where.size() > shown ? where.substr(0, shown) + "..." : where) +
                          ": rows nest more than " + std::to_string(summary_max_scope_depth) +
                          " levels below a top-level row, the most launchwatch reads "
                          "(summary_max_scope_depth). If the program that wrote it nests scopes "
                          "this deep, nest them less; otherwise the file was edited."};
    }
    if (!value.is_object()) fail(where, "expected a scope or kernel object, found " + describe(value));
    summary_node node;
    const auto kind = text(value, where, "kind");
    if (kind == "scope") {
      node.kind = summary_node::node_kind::scope;
    } else if (kind == "kernel") {
      node.kind = summary_node::node_kind::kernel;
    } else {
      fail(where + "/kind", "expected \"scope\" or \"kernel\", found \"" + kind + "\"");
    }
    node.name = text(value, where, "name");
    node.launches = count(value, where, "launches");
    node.timed_launches = count(value, where, "timed_launches");
    node.dry_run_launches = count(value, where, "dry_run_launches");
    node.self = duration(value, where, "self_ns");
    node.total = duration(value, where, "total_ns");
    if (value.contains("min_ns")) node.min_time = duration(value, where, "min_ns");
    if (value.contains("max_ns")) node.max_time = duration(value, where, "max_ns");
    node.methods = methods(value, where, "methods");
    if (node.kind == summary_node::node_kind::scope) {
      const auto& children = array(value, where, "children");
      for (std::size_t i = 0; i < children.size(); ++i) {
        node.children.push_back(
            this->node(children[i], where + "/children/" + std::to_string(i), depth + 1));
      }
    } else if (value.contains("children")) {
      fail(where + "/children", "a kernel row has no children");
    }
    return node;
  }

  stream_summary stream(const json& value, const std::string& where) const {
    if (!value.is_object()) fail(where, "expected a stream object, found " + describe(value));
    stream_summary stream;
    stream.process = optional_text(value, where, "process");
    stream.stream.backend = text(value, where, "backend");
    stream.stream.device = device_index(value, where);
    const auto& id = field(value, where, "stream");
    if (!id.is_number_unsigned()) {
      fail(where + "/stream", "expected a stream id (an integer of 0 or more), found " + describe(id));
    }
    stream.stream.stream = id.get<std::uint64_t>();
    stream.launches = count(value, where, "launches");
    stream.timed_launches = count(value, where, "timed_launches");
    stream.window = duration(value, where, "window_ns");
    stream.kernel_time = duration(value, where, "kernel_ns");
    stream.idle = duration(value, where, "idle_ns");
    stream.overlap = duration(value, where, "overlap_ns");
    stream.unplaced = duration(value, where, "unplaced_ns");
    return stream;
  }

  int device_index(const json& value, const std::string& where) const {
    const auto device = integer(value, where, "device");
    if (device < std::numeric_limits<int>::min() || device > std::numeric_limits<int>::max()) {
      fail(where + "/device", "the device index " + std::to_string(device) + " is out of range");
    }
    return static_cast<int>(device);
  }

  device_summary device(const json& value, const std::string& where) const {
    if (!value.is_object()) fail(where, "expected a device object, found " + describe(value));
    device_summary device;
    device.process = optional_text(value, where, "process");
    device.backend = text(value, where, "backend");
    device.device = device_index(value, where);
    device.streams = count(value, where, "streams");
    read_window_fields(value, where, device);
    return device;
  }

  /// Reads what add_window_fields wrote.
  template <class Window>
  void read_window_fields(const json& value, const std::string& where, Window& w) const {
    w.launches = count(value, where, "launches");
    w.timed_launches = count(value, where, "timed_launches");
    w.window = duration(value, where, "window_ns");
    w.kernel_time = duration(value, where, "kernel_ns");
    w.idle = duration(value, where, "idle_ns");
    w.overlap = duration(value, where, "overlap_ns");
    w.unplaced = duration(value, where, "unplaced_ns");
  }

  std::string_view source_;
};

}  // namespace

summary_json_writer::summary_json_writer() : report_writer{"summary-json", default_file_name} {}

void summary_json_writer::do_write(std::ostream& out, const pass_summary& summary) {
  ordered_json j;
  j["format"] = format_tag;
  j["version"] = summary_format_version;
  j["timing"] = to_string(summary.timing);
  j["methods"] = methods_json(summary.methods);
  j["measurements"] = measurements_json(summary.measurements);
  j["launches"] = summary.launches;
  j["timed_launches"] = summary.timed_launches;
  j["dry_run_launches"] = summary.dry_run_launches;
  j["captured_launches"] = summary.captured_launches;
  j["host_threads"] = summary.host_threads;
  j["lost"] = lost_json(summary.lost);
  j["window_ns"] = summary.window.count();
  j["kernel_ns"] = summary.kernel_time.count();
  j["idle_ns"] = summary.idle.count();
  j["overlap_ns"] = summary.overlap.count();
  j["unplaced_ns"] = summary.unplaced.count();
  auto scopes = ordered_json::array();
  for (const auto& scope : summary.scopes) scopes.push_back(node_json(scope));
  j["scopes"] = std::move(scopes);
  j["outside_scopes"] = node_json(summary.outside);
  auto streams = ordered_json::array();
  for (const auto& stream : summary.streams) streams.push_back(stream_json(stream));
  j["streams"] = std::move(streams);
  j["device_window_ns"] = summary.device_window.count();
  j["device_idle_ns"] = summary.device_idle.count();
  j["device_overlap_ns"] = summary.device_overlap.count();
  auto devices = ordered_json::array();
  for (const auto& device : summary.devices) devices.push_back(device_json(device));
  j["devices"] = std::move(devices);
  j["out_of_order_kernels"] = summary.out_of_order_kernels;
  if (!summary.process.empty()) j["process"] = summary.process;
  // Names are the caller's bytes: replace what is not UTF-8 rather than refuse to write the pass.
  out << j.dump(2, ' ', false, ordered_json::error_handler_t::replace) << '\n';
}

void write_summary_json(std::ostream& out, const pass_summary& summary) {
  summary_json_writer{}.write(out, summary);
}

pass_summary read_summary_json(std::istream& in, std::string_view source) {
  // nlohmann's parser keeps its own stack on the heap, but dumping, comparing and reading a value
  // recurse, so nesting is bounded here, as each container opens, before the tree is built.
  const json::parser_callback_t bound_nesting = [source](int depth, json::parse_event_t event,
                                                         json&) {
    const bool opens = event == json::parse_event_t::object_start ||
                       event == json::parse_event_t::array_start;
    if (opens && static_cast<std::size_t>(depth) + 1 > summary_max_json_depth) {
      throw summary_error{
          std::string{source} + " nests JSON arrays and objects more than " +
          std::to_string(summary_max_json_depth) +
          " levels deep (summary_max_json_depth), deeper than any summary launchwatch writes (two "
          "levels a scope, for scopes up to " + std::to_string(summary_max_scope_depth) +
          " deep). The file is not a summary launchwatch wrote, or was edited; write it again "
          "(write_summary_json, or `launchwatch demo`)."};
    }
    return true;
  };
  json root;
  try {
    root = json::parse(in, bound_nesting);
  } catch (const json::parse_error& error) {
    throw summary_error{std::string{source} + " is not valid JSON (" + error.what() +
                        "). Pass a summary.json written by launchwatch."};
  } catch (const json::exception& error) {
    // Well-formed JSON the parser cannot hold, such as a number past a double's range (1e400).
    throw summary_error{std::string{source} + " holds JSON that cannot be read (" + error.what() +
                        "). Pass a summary.json written by launchwatch."};
  }
  return summary_reader{source}.read(root);
}

pass_summary load_summary(const std::filesystem::path& path) {
  std::ifstream in{path, std::ios::binary};
  if (!in) {
    throw summary_error{"cannot open the summary " + path.string() + ": " + std::strerror(errno) +
                        ". Pass the path of a summary.json that launchwatch wrote."};
  }
  return read_summary_json(in, path.string());
}

}  // namespace launchwatch
