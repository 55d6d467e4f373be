// NVTX range names as launchwatch's injection receives them (src/inject/range_names.hpp), through to
// the reports: any program may pass any bytes as a message, in any of NVTX's forms, and the name
// becomes a scope in trace.json, flame.folded and summary.json.
//
// The first byte picks the form: 'A' an ASCII message (the rest, NUL-terminated where the input
// has a NUL), 'W' a wide message (the rest as 4-byte code units), 'R' a registered string (the rest
// registered first), 'E' event attributes whose size and message type come from the next 3 bytes
// (an ASCII message after them); anything else an ASCII message of the whole input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <launchwatch/report/chrome_trace.hpp>
#include <launchwatch/report/folded.hpp>
#include <launchwatch/report/summary.hpp>
#include <launchwatch/report/summary_json.hpp>

#include "range_names.hpp"

namespace {

using namespace launchwatch;
using launchwatch::detail::max_range_name;

[[noreturn]] void broken(const char* promise, std::string_view name) {
  std::fprintf(stderr, "NVTX range name broke a promise: %s\n  name (%zu bytes): %.*s\n", promise, name.size(),
               static_cast<int>(name.size()), name.data());
  std::abort();
}

bool is_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    std::size_t length = lead < 0x80 ? 1 : (lead & 0xE0) == 0xC0 ? 2 : (lead & 0xF0) == 0xE0 ? 3 : (lead & 0xF8) == 0xF0 ? 4 : 0;
    if (length == 0 || i + length > text.size()) return false;
    std::uint32_t point = length == 1 ? lead : lead & (0x7F >> length);
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      point = (point << 6) | (next & 0x3F);
    }
    constexpr std::uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (point < smallest[length] || point > 0x10FFFF || (point >= 0xD800 && point <= 0xDFFF)) return false;
    i += length;
  }
  return true;
}

nvtxEventAttributes_t attributes_for(int type) {
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = type;
  return attributes;
}

/// The name as a scope in a one-launch pass, rendered by every writer; the summary must read back.
void render(std::string_view name) {
  pass_record pass;
  pass.timing = timing_request::deferred;
  pass.kernels.emplace_back("k");
  pass.streams.push_back(stream_info{"cuda", 0, 1});
  pass.threads.push_back(host_thread{"host thread 1", {}});
  const auto scope = pass.add_scope_path({"step", name});
  pass.threads[0].scopes.push_back(scope_interval{scope, pass.origin, pass.origin + std::chrono::microseconds{3}});
  launch_record launch;
  launch.scope = scope;
  launch.issued = pass.origin;
  launch.returned = pass.origin + std::chrono::microseconds{1};
  launch.timing = launch_timing{std::chrono::microseconds{1}, timing_method::device,
                                profile_ticks::from_start_end(pass.origin + std::chrono::microseconds{1},
                                                              pass.origin + std::chrono::microseconds{2})};
  pass.launches.push_back(launch);
  const auto summary = summarize(pass);
  std::ostringstream trace, folded, json;
  write_chrome_trace(trace, pass);
  write_folded(folded, summary);
  write_summary_json(json, summary);
  std::istringstream back{json.str()};
  if (read_summary_json(back).launches != 1) broken("the summary reads back with its launch", name);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);  // NUL-terminated by std::string
  const char form = size > 0 ? input[0] : 'A';
  const std::string rest = size > 0 ? input.substr(1) : input;
  std::string buffer;
  std::string message;  // an 'E' input's message: the name may be a view into it
  std::string_view name;
  auto& registry = launchwatch::detail::nvtx_registry::get();
  switch (form) {
    case 'A':
      name = launchwatch::detail::ascii_range_name(rest.c_str());
      if (const auto text = std::string_view{rest.c_str()}; !text.empty() && text.size() <= max_range_name &&
                                                           name != text) {
        broken("a short ASCII message is its name unchanged", name);
      }
      break;
    case 'W': {
      std::vector<wchar_t> wide(rest.size() / 4 + 1, L'\0');
      std::memcpy(wide.data(), rest.data(), rest.size() / 4 * 4);
      name = launchwatch::detail::wide_range_name(wide.data(), buffer);
      if (!is_utf8(name)) broken("a wide message's name is UTF-8", name);
      break;
    }
    case 'R': {
      auto attributes = attributes_for(NVTX_MESSAGE_TYPE_REGISTERED);
      // Registered once per distinct text, for the life of the process: keep the texts few (at most 65,536).
      attributes.message.registered = registry.register_string(rest.substr(0, 2));
      name = launchwatch::detail::range_name(&attributes, buffer, registry);
      if (!rest.empty() && rest.find('\0') >= 2 && name != std::string_view{rest}.substr(0, 2)) {
        broken("a registered string names its range", name);
      }
      break;
    }
    case 'E': {
      auto attributes = attributes_for(size > 1 ? static_cast<std::uint8_t>(input[1]) % 5 : 0);
      attributes.size = size > 3 ? static_cast<std::uint16_t>(static_cast<std::uint8_t>(input[2]) |
                                                              (static_cast<std::uint8_t>(input[3]) << 8))
                                 : 0;
      message = size > 4 ? input.substr(4) : std::string{};
      if (attributes.messageType == NVTX_MESSAGE_TYPE_REGISTERED) {
        std::uintptr_t handle = 0;
        std::memcpy(&handle, message.data(), std::min(message.size(), sizeof handle));
        attributes.message.registered = reinterpret_cast<nvtxStringHandle_t>(handle);  // mostly never issued
      } else if (attributes.messageType == NVTX_MESSAGE_TYPE_UNICODE) {
        attributes.message.unicode = L"wide";
      } else {
        attributes.message.ascii = message.c_str();
      }
      name = launchwatch::detail::range_name(&attributes, buffer, registry);
      break;
    }
    default:
      name = launchwatch::detail::ascii_range_name(input.c_str());
  }
  if (name.empty()) broken("a name is never empty", name);
  if (name.size() > max_range_name) broken("a name is at most max_range_name bytes", name);
  render(name);
  return 0;
}
