// Marks the CUDA calls launchwatch's own CUDA backend makes to launch its kernels, so the CUDA
// bridge (src/cupti), which sees every launch in the process through CUPTI, does not report a
// launch the backend reports itself: each launch reaches the observer exactly once.
#pragma once

namespace launchwatch::detail::cuda {

/// True on a thread while it is inside one of the backend's own launch calls (cudaLaunchKernel,
/// cudaGraphLaunch, its clock probe). Read by the bridge's CUPTI callback on the same thread.
inline thread_local bool submitting_own_launch = false;

/// Sets submitting_own_launch for its lifetime. Cost: a thread-local store and restore.
class own_submit {
 public:
  own_submit() noexcept : was_{submitting_own_launch} { submitting_own_launch = true; }
  ~own_submit() { submitting_own_launch = was_; }
  own_submit(const own_submit&) = delete;
  own_submit& operator=(const own_submit&) = delete;

 private:
  bool was_;
};

}  // namespace launchwatch::detail::cuda
