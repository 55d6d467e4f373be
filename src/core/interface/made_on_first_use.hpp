// Core's interface: a thread's own object, made the first time the thread asks for it and freed as
// the thread ends, for the per-thread caches a launch or a scope reads (the scope paths' cache in
// attribute/scope.cpp, the CUDA bridge's kernel names in cuda_bridge/bridge_core.cpp).
//
// Why not a thread_local object: glibc zeroes a thread's static thread-local storage as the thread
// starts, so tens of KiB of cache there would be carried by every thread of a program that links
// launchwatch, including pools that never launch or enter a scope. Why not a thread_local
// std::unique_ptr: a thread_local with a destructor is reached through its file's initialisation
// function at every read, and cannot sit in a constinit, trivially destructible thread state.
#pragma once

namespace launchwatch::detail {

/// A `T` made on its thread's first get() and freed as the thread ends. Constant-initialised and
/// trivially destructible, so it may be a constinit thread_local or a member of one.
///
/// At most one per thread per `T` (the freeing owner is one thread_local per `T`).
/// Thread safety: its own thread only.
/// Cost: get() is a load and a branch once made; the first call allocates a `T` and registers the
/// thread-exit owner.
template <class T>
class made_on_first_use {
 public:
  /// This thread's `T`; null when it cannot be made (out of memory) or the thread is ending (its
  /// `T` freed already): the caller then does without.
  T* get() noexcept {
    if (made_ != nullptr || ended_) return made_;
    try {
      thread_local owner freeing{*this};
      made_ = new T{};
    } catch (...) {
      return nullptr;
    }
    return made_;
  }

 private:
  /// Frees its thread's `T` as the thread ends; made with it.
  struct owner {
    explicit owner(made_on_first_use& made) : of{made} {}
    owner(const owner&) = delete;
    owner& operator=(const owner&) = delete;
    ~owner() {
      delete of.made_;
      of.made_ = nullptr;
      of.ended_ = true;  // a get() later in the thread's end makes nothing
    }
    made_on_first_use& of;
  };

  T* made_ = nullptr;
  bool ended_ = false;
};

}  // namespace launchwatch::detail
