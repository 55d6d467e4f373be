// Kernel names: a kernel is known by its type's name, spelled by the compiler at compile time, and
// shortened for people only when a report or a log line is written.
//
// The name is computed at compile time so that reporting a launch costs nothing more than passing a
// view: no allocation, no demangling, no formatting on the launch path. The view points at static
// storage, so observers may keep it for as long as the process runs.
//
// This header is included by translation units that nvcc compiles, so it uses nothing nvcc's front
// end rejects and declares nothing `__device__`.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace launchwatch {

namespace detail {

/// The compiler's signature of this function for `T`, e.g. g++'s
/// `constexpr const char* launchwatch::detail::type_signature() [with T = demo::k]`.
///
/// Returns a pointer rather than a `std::string_view` so that g++ does not append the typedef's
/// expansion (`; std::string_view = ...`) to the signature.
template <class T>
constexpr const char* type_signature() noexcept {
#if defined(_MSC_VER) && !defined(__clang__)
  return __FUNCSIG__;
#else
  return __PRETTY_FUNCTION__;
#endif
}

/// Where `T`'s spelling starts in `type_signature<T>()` and how much follows it.
///
/// Found by spelling a known type, `int`, so no compiler's decoration has to be written down here:
/// whatever surrounds the type in the signature is the same text for every `T`.
struct type_signature_frame {
  std::size_t prefix;
  std::size_t suffix;
};

constexpr type_signature_frame find_signature_frame() noexcept {
  constexpr std::string_view probe = type_signature<int>();
  constexpr std::size_t at = probe.rfind("int");
  static_assert(at != std::string_view::npos, "launchwatch: unsupported compiler type signature");
  return type_signature_frame{at, probe.size() - at - 3};
}

inline constexpr type_signature_frame signature_frame = find_signature_frame();

/// `T`'s name as the compiler spells it, without the elaborated-type keyword MSVC puts in front
/// (`struct k` becomes `k`) so that a kernel's name reads the same on every compiler.
template <class T>
constexpr std::string_view spelled_type_name() noexcept {
  const std::string_view signature = type_signature<T>();
  std::string_view name = signature.substr(
      signature_frame.prefix, signature.size() - signature_frame.prefix - signature_frame.suffix);
  const std::string_view keywords[] = {"struct ", "class ", "enum ", "union "};
  for (std::string_view keyword : keywords) {
    if (name.substr(0, keyword.size()) == keyword) {
      name.remove_prefix(keyword.size());
      break;
    }
  }
  return name;
}

/// Copies `N` characters of `text` into an array with a terminating NUL.
template <std::size_t N>
constexpr std::array<char, N + 1> to_terminated_array(std::string_view text) noexcept {
  std::array<char, N + 1> out{};
  for (std::size_t i = 0; i < N; ++i) {
    out[i] = text[i];
  }
  out[N] = '\0';
  return out;
}

/// Holds `T`'s trimmed name in static storage, one array per type.
///
/// The copy is what makes the view returned by `type_name` exactly the name: a view into the
/// compiler's signature would need no copy, but a debugger or a C API reading past the view would
/// see the rest of the signature. The terminating NUL lets `value.data()` be passed where a C
/// string is expected (NVTX, CUPTI, printf).
template <class T>
struct type_name_holder {
  static constexpr std::size_t size = spelled_type_name<T>().size();
  static constexpr std::array<char, size + 1> value =
      to_terminated_array<size>(spelled_type_name<T>());
};

}  // namespace detail

/// The name of type `T` as this compiler spells it, computed at compile time.
///
/// A kernel's name is its type's name: the compiler already knows it, so reading it costs nothing
/// at launch time and needs no registration. The spelling is the compiler's own and differs between
/// compilers (g++ writes `{anonymous}::k` and `main()::<lambda(int)>`, clang `(anonymous
/// namespace)::k` and `(lambda at f.cpp:3:12)`); `format_kernel_name` reads all of them. In a file
/// nvcc compiles, the name seen at run time is g++'s, except that an anonymous namespace is a
/// per-file `_GLOBAL__N__<hash>_...` namespace; constant expressions there (`static_assert`) are
/// also evaluated by nvcc's own front end, which spells `const float *`, `<unnamed>::k` and
/// `lambda [](int)->void`, so portable tests compare only names without such differences.
///
/// Contract: the view is over a NUL-terminated array in static storage that lives for the whole
/// process, so it may be stored and compared by address or by content; it is usable in constant
/// expressions. Thread safety: none needed, there is no runtime state. Cost: none at run time.
template <class T>
constexpr std::string_view type_name() noexcept {
  return {detail::type_name_holder<T>::value.data(), detail::type_name_holder<T>::size};
}

/// How much of a kernel's name a person is shown.
enum class name_format {
  /// The name exactly as given, for tools that need to tell every instantiation apart.
  full,
  /// The name without namespaces, with its template arguments as ` | `-separated parts after it
  /// (`demo::ops::matmul<float, 16>` reads `matmul | float | 16`): a table row that still tells
  /// instantiations apart.
  balanced,
  /// The name without namespaces and without template arguments (`matmul`): for narrow columns and
  /// summaries that group all instantiations of a kernel together.
  brief,
};

/// Shortens a kernel's name for people, in any compiler's spelling.
///
/// Kernel names are full type names, which are long and full of namespaces a reader already knows;
/// shortening happens here, when a report is written, rather than at launch, so the launch path
/// never formats anything. `balanced` drops every enclosing scope, including those inside template
/// arguments (`reduce<demo::sum<float>, 4>` reads `reduce | sum<float> | 4`). A spelling cannot
/// tell a namespace from a class, so both go, except a class template, whose arguments tell kernels
/// apart (`ops<float>::add<4>` reads `ops<float>::add | 4`). It also evens out spacing between
/// compilers (`const float *` reads `const float*`) and drops `struct`/`class`/`enum`/`union`
/// keywords (MSVC). Anonymous namespaces go like any other, in every spelling (`(anonymous
/// namespace)`, `{anonymous}`, nvcc's `<unnamed>` and `_GLOBAL__N__...`, MSVC's). Unnamed types:
/// - a lambda reads `lambda`, followed in `balanced` by its parameters where the compiler spells
///   them, then ` in F` when the compiler names the enclosing function `F` (g++, nvcc), or
///   ` at file.cpp:L:C` when it names the place instead (clang; `brief` keeps the line, not the
///   column). A lambda's own name is meaningless, so where it was written is what identifies it:
///   `main()::<lambda(int)>` reads `lambda(int) in main` (`brief`: `lambda in main`), a lambda in a
///   call operator `lambda in S::operator()`, and nvcc's extended-lambda wrappers
///   (`__nv_hdl_wrapper_t<...>`) read the same way.
/// - a type local to a function reads as its own name (`f()::local_kernel` reads `local_kernel`),
///   since unlike a lambda it has one.
/// Text that is not a single well-formed name comes back with its spacing evened out and any names
/// in it shortened, never rejected; very deep nesting and malformed text past a scanning budget
/// proportional to the length are copied through as they are.
///
/// Contract: accepts any text; never throws except `std::bad_alloc`. Thread safety: safe from any
/// thread. Cost: proportional to the name's length times its nesting depth, with small
/// allocations; `full` only copies the name. Meant for reports, not for the launch path.
std::string format_kernel_name(std::string_view name, name_format format);

}  // namespace launchwatch
