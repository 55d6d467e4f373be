// What a kernel is, and how a launch carries one to a backend without knowing its type.
//
// A kernel is a function object: an aggregate (a struct with public fields and no constructors)
// whose fields are its arguments, trivially copyable, with a `const` call operator taking a `unit`
// and marked LAUNCHWATCH_HOST_DEVICE so one definition runs on every backend:
//
//     struct axpy {
//       float a;
//       launchwatch::device_span<const float> x;
//       launchwatch::device_span<float> y;
//       LAUNCHWATCH_HOST_DEVICE void operator()(launchwatch::unit u) const {
//         auto i = u.absolute_pos();
//         if (i < y.size()) y[i] += a * x[i];
//       }
//     };
//
// The launch finds the buffers a kernel references by walking its fields (up to 16, the way
// Boost.PFR does, with structured bindings), so it can reject a buffer of another device and a read
// can wait only for the launches that touched its buffer. Only direct `device_span` fields are
// taken. A kernel that is not an aggregate, that has a base class, or whose spans sit below its own
// fields (in a nested struct, a std::array of spans) declares them itself with a member
//
//     auto spans() const { return std::tuple{x, y}; }   // every device_span it reads or writes
//
// returning a std::tuple of its spans (an empty tuple if it has none); when present it is used
// instead of the fields. Without one such a kernel does not compile, with a message saying so:
// nested spans are looked for up to 4 levels down, through aggregates whose fields can be listed
// and through std::array and C array elements (a nested struct holding a C array, or a base class,
// is not looked into). Nested fields that hold no span (a struct of floats, std::array<float, 4>)
// are fine. A C array field of the kernel itself (`float w[4]`) cannot be enumerated at all (brace
// elision miscounts it; wrap it in a struct or use std::array).
//
// This header is included by translation units nvcc or HIP's clang compiles; it includes no CUDA or
// HIP header of its own.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include <launchwatch/kernel_name.hpp>
#include <launchwatch/runtime/device_span.hpp>
#include <launchwatch/runtime/geometry.hpp>
#include <launchwatch/runtime/vulkan_shader.hpp>

#include <launchwatch/config.hpp>

#if defined(__CUDACC__)
// Defines `template <class K> __global__ void launchwatch::detail::cuda_entry(K kernel, ...)`.
#include <launchwatch/detail/cuda_entry.hpp>
#endif
#if defined(__HIP__) || (defined(__CUDACC__) && LAUNCHWATCH_HIP_PLATFORM_NVIDIA)
// Defines `template <class K> __global__ void launchwatch::detail::hip_entry(K kernel, ...)`.
#include <launchwatch/detail/hip_entry.hpp>
#endif

namespace launchwatch::detail {

// ---------------------------------------------------------------------------------------------
// Field enumeration of aggregates.

/// Converts to any type, so `K{field_probe{}, ...}` compiles exactly when K has at least that many
/// fields. Only ever named in unevaluated contexts.
struct field_probe {
  template <class T>
  constexpr operator T() const noexcept;  // NOLINT: implicit on purpose
};

template <class K, std::size_t... I>
constexpr bool brace_constructible_with(std::index_sequence<I...>) {
  return requires { K{(static_cast<void>(I), field_probe{})...}; };
}

/// The most fields `field_count` enumerates; the structured bindings below are written out to it.
inline constexpr std::size_t max_kernel_fields = 16;

/// How many fields the aggregate `K` has: the largest N for which `K{probe x N}` compiles. Probes
/// one past the maximum so that a kernel with too many fields is told so rather than miscounted.
template <class K, std::size_t N = max_kernel_fields + 1>
constexpr std::size_t field_count() {
  if constexpr (N == 0) {
    return 0;
  } else if constexpr (brace_constructible_with<K>(std::make_index_sequence<N>{})) {
    return N;
  } else {
    return field_count<K, N - 1>();
  }
}

/// Calls `visit` once with every field of the aggregate `value`, in declaration order, and returns
/// what it returns. Precondition: `fields_enumerable<K>()` (else the bindings miscount).
template <class K, class Visit>
constexpr decltype(auto) apply_to_fields(const K& value, Visit&& visit) {
  constexpr std::size_t n = field_count<K>();
#define LAUNCHWATCH_FIELDS_(count, ...)   \
  if constexpr (n == count) {             \
    const auto& [__VA_ARGS__] = value;    \
    return visit(__VA_ARGS__);            \
  }
  if constexpr (n == 0) {
    (void)value;
    return visit();
  }
  LAUNCHWATCH_FIELDS_(1, f0)
  LAUNCHWATCH_FIELDS_(2, f0, f1)
  LAUNCHWATCH_FIELDS_(3, f0, f1, f2)
  LAUNCHWATCH_FIELDS_(4, f0, f1, f2, f3)
  LAUNCHWATCH_FIELDS_(5, f0, f1, f2, f3, f4)
  LAUNCHWATCH_FIELDS_(6, f0, f1, f2, f3, f4, f5)
  LAUNCHWATCH_FIELDS_(7, f0, f1, f2, f3, f4, f5, f6)
  LAUNCHWATCH_FIELDS_(8, f0, f1, f2, f3, f4, f5, f6, f7)
  LAUNCHWATCH_FIELDS_(9, f0, f1, f2, f3, f4, f5, f6, f7, f8)
  LAUNCHWATCH_FIELDS_(10, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9)
  LAUNCHWATCH_FIELDS_(11, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10)
  LAUNCHWATCH_FIELDS_(12, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11)
  LAUNCHWATCH_FIELDS_(13, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12)
  LAUNCHWATCH_FIELDS_(14, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13)
  LAUNCHWATCH_FIELDS_(15, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14)
  LAUNCHWATCH_FIELDS_(16, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15)
#undef LAUNCHWATCH_FIELDS_
}

/// Calls `visit` with each field of the aggregate `kernel`, in declaration order.
template <class K, class Visit>
constexpr void for_each_field(const K& kernel, Visit&& visit) {
  apply_to_fields(kernel, [&](const auto&... field) { (visit(field), ...); });
}

/// Converts only to a proper base class of K, so `K{base_probe<K>{}}` compiles exactly when K's
/// first initialised element is a base. Only ever named in unevaluated contexts.
template <class K>
struct base_probe {
  template <class Base>
    requires(std::is_base_of_v<Base, K> && !std::is_same_v<Base, K>)
  constexpr operator Base() const noexcept;  // NOLINT: implicit on purpose
};

/// Whether the aggregate K has a base class. Structured bindings cannot list a base's fields
/// beside K's own, and field_count counts a base as one field.
template <class K>
constexpr bool has_base_class() {
  return requires { K{base_probe<K>{}}; };
}

/// How many bases and fields K has when each is given `{}`: one per field, even for a C array,
/// which field_count counts once per element (brace elision spreads its probes over them). A field
/// that `{}` cannot initialise (an explicit default constructor) stops the count short.
template <class K>
constexpr std::size_t braced_field_count() {
  std::size_t n = 0;
#define LAUNCHWATCH_BRACED_(count, ...) \
  if constexpr (requires { K{__VA_ARGS__}; }) n = count;
  LAUNCHWATCH_BRACED_(1, {})
  LAUNCHWATCH_BRACED_(2, {}, {})
  LAUNCHWATCH_BRACED_(3, {}, {}, {})
  LAUNCHWATCH_BRACED_(4, {}, {}, {}, {})
  LAUNCHWATCH_BRACED_(5, {}, {}, {}, {}, {})
  LAUNCHWATCH_BRACED_(6, {}, {}, {}, {}, {}, {})
  LAUNCHWATCH_BRACED_(7, {}, {}, {}, {}, {}, {}, {})
  LAUNCHWATCH_BRACED_(8, {}, {}, {}, {}, {}, {}, {}, {})
  LAUNCHWATCH_BRACED_(9, {}, {}, {}, {}, {}, {}, {}, {}, {})
  LAUNCHWATCH_BRACED_(10, {}, {}, {}, {}, {}, {}, {}, {}, {}, {})
  LAUNCHWATCH_BRACED_(11, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {})
  LAUNCHWATCH_BRACED_(12, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {})
  LAUNCHWATCH_BRACED_(13, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {})
  LAUNCHWATCH_BRACED_(14, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {})
  LAUNCHWATCH_BRACED_(15, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {})
  LAUNCHWATCH_BRACED_(16, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {})
#undef LAUNCHWATCH_BRACED_
  return n;
}

/// Whether a kernel's fields can be listed by structured bindings (it is an aggregate without a
/// base class, of at most max_kernel_fields fields). A C array field is not caught here: a kernel
/// with one fails to compile in the bindings, as kernel.hpp's header comment says.
template <class K>
constexpr bool kernel_fields_enumerable() {
  if constexpr (!std::is_class_v<K> || std::is_union_v<K> || !std::is_aggregate_v<K>) {
    return false;
  } else if constexpr (has_base_class<K>()) {
    return false;
  } else {
    return field_count<K>() <= max_kernel_fields;
  }
}

/// Whether the fields of a type found inside a kernel can be listed safely: as a kernel's, and
/// with no C array or other field that the bindings would count differently from field_count.
/// Anything else is not looked into, so a kernel that holds one compiles as it always did.
template <class T>
constexpr bool nested_fields_enumerable() {
  if constexpr (!kernel_fields_enumerable<T>()) {
    return false;
  } else {
    return braced_field_count<T>() == field_count<T>();
  }
}

// ---------------------------------------------------------------------------------------------
// The spans a kernel references.

/// One buffer view a launch references, without its element type.
struct span_ref {
  const void* data = nullptr;
  std::size_t bytes = 0;
  span_owner owner{};
};

template <class T>
constexpr span_ref to_span_ref(const device_span<T>& span) noexcept {
  return span_ref{static_cast<const void*>(span.data()), span.size_bytes(), span.owner()};
}

template <class K>
concept declares_spans = requires(const K& kernel) {
  std::tuple_size<std::remove_cvref_t<decltype(kernel.spans())>>::value;
};

/// The spans a kernel references, in a fixed-capacity list on the stack (no allocation per launch).
template <std::size_t Capacity>
struct span_list {
  std::array<span_ref, Capacity == 0 ? 1 : Capacity> items{};
  std::size_t count = 0;

  template <class T>
  constexpr void add(const device_span<T>& span) noexcept {
    items[count++] = to_span_ref(span);
  }
  std::span<const span_ref> view() const noexcept { return {items.data(), count}; }
};

template <class K>
constexpr std::size_t span_capacity() {
  if constexpr (declares_spans<K>) {
    return std::tuple_size_v<std::remove_cvref_t<decltype(std::declval<const K&>().spans())>>;
  } else {
    return field_count<K>();
  }
}

/// How deep below a kernel's own fields a device_span is looked for: a struct in a struct in a
/// kernel, a std::array of such structs, and so on, to this many levels.
inline constexpr std::size_t max_span_nesting = 4;

template <class T, std::size_t Depth>
constexpr bool holds_span();

/// Answers, as a type, whether any of the fields it is called with holds a device_span within
/// `Depth` levels. A type rather than a value so that it can be asked in an unevaluated context,
/// without an object to take the fields of.
template <std::size_t Depth>
struct any_field_holds_span {
  template <class... Field>
  constexpr auto operator()(const Field&...) const noexcept {
    return std::bool_constant<(holds_span<Field, Depth>() || ...)>{};
  }
};

template <class T>
struct is_std_array : std::false_type {};
template <class T, std::size_t N>
struct is_std_array<std::array<T, N>> : std::true_type {};

/// Whether `T` is a device_span, or holds one within `Depth` levels of fields (of aggregates whose
/// fields can be listed, see nested_fields_enumerable) and elements (of std::array and C arrays).
template <class T, std::size_t Depth>
constexpr bool holds_span() {
  using type = std::remove_cv_t<T>;
  if constexpr (is_device_span_v<type>) {
    return true;
  } else if constexpr (Depth == 0) {
    return false;
  } else if constexpr (is_std_array<type>::value) {
    return holds_span<typename type::value_type, Depth - 1>();
  } else if constexpr (std::is_array_v<type>) {
    return holds_span<std::remove_all_extents_t<type>, Depth - 1>();
  } else if constexpr (nested_fields_enumerable<type>()) {
    using answer =
        decltype(apply_to_fields(std::declval<const type&>(), any_field_holds_span<Depth - 1>{}));
    return answer::value;
  } else {
    return false;
  }
}

/// Answers, as a type, whether any of the fields it is called with is not itself a device_span but
/// holds one: a span that the launch would not see among the kernel's fields.
struct any_field_nests_span {
  template <class... Field>
  constexpr auto operator()(const Field&...) const noexcept {
    return std::bool_constant<(
        (!is_device_span_v<Field> && holds_span<Field, max_span_nesting>()) || ...)>{};
  }
};

/// Whether the aggregate kernel K holds a device_span below its own fields (in a nested struct, a
/// std::array), where kernel_spans cannot see it. Precondition: kernel_fields_enumerable<K>().
template <class K>
constexpr bool nests_spans() {
  return decltype(apply_to_fields(std::declval<const K&>(), any_field_nests_span{}))::value;
}

/// Collects the `device_span` fields of `kernel` (or what its `spans()` returns).
template <class K>
constexpr span_list<span_capacity<K>()> kernel_spans(const K& kernel) {
  span_list<span_capacity<K>()> list;
  auto take = [&](const auto& field) {
    using field_type = std::remove_cvref_t<decltype(field)>;
    if constexpr (is_device_span_v<field_type>) list.add(field);
  };
  if constexpr (declares_spans<K>) {
    std::apply([&](const auto&... span) { (take(span), ...); }, kernel.spans());
  } else if constexpr (kernel_fields_enumerable<K>()) {
    // Not otherwise: check_kernel_type has said what to do, and listing fields would only add
    // errors about structured bindings to its message.
    for_each_field(kernel, take);
  }
  return list;
}

// ---------------------------------------------------------------------------------------------
// The launch descriptor.

}  // namespace launchwatch::detail

namespace launchwatch {

/// Whether launches of kernel type `K` are one side of a collective: a kernel that completes only
/// when its peers (on other devices or streams) launch, as NCCL's do. The launch path then never
/// reads such a launch's measurement at once (docs/design.md §10): a thread issuing several sides would
/// wait forever for the first.
///
/// A kernel says so with a member `static constexpr bool collective = true;`. For a type that
/// cannot be changed, specialise this variable: `template <> inline constexpr bool
/// launchwatch::is_collective<their_kernel> = true;`. False for every other kernel.
template <class K>
inline constexpr bool is_collective = requires { requires static_cast<bool>(K::collective); };

}  // namespace launchwatch

namespace launchwatch::detail {

/// A launch's grid.
struct launch_geometry {
  ::launchwatch::cube_count count;
  ::launchwatch::cube_dim dim;
};

/// Runs `kernel` (a `K` behind a pointer) for every unit of the cubes `[first_cube, end_cube)`,
/// cubes numbered linearly, x fastest. The CPU backend splits a grid into such ranges over its pool.
using cpu_entry_function = void (*)(const void* kernel, const launch_geometry& geometry,
                                    std::uint64_t first_cube, std::uint64_t end_cube);

/// The CPU entry for kernel type `K`: the unit loop, inlined around K's call operator.
template <class K>
void cpu_entry(const void* kernel_bytes, const launch_geometry& geometry, std::uint64_t first_cube,
               std::uint64_t end_cube) {
  const K& kernel = *static_cast<const K*>(kernel_bytes);
  const cube_count count = geometry.count;
  const cube_dim dim = geometry.dim;
  unit u{};
  u.cube_dim = dim;
  u.cube_count = count;
  for (std::uint64_t cube = first_cube; cube < end_cube; ++cube) {
    u.cube_pos.x = static_cast<std::uint32_t>(cube % count.x);
    u.cube_pos.y = static_cast<std::uint32_t>((cube / count.x) % count.y);
    u.cube_pos.z = static_cast<std::uint32_t>(cube / (std::uint64_t{count.x} * count.y));
    for (std::uint32_t z = 0; z < dim.z; ++z) {
      u.unit_pos.z = z;
      for (std::uint32_t y = 0; y < dim.y; ++y) {
        u.unit_pos.y = y;
        for (std::uint32_t x = 0; x < dim.x; ++x) {
          u.unit_pos.x = x;
          kernel(u);
        }
      }
    }
  }
}

/// Whether this translation unit is compiled by nvcc. A template parameter of `client::launch`
/// defaults to it, so the instantiation made in a CUDA file and the one made in a host-only file
/// are distinct functions and the linker can never substitute one for the other.
#if defined(__CUDACC__)
inline constexpr bool compiled_as_cuda = true;
#else
inline constexpr bool compiled_as_cuda = false;
#endif

/// Whether this translation unit is compiled by a HIP compiler: HIP's clang (for AMD GPUs), or nvcc
/// in a build whose HIP backend runs on HIP's NVIDIA platform. Defaults a template parameter of
/// `client::launch`, as compiled_as_cuda does.
#if defined(__HIP__) || (defined(__CUDACC__) && LAUNCHWATCH_HIP_PLATFORM_NVIDIA)
inline constexpr bool compiled_as_hip = true;
#else
inline constexpr bool compiled_as_hip = false;
#endif

/// The address of `cuda_entry<K>` (its host stub, what cudaLaunchKernel takes) when the calling
/// translation unit is compiled by nvcc; null otherwise, so a CUDA device can refuse the launch with
/// a message saying which file to compile as CUDA.
template <class K, bool AsCuda>
const void* cuda_entry_address() noexcept {
#if defined(__CUDACC__)
  if constexpr (AsCuda) {
    return reinterpret_cast<const void*>(&::launchwatch::detail::cuda_entry<K>);
  }
#endif
  return nullptr;
}

/// The address of `hip_entry<K>` (its host stub, what hipLaunchKernel takes) when the calling
/// translation unit is compiled by a HIP compiler; null otherwise, so a HIP device can refuse the
/// launch with a message saying which file to compile as HIP.
template <class K, bool AsHip>
const void* hip_entry_address() noexcept {
#if defined(__HIP__) || (defined(__CUDACC__) && LAUNCHWATCH_HIP_PLATFORM_NVIDIA)
  if constexpr (AsHip) {
    return reinterpret_cast<const void*>(&::launchwatch::detail::hip_entry<K>);
  }
#endif
  return nullptr;
}

/// Everything a backend needs to run one launch, with the kernel's type erased.
///
/// Built on the issuing thread by `client::launch<K>` and passed by reference for the duration of
/// one call into the backend: a backend that keeps a launch (a queue, a graph) copies the kernel's
/// bytes, which it may since kernels are trivially copyable.
struct launch_descriptor {
  /// `type_name<K>()`: static storage, may be kept.
  std::string_view name;
  launch_geometry geometry;
  /// The kernel object's bytes (a `K`), valid for the call only.
  const void* kernel = nullptr;
  std::size_t kernel_size = 0;
  std::size_t kernel_alignment = 0;
  /// Runs a range of cubes on the host (see cpu_entry_function). Never null.
  cpu_entry_function cpu_entry = nullptr;
  /// `&cuda_entry<K>` when nvcc compiled the launching file, null otherwise.
  const void* cuda_entry = nullptr;
  /// `&hip_entry<K>` when a HIP compiler compiled the launching file, null otherwise.
  const void* hip_entry = nullptr;
  /// The buffers the kernel references, valid for the call only.
  std::span<const span_ref> spans;
  /// `is_collective<K>`: reported as launch_info::collective.
  bool collective = false;
  /// `&K::vulkan` when the kernel carries a compute shader (vulkan_shader.hpp), null otherwise.
  const vulkan_shader* vulkan = nullptr;
};

/// Checks, at compile time, what every launch needs of a kernel type, with messages that say what to
/// change.
template <class K>
constexpr void check_kernel_type() {
  static_assert(std::is_class_v<K>,
                "launchwatch: a kernel is a function object (a struct with a const call operator "
                "taking launchwatch::unit)");
  static_assert(std::is_trivially_copyable_v<K>,
                "launchwatch: a kernel must be trivially copyable, because its bytes are copied to "
                "the device as its arguments: hold buffers as launchwatch::device_span (from "
                "buffer::view()), not as buffer, std::vector or anything that owns memory");
  static_assert(std::is_invocable_v<const K&, unit>,
                "launchwatch: a kernel needs a const call operator taking launchwatch::unit, marked "
                "LAUNCHWATCH_HOST_DEVICE: `LAUNCHWATCH_HOST_DEVICE void operator()(launchwatch::unit "
                "u) const`");
  static_assert(declares_spans<K> || std::is_aggregate_v<K>,
                "launchwatch: a kernel that is not an aggregate (it has constructors, private fields "
                "or is a lambda) must say which buffers it references: give it a member "
                "`auto spans() const { return std::tuple{...}; }` returning its device_spans");
  if constexpr (!declares_spans<K> && std::is_aggregate_v<K>) {
    static_assert(!has_base_class<K>(),
                  "launchwatch: a kernel with a base class must say which buffers it references, "
                  "since the fields of a base cannot be listed: declare a member `auto spans() "
                  "const { return std::tuple{...}; }` returning every device_span it reads or "
                  "writes, its base's included (see launchwatch/runtime/kernel.hpp)");
    static_assert(field_count<K>() <= max_kernel_fields,
                  "launchwatch: a kernel aggregate may have at most 16 fields for its buffers to be "
                  "found; group arguments into a struct, or declare `auto spans() const` returning "
                  "a std::tuple of its device_spans");
    if constexpr (kernel_fields_enumerable<K>()) {
      static_assert(!nests_spans<K>(),
                    "launchwatch: this kernel holds a device_span inside a field (a nested struct, "
                    "a std::array of spans), where the launch cannot find it, so reads and frees "
                    "would not wait for the kernel: declare a member `auto spans() const { return "
                    "std::tuple{...}; }` returning every device_span it reads or writes (see "
                    "launchwatch/runtime/kernel.hpp), or make each span a field of the kernel");
    }
  }
}

}  // namespace launchwatch::detail
