// What the CUDA bridge takes from outside the program: kernel symbols as CUPTI gives them (any
// bytes a module may carry), through the intern/demangle path every foreign launch's name takes;
// and LAUNCHWATCH_CUPTI's value. Nothing may crash, hang or escape, and the documented promises
// must hold.
//
// The input's first byte picks the target (`E` LAUNCHWATCH_CUPTI, anything else a symbol, so the
// seeds read `Eon`, `S_Z3addPf`); the rest is the value.
#include "core/interface/kernel_symbols.hpp"
#include "cuda_bridge/environment.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <launchwatch/errors.hpp>
#include <launchwatch/kernel_name.hpp>

namespace {

namespace detail = launchwatch::detail;

[[noreturn]] void broken(const char* promise, std::string_view input) {
  std::fprintf(stderr, "the CUDA bridge's input handling broke a promise: %s\n  input (%zu bytes): %.*s\n",
               promise, input.size(), static_cast<int>(input.size()), input.data());
  std::abort();
}

void check_symbol(std::string_view symbol) {
  // A table of its own per input: the process's never forgets, and would grow for the whole run.
  detail::symbol_table table;
  const detail::kernel_symbol first = table.intern(symbol);
  const detail::kernel_symbol again = table.intern(std::string{symbol});
  if (first.name.data() != again.name.data()) broken("one entry per distinct text", symbol);
  if (first.mangled != symbol) broken("the symbol is kept as given", symbol);
  if (first.name != detail::demangle_symbol(symbol)) broken("the name is the demangled symbol", symbol);
  if (!symbol.starts_with("_Z") && first.name != symbol) broken("a plain symbol is not renamed", symbol);
  if (first.collective != detail::is_collective_symbol(first.name)) {
    broken("collective is decided by the name", symbol);
  }
  // CUPTI hands NUL-terminated text: the cache sees the symbol up to its first NUL.
  const std::string terminated{symbol.substr(0, symbol.find('\0'))};
  detail::symbol_cache cache;
  const detail::kernel_symbol cached = cache.find(terminated.c_str(), table);
  if (cached.mangled != terminated) broken("the cache finds the text it was given", symbol);
  if (cache.find(terminated.c_str(), table).name.data() != cached.name.data()) {
    broken("a cached symbol is the interned one", symbol);
  }
  // The name then goes to reports, which shorten it.
  (void)launchwatch::format_kernel_name(first.name, launchwatch::name_format::brief);
}

void check_switch(std::string_view value) {
  try {
    const bool on = detail::parse_cupti_switch(value);
    if (on != (value == "on") || (!on && value != "off")) broken("only on and off are accepted", value);
  } catch (const launchwatch::configuration_error& error) {
    if (value == "on" || value == "off") broken("on and off are never refused", value);
    if (std::string_view{error.what()}.find(detail::cupti_variable) == std::string_view::npos) {
      broken("a refusal names the variable", value);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view value{reinterpret_cast<const char*>(data) + 1, size - 1};
  if (data[0] == 'E') {
    check_switch(value);
  } else {
    check_symbol(value);
  }
  return 0;
}
