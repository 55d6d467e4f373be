// Kernels a launch must refuse at compile time. Each is compiled on its own, selected by a
// LAUNCHWATCH_REJECT_* definition, by a target outside `all` that a test builds expecting the
// compiler to stop with the static_assert's message (see CMakeLists.txt here).

#include <launchwatch/runtime/client.hpp>

#include <array>

namespace launchwatch {
namespace {

struct strided {
  int stride;
  device_span<float> values;
};

/// A span inside a nested aggregate field.
struct span_in_a_nested_struct {
  float scale;
  strided input;
  LAUNCHWATCH_HOST_DEVICE void operator()(unit) const {}
};

/// Spans in a std::array field.
struct array_of_spans {
  std::array<device_span<const float>, 2> inputs;
  device_span<float> output;
  LAUNCHWATCH_HOST_DEVICE void operator()(unit) const {}
};

struct layer {
  std::array<strided, 2> halves;
};
struct model {
  int layers;
  layer first;
};

/// A span three levels down: a struct in a std::array in a struct in a field.
struct span_three_levels_down {
  model weights;
  LAUNCHWATCH_HOST_DEVICE void operator()(unit) const {}
};

struct with_output {
  device_span<float> output;
};

/// A span in a base class.
struct span_in_a_base : with_output {
  LAUNCHWATCH_HOST_DEVICE void operator()(unit) const {}
};

template <class K>
[[maybe_unused]] void launch(const client& on) {
  on.launch(K{}, cube_count{1}, cube_dim{1});
}

}  // namespace

void launch_a_rejected_kernel(const client& on) {
#if defined(LAUNCHWATCH_REJECT_span_in_a_nested_struct)
  launch<span_in_a_nested_struct>(on);
#elif defined(LAUNCHWATCH_REJECT_array_of_spans)
  launch<array_of_spans>(on);
#elif defined(LAUNCHWATCH_REJECT_span_three_levels_down)
  launch<span_three_levels_down>(on);
#elif defined(LAUNCHWATCH_REJECT_span_in_a_base)
  launch<span_in_a_base>(on);
#else
  (void)on;
#endif
}

}  // namespace launchwatch
