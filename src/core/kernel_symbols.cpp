// Interning and demangling device symbols (kernel_symbols.hpp).
#include "core/interface/kernel_symbols.hpp"

#include "core/interface/fork_locks.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>

namespace launchwatch::detail {

std::string demangle_symbol(std::string_view symbol) {
  // Only Itanium-mangled names; the demangler also accepts plain type names ("i" → "int"), which a
  // kernel called `i` must not become.
  if (symbol.size() < 3 || symbol.substr(0, 2) != "_Z") return std::string{symbol};
  // Past this the demangler's time and stack grow with hostile input; no real kernel gets close.
  constexpr std::size_t longest_demangled = 16384;
  if (symbol.size() > longest_demangled) return std::string{symbol};
  const std::string text{symbol};  // the demangler wants NUL-terminated text
  if (text.size() != std::strlen(text.c_str())) return text;
  int status = 0;
  char* demangled = abi::__cxa_demangle(text.c_str(), nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) {
    std::free(demangled);
    return text;
  }
  std::string result{demangled};
  std::free(demangled);
  return result;
}

bool is_collective_symbol(std::string_view name) noexcept {
  // A template kernel demangles with its return type first ("void ncclKernel<...>(...)").
  constexpr std::string_view returns_void = "void ";
  if (name.substr(0, returns_void.size()) == returns_void) name.remove_prefix(returns_void.size());
  return name.starts_with("ncclDevKernel") || name.starts_with("ncclKernel");
}

kernel_symbol symbol_table::intern(std::string_view symbol) {
  const auto entry_of = [](const std::pair<std::string, std::string>& stored) {
    return kernel_symbol{stored.second, stored.first, is_collective_symbol(stored.second)};
  };
  {
    std::shared_lock lock{mutex_};
    if (const auto found = symbols_.find(symbol); found != symbols_.end()) {
      return entry_of(*found->second);
    }
  }
  // Demangled outside the lock: microseconds, and another thread may be interning too.
  auto stored = std::make_unique<const std::pair<std::string, std::string>>(std::string{symbol},
                                                                            demangle_symbol(symbol));
  std::unique_lock lock{mutex_};
  const std::string_view key = stored->first;
  const auto [where, inserted] = symbols_.try_emplace(key, std::move(stored));
  return entry_of(*where->second);
}

std::size_t symbol_table::size() const {
  std::shared_lock lock{mutex_};
  return symbols_.size();
}

symbol_table& symbol_table::process() {
  static auto* table = new symbol_table;  // never destroyed: names are views into it
  return *table;
}

namespace {

// A thread interning a symbol at the fork would leave the table locked in the child, whose first
// launch of a new kernel would wait forever (fork_locks.hpp: symbol_table).
[[maybe_unused]] const bool symbols_enrolled = fork_locks::enroll(
    fork_locks::rank::symbol_table,
    fork_locks::one_lock<[]() -> auto& { return symbol_table::process().lock_for_fork(); }>);

}  // namespace

kernel_symbol symbol_cache::find(const char* symbol, symbol_table& table) {
  return find(symbol, table, unnumbered);
}

kernel_symbol symbol_cache::find(const char* symbol, symbol_table& table,
                                 std::uint64_t generation) {
  const auto address = reinterpret_cast<std::uintptr_t>(symbol);
  set& in = sets_[(static_cast<std::uint64_t>(address) * 0x9e3779b97f4a7c15ULL) >> (64 - set_bits)];
  for (std::size_t way = 0; way < ways; ++way) {
    if (in.pointers[way] != symbol) continue;
    entry& slot = in.entries[way];
    if (slot.generation == generation && generation != unnumbered) return slot.symbol;
    const std::string_view cached = slot.symbol.mangled;
    if (std::strncmp(symbol, cached.data(), cached.size()) == 0 && symbol[cached.size()] == '\0') {
      slot.generation = generation;
      return slot.symbol;
    }
    // The address now holds another name: its entry becomes that name's.
    slot = entry{generation, table.intern(symbol)};
    return slot.symbol;
  }
  const kernel_symbol found = table.intern(symbol);
  // The newest in the first way, the oldest dropped.
  std::move_backward(in.pointers, in.pointers + ways - 1, in.pointers + ways);
  std::move_backward(in.entries, in.entries + ways - 1, in.entries + ways);
  in.pointers[0] = symbol;
  in.entries[0] = entry{generation, found};
  return found;
}

}  // namespace launchwatch::detail
