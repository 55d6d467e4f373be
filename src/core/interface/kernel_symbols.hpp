// Core's interface: kernel names that arrive as device symbols (the CUDA bridge's launches, from
// CUPTI's symbolName; any launch source that names kernels by their device symbol):
// demangled once per distinct symbol and kept for the life of the process, so a launch's name is a
// std::string_view like every native kernel's.
//
// In core and free of CUDA so every spelling can be unit-tested and fuzzed without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace launchwatch::detail {

/// A device symbol's name as launches report it, and what the name says about the kernel.
struct kernel_symbol {
  /// Demangled (or as given when it is not a mangled C++ name); process-lifetime storage.
  std::string_view name;
  /// The symbol as the driver spelt it; process-lifetime storage.
  std::string_view mangled;
  /// One of NCCL's collective kernels (ncclDevKernel*, ncclKernel*): see launch_info::collective.
  bool collective = false;
};

/// `symbol` demangled by the C++ ABI's demangler, or `symbol` unchanged when it is not a mangled
/// name (cuBLAS's generated kernels, extern "C" kernels), does not demangle, or is longer than
/// 16 KiB (kept as given rather than handed to the demangler).
/// Cost: 1.7-5.2 µs for a mangled name (research/cuda-bridge.md §1): call once per distinct name.
std::string demangle_symbol(std::string_view symbol);

/// Whether a kernel named `name` (demangled) is one of NCCL's collectives.
bool is_collective_symbol(std::string_view name) noexcept;

/// The process's table of device symbols seen so far.
///
/// Why a table keyed by text: CUPTI documents symbolName as valid only during the callback, and its
/// pointer differs between the runtime's and the driver's callback of one launch, so the text is
/// copied once; a caller keeps a small pointer-keyed cache in front (symbol_cache) so a repeated
/// launch neither hashes nor locks (the pointer of one kernel's name is stable from launch to
/// launch: research/cuda-bridge.md §1).
/// Thread safety: any thread. Entries are never removed, so views stay valid.
class symbol_table {
 public:
  /// The interned entry for `symbol` (any bytes), created and demangled on first sight.
  /// Cost: a shared lock and a hash when seen before; the demangle and a copy the first time.
  kernel_symbol intern(std::string_view symbol);

  /// How many distinct symbols were interned.
  std::size_t size() const;

  /// The process's table (never destroyed, so names outlive every static destructor's launches).
  static symbol_table& process();

  /// The table's lock, for the fork handlers that take it across fork() (fork_locks.hpp).
  std::shared_mutex& lock_for_fork() noexcept { return mutex_; }

 private:
  mutable std::shared_mutex mutex_;
  // Keys view the mangled copy held by each node's value, so a node never moves its text.
  std::unordered_map<std::string_view, std::unique_ptr<const std::pair<std::string, std::string>>>
      symbols_;
};

/// A per-thread, pointer-keyed cache in front of symbol_table: a launch of a kernel this thread
/// launched before costs a few pointer compares, and a check of the text unless the caller can say
/// no pointer was reused since.
///
/// Why the text is checked: a module unloaded and another loaded may reuse an address for another
/// name, and the pointer alone cannot tell. Why it is worth skipping: the text is the driver's,
/// cold at every launch after the driver's own work, so comparing it cost 26-37 ns a launch for a
/// 70-character name on the H200's host (docs/benchmarks.md, "The bridge's own time on the
/// launching thread"), more for a library's templated kernels.
/// Why 8 ways of 64 sets (28 KiB a launching thread): a model's step launches a hundred or more
/// distinct kernels in turn (cuDNN's, cuBLAS's, torch's elementwise ones), which the 64
/// direct-mapped entries this replaced did not hold: a miss hashes the whole mangled name under
/// the table's lock (docs/benchmarks.md, "Thread caches that hold a model's kernels and scopes").
/// Eight ways keep a set from overflowing where a few hundred names fall unevenly on the sets; the
/// newest goes first, the oldest out.
/// Thread safety: one thread (each thread keeps its own).
class symbol_cache {
 public:
  /// The entry for the NUL-terminated `symbol` (non-null); a pointer hit is confirmed by comparing
  /// the cached text with the symbol's.
  kernel_symbol find(const char* symbol, symbol_table& table);
  /// The same, where the caller numbers the spans in which no symbol's memory was freed:
  /// `generation` changes whenever it may have been (the CUDA bridge: at a module unload or a
  /// context's destruction, and when a bridge starts hearing of them). A pointer this cache saw in
  /// the same generation is taken without reading its text; one seen in another is confirmed first.
  kernel_symbol find(const char* symbol, symbol_table& table, std::uint64_t generation);

 private:
  static constexpr std::size_t ways = 8;
  static constexpr std::size_t set_bits = 6;
  static constexpr std::size_t sets = std::size_t{1} << set_bits;
  /// The generation of an entry that find() without one cached: never trusted without the text.
  static constexpr std::uint64_t unnumbered = ~std::uint64_t{0};
  struct entry {
    std::uint64_t generation = unnumbered;
    kernel_symbol symbol;
  };
  /// A set's pointers together (one cache line), so a hit reads one line before its entry's.
  struct set {
    const char* pointers[ways] = {};
    entry entries[ways];
  };
  set sets_[sets];
};

}  // namespace launchwatch::detail
