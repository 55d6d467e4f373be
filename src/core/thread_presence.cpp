// Per-thread presence counts and the asymmetric fence under them
// (core/interface/thread_presence.hpp).

#include "core/interface/thread_presence.hpp"

#include "core/interface/fork_locks.hpp"

#include <bitset>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>

#include <pthread.h>

#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace launchwatch::detail {
namespace asymmetric_fence {
namespace {

long membarrier(int command) noexcept {
  return ::syscall(__NR_membarrier, command, 0, 0);
}

/// Registers for the private expedited command and checks that it then works (a seccomp filter
/// may allow one and refuse the other).
bool register_private_expedited() noexcept {
  const long commands = membarrier(MEMBARRIER_CMD_QUERY);
  if (commands < 0 || (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
  return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
         membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0;
}

/// The last resort where membarrier stopped working after it was registered: changing a page's
/// protection makes the kernel flush the page's translation on every CPU running a thread of the
/// process, by an interrupt that is a full barrier there (the fallback of folly's asymmetric
/// barrier, and of .NET's FlushProcessWriteBuffers).
void protection_change_barrier() noexcept {
  static std::mutex mutex;
  static char* const page = [] {
    void* mapped =
        ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return mapped == MAP_FAILED ? nullptr : static_cast<char*>(mapped);
  }();
  if (page == nullptr) {
    // Nothing left that orders the other threads: wait for every CPU to schedule, most likely.
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
    return;
  }
  std::lock_guard lock{mutex};
  (void)::mprotect(page, 4096, PROT_READ | PROT_WRITE);
  *static_cast<volatile char*>(page) = 0;  // the page is mapped, so its translation is cached
  (void)::mprotect(page, 4096, PROT_READ);
}

// Before main, so launches find the fast path from their first one; heavy() also makes sure.
[[maybe_unused]] const bool prepared = (prepare(), true);

}  // namespace

void prepare() noexcept {
  static const bool registered = [] {
    const bool ok = register_private_expedited();
    if (ok) membarrier_ready.store(true, std::memory_order_release);
    return ok;
  }();
  (void)registered;
}

void heavy() noexcept {
  prepare();
  if (!membarrier_ready.load(std::memory_order_acquire)) {
    // No frequent thread skipped its locked instruction: ours is enough (a read-modify-write, which
    // ThreadSanitizer understands, where it does not understand a fence).
    static std::atomic<int> fence_word{0};
    fence_word.fetch_add(1, std::memory_order_seq_cst);
    return;
  }
  if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return;
  // Registration is the memory map's: a forked child keeps it, but ask again rather than trust it.
  if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
      membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) {
    return;
  }
  // The global command needs no registration; it waits for every CPU to schedule (milliseconds).
  if (membarrier(MEMBARRIER_CMD_GLOBAL) == 0) return;
  protection_change_barrier();
}

}  // namespace asymmetric_fence

namespace {

/// The owned lines' owners: which of them are taken by a living thread.
struct owned_line_table {
  std::mutex mutex;
  std::bitset<thread_line::owned> taken;
  std::uint32_t next_shared = 0;
};

// Constant-initialised and trivially destructible: threads exit (and return their line) during
// static destruction too, and a thread's first launch, which claims a line, must not allocate.
constinit owned_line_table line_table;
static_assert(std::is_trivially_destructible_v<owned_line_table>);

/// Returns a thread's owned line at its exit (a pthread key's destructor, which runs after the
/// thread's C++ thread_local destructors, so one of those that launches still finds its line). A
/// presence count on it is zero by then: a thread cannot exit from inside a section, which is a
/// call on its own stack. Whatever uses a table after this writes a shared line, since the owned
/// one may be another thread's by then. A key, not a thread_local with a destructor: registering
/// that allocates, and a thread's first launch must not.
void return_line(void* value) {
  thread_line::index_plus_one = thread_line::owned + 1;
  std::lock_guard lock{line_table.mutex};
  line_table.taken.reset(reinterpret_cast<std::uintptr_t>(value) - 1);
}

/// In a forked child, where only the forking thread lives: every owned line is freed but that
/// thread's, since their owners do not exist there (they kept 63 lines taken for good, sending the
/// child's later threads to the shared lines' locked increments). Counts left on a freed line stay:
/// a thread_counts sum goes on from them, and no presence count was held across the fork by a
/// section a rare thread waits out in the child (the observer slot's readers drain before it).
void free_lines_in_child() noexcept {
  std::bitset<thread_line::owned> kept;
  if (const std::uint32_t mine = thread_line::index_plus_one;
      mine != 0 && thread_line::is_owned(mine - 1)) {
    kept.set(mine - 1);
  }
  line_table.taken = kept;
  line_table.mutex.unlock();
}

/// Across fork(): the table's lock, so no thread is claiming or returning a line as the process
/// forks (a child would wait for it for good at its next thread's first launch).
constinit const fork_locks::handlers line_table_across_fork{
    []() noexcept { line_table.mutex.lock(); },
    []() noexcept { line_table.mutex.unlock(); },
    &free_lines_in_child,
};
[[maybe_unused]] const bool lines_enrolled =
    fork_locks::enroll(fork_locks::rank::thread_lines, line_table_across_fork);

/// The key whose value is a thread's owned line plus one; none where the key could not be made
/// (then no line is owned).
std::optional<pthread_key_t> line_key() {
  static const std::optional<pthread_key_t> key = []() -> std::optional<pthread_key_t> {
    pthread_key_t made{};
    if (pthread_key_create(&made, &return_line) != 0) return std::nullopt;
    return made;
  }();
  return key;
}

}  // namespace

namespace thread_line {

std::size_t claim() noexcept {
  const std::optional<pthread_key_t> key = line_key();
  std::size_t index = owned;
  {
    std::lock_guard lock{line_table.mutex};
    for (std::size_t i = 0; key && i < owned; ++i) {
      if (!line_table.taken.test(i)) {
        line_table.taken.set(i);
        index = i;
        break;
      }
    }
    if (!is_owned(index)) index = owned + (line_table.next_shared++ % owned);
  }
  // The key returns the line at the thread's exit; a line it cannot return is given up now.
  if (is_owned(index) && pthread_setspecific(*key, reinterpret_cast<void*>(index + 1)) != 0) {
    std::lock_guard lock{line_table.mutex};
    line_table.taken.reset(index);
    index = owned + (line_table.next_shared++ % owned);
  }
  index_plus_one = static_cast<std::uint32_t>(index + 1);
  return index;
}

}  // namespace thread_line

void thread_presence::wait_until_empty() const noexcept {
  asymmetric_fence::heavy();
  for (const auto& line : lines_) {
    // Sequentially consistent, as the readers' locked increment where membarrier is not used:
    // Dekker's pattern needs the writer's store and these loads ordered too (acquire, for what the
    // readers did inside, comes with it).
    while (line.count.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
  }
}

}  // namespace launchwatch::detail
