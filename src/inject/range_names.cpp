// NVTX range names as the injection receives them (range_names.hpp).

#include "range_names.hpp"

#include <cstring>
#include <cwchar>

#include "core/interface/fork_locks.hpp"

namespace launchwatch::detail {

nvtx_registry& nvtx_registry::get() {
  static auto* const registry = new nvtx_registry;
  return *registry;
}

namespace {

// A thread registering a string at the fork would leave the registry locked in the child, whose
// next range with a registered name would wait forever (fork_locks.hpp: nvtx_registry).
[[maybe_unused]] const bool registry_enrolled = fork_locks::enroll(
    fork_locks::rank::nvtx_registry,
    fork_locks::one_lock<[]() -> auto& { return nvtx_registry::get().lock_for_fork(); }>);

}  // namespace

nvtxStringHandle_t nvtx_registry::register_string(std::string_view text) {
  std::lock_guard lock{mutex_};
  auto found = string_ids_.find(text);
  if (found == string_ids_.end()) {
    found = string_ids_.emplace(std::string{text}, strings_.size() + 1).first;
    strings_.push_back(&found->first);  // a map's keys never move
  }
  return reinterpret_cast<nvtxStringHandle_t>(found->second);
}

std::string_view nvtx_registry::text_of(nvtxStringHandle_t handle) const {
  const auto id = reinterpret_cast<std::uintptr_t>(handle);
  std::lock_guard lock{mutex_};
  if (id == 0 || id > strings_.size()) return {};
  return *strings_[id - 1];
}

nvtxDomainHandle_t nvtx_registry::create_domain(std::string_view name) {
  std::lock_guard lock{mutex_};
  auto found = domain_ids_.find(name);
  if (found == domain_ids_.end()) found = domain_ids_.emplace(std::string{name}, domain_ids_.size() + 1).first;
  return reinterpret_cast<nvtxDomainHandle_t>(found->second);
}

namespace {

/// `text` cut to max_range_name bytes without splitting a UTF-8 sequence; unnamed_range if empty.
std::string_view bounded(std::string_view text) {
  if (text.size() > max_range_name) {
    std::size_t end = max_range_name;
    // Back off continuation bytes (10xxxxxx) to the start of the sequence the cut would split.
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0U) == 0x80U) --end;
    text = text.substr(0, end);
  }
  return text.empty() ? unnamed_range : text;
}

void append_utf8(std::string& out, char32_t c) {
  if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;  // not a Unicode scalar value
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

}  // namespace

std::string_view ascii_range_name(const char* message) {
  if (message == nullptr) return unnamed_range;
  // Reads at most one byte past the bound, never the whole of an unterminated giant message.
  return bounded(std::string_view{message, ::strnlen(message, max_range_name + 1)});
}

std::string_view wide_range_name(const wchar_t* message, std::string& buffer) {
  buffer.clear();
  if (message == nullptr) return unnamed_range;
  static_assert(sizeof(wchar_t) == 4, "wide NVTX messages are read as UTF-32 (Linux)");
  for (std::size_t i = 0; message[i] != L'\0' && buffer.size() <= max_range_name; ++i) {
    append_utf8(buffer, static_cast<char32_t>(static_cast<std::uint32_t>(message[i])));
  }
  return bounded(buffer);
}

std::string_view range_name(const nvtxEventAttributes_t* attributes, std::string& buffer,
                            const nvtx_registry& registry) {
  // A program built against an older NVTX may pass a smaller struct: read only what it holds.
  constexpr std::size_t needed = offsetof(nvtxEventAttributes_t, message) + sizeof(nvtxMessageValue_t);
  if (attributes == nullptr || attributes->size < needed) return unnamed_range;
  switch (attributes->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return ascii_range_name(attributes->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE:
      return wide_range_name(attributes->message.unicode, buffer);
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return bounded(registry.text_of(attributes->message.registered));
    default:
      return unnamed_range;
  }
}

}  // namespace launchwatch::detail
