// format_kernel_name over any bytes: the names it reads come from compilers (type_name<K>()) and,
// through CUPTI, from demangled device symbols, so it must take any text without crashing, hanging
// or throwing, and must keep the promises its documentation makes.
#include <launchwatch/kernel_name.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

[[noreturn]] void broken(const char* promise, std::string_view name, const std::string& out) {
  std::fprintf(stderr, "format_kernel_name broke a promise: %s\n  name (%zu bytes): %.*s\n  out: %s\n",
               promise, name.size(), static_cast<int>(name.size()), name.data(), out.c_str());
  std::abort();
}

/// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool is_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    std::size_t length = 0;
    std::uint32_t point = 0;
    if (lead < 0x80) {
      ++i;
      continue;
    } else if ((lead & 0xE0) == 0xC0) {
      length = 2, point = lead & 0x1F;
    } else if ((lead & 0xF0) == 0xE0) {
      length = 3, point = lead & 0x0F;
    } else if ((lead & 0xF8) == 0xF0) {
      length = 4, point = lead & 0x07;
    } else {
      return false;
    }
    if (i + length > text.size()) return false;
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      point = (point << 6) | (next & 0x3F);
    }
    constexpr std::uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (point < smallest[length] || point > 0x10FFFF || (point >= 0xD800 && point <= 0xDFFF)) {
      return false;
    }
    i += length;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using launchwatch::format_kernel_name;
  using launchwatch::name_format;
  const std::string_view name{reinterpret_cast<const char*>(data), size};

  // Documented: `full` returns the name exactly as given.
  const std::string full = format_kernel_name(name, name_format::full);
  if (full != name) broken("full returns the name unchanged", name, full);

  // Documented: any text is accepted and nothing but std::bad_alloc is thrown (an escaping
  // exception ends the run as a crash). Shortening copies pieces of the name and adds short labels
  // (` | `, `lambda`, ` in `), so the result stays within a small multiple of the name; cutting only
  // at ASCII punctuation keeps UTF-8 whole, which the JSON and trace writers rely on.
  const bool utf8 = is_utf8(name);
  for (const name_format format : {name_format::balanced, name_format::brief}) {
    const std::string out = format_kernel_name(name, format);
    if (out.size() > 3 * name.size() + 16) broken("the result stays near the name's size", name, out);
    if (utf8 && !is_utf8(out)) broken("UTF-8 names stay UTF-8", name, out);
  }
  return 0;
}
