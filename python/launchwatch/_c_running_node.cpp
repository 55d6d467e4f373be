// The graph node autograd's engine is running on the calling thread, for the sequence route
// (_c_sequence.c), which is C: torch's `torch::autograd::get_current_node()` returns a
// `std::shared_ptr<Node>`, and how a C++ class with a destructor is returned is the platform's
// C++ ABI (a hidden pointer to the caller's storage: the first argument on x86-64, register x8 on
// AArch64), which C cannot declare. Declared here with torch's own signature (Node left
// incomplete: only the pointer is read), the compiler calls it as torch was compiled to be called.
#include <memory>

namespace torch::autograd {
struct Node;
}

extern "C" {

// The node torch's get_current_node (at `get_current_node`, found by _c_sequence.c) returns, or
// null. The engine holds it while it runs the node, so the pointer outlives the copy released here.
// Never throws (get_current_node copies a thread-local shared_ptr).
__attribute__((visibility("hidden"))) const void* launchwatch_py_running_node(
    void* get_current_node) noexcept {
  using signature = std::shared_ptr<torch::autograd::Node> (*)();
  const std::shared_ptr<torch::autograd::Node> node =
      reinterpret_cast<signature>(get_current_node)();
  return node.get();
}

}  // extern "C"
