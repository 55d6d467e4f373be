// Kernel names: type_name<T>() spelled at compile time, and format_kernel_name() reading every
// compiler's spelling of it.
#include <launchwatch/kernel_name.hpp>

#include <cstdint>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

namespace {
struct hidden_kernel {};
}  // namespace

namespace kernel_name_test {

// Inside the test's own namespace so no other test in the binary can define them differently.
namespace demo::ops {
template <class T, int N>
struct matmul {};
template <class T>
struct sum {};
template <class Op, int N>
struct reduce {};
template <class In, class Out>
struct copy {};
template <class T>
struct outer {
  struct inner {};
};
}  // namespace demo::ops

struct plain_kernel {};

inline auto make_lambda_kernel() {
  return [](int) {};
}

inline auto make_local_kernel() {
  struct local_kernel {};
  return local_kernel{};
}

using launchwatch::format_kernel_name;
using launchwatch::name_format;
using launchwatch::type_name;

std::string balanced(std::string_view name) {
  return format_kernel_name(name, name_format::balanced);
}
std::string brief(std::string_view name) { return format_kernel_name(name, name_format::brief); }

// ---------------------------------------------------------------------------------------------
// type_name<T>()

TEST(KernelName, TypeNameIsComputedAtCompileTime) {
  static_assert(type_name<plain_kernel>() == "kernel_name_test::plain_kernel");
  static_assert(type_name<int>() == "int");
  constexpr std::string_view name = type_name<plain_kernel>();
  EXPECT_EQ(name, "kernel_name_test::plain_kernel");
}

TEST(KernelName, TypeNameSpellsTemplateArguments) {
  static_assert(type_name<demo::ops::matmul<float, 16>>() ==
                "kernel_name_test::demo::ops::matmul<float, 16>");
  static_assert(type_name<demo::ops::matmul<double, -3>>() ==
                "kernel_name_test::demo::ops::matmul<double, -3>");
}

TEST(KernelName, TypeNameSpellsNestedTemplates) {
  static_assert(type_name<demo::ops::reduce<demo::ops::sum<float>, 4>>() ==
                "kernel_name_test::demo::ops::reduce<kernel_name_test::demo::ops::sum<float>, 4>");
}

TEST(KernelName, TypeNameOfATemplateFormatsBalancedAndBrief) {
  const std::string_view name = type_name<demo::ops::matmul<float, 16>>();
  EXPECT_EQ(balanced(name), "matmul | float | 16");
  EXPECT_EQ(brief(name), "matmul");
}

TEST(KernelName, TypeNameOfANestedTemplateFormatsWithInnerBracketsKept) {
  const std::string_view name = type_name<demo::ops::reduce<demo::ops::sum<float>, 4>>();
  EXPECT_EQ(balanced(name), "reduce | sum<float> | 4");
  EXPECT_EQ(brief(name), "reduce");
}

TEST(KernelName, TypeNameIsAViewOverOneNulTerminatedStaticArray) {
  const std::string_view first = type_name<demo::ops::matmul<float, 16>>();
  const std::string_view second = type_name<demo::ops::matmul<float, 16>>();
  EXPECT_EQ(first.data(), second.data());
  EXPECT_EQ(first.data()[first.size()], '\0');
}

TEST(KernelName, TypeNameOfPointerAndReferenceArgumentsFormatsTheSameOnEveryCompiler) {
  const std::string_view name = type_name<demo::ops::copy<const float*, float&>>();
  EXPECT_EQ(balanced(name), "copy | const float* | float&");
}

TEST(KernelName, TypeNameOfAnAnonymousNamespaceTypeFormatsToItsOwnName) {
  const std::string_view name = type_name<hidden_kernel>();
  EXPECT_NE(name.find("hidden_kernel"), std::string_view::npos);
  EXPECT_EQ(balanced(name), "hidden_kernel");
  EXPECT_EQ(brief(name), "hidden_kernel");
}

TEST(KernelName, TypeNameOfALambdaFormatsAsLambdaWithWhereItWasWritten) {
  const std::string_view name = type_name<decltype(make_lambda_kernel())>();
#if defined(__clang__)
  EXPECT_EQ(brief(name).rfind("lambda at kernel_name_test.cpp:", 0), 0u) << name;
#else
  EXPECT_EQ(name, "kernel_name_test::make_lambda_kernel()::<lambda(int)>");
  EXPECT_EQ(balanced(name), "lambda(int) in make_lambda_kernel");
  EXPECT_EQ(brief(name), "lambda in make_lambda_kernel");
#endif
}

TEST(KernelName, TypeNameOfAFunctionLocalTypeFormatsToItsOwnName) {
  const std::string_view name = type_name<decltype(make_local_kernel())>();
  EXPECT_EQ(balanced(name), "local_kernel") << name;
  EXPECT_EQ(brief(name), "local_kernel") << name;
}

TEST(KernelName, TypeNameOfANestedClassKeepsItsClassTemplateWhenBalanced) {
  const std::string_view name = type_name<demo::ops::outer<float>::inner>();
  EXPECT_EQ(balanced(name), "outer<float>::inner");
  EXPECT_EQ(brief(name), "inner");
}

// ---------------------------------------------------------------------------------------------
// format_kernel_name(), from literal spellings

TEST(FormatKernelName, FullReturnsTheNameUnchanged) {
  EXPECT_EQ(format_kernel_name("demo::ops::matmul<const float *, 16>", name_format::full),
            "demo::ops::matmul<const float *, 16>");
  EXPECT_EQ(format_kernel_name("  odd<<text ", name_format::full), "  odd<<text ");
}

TEST(FormatKernelName, BalancedDropsNamespacesAndSplitsTemplateArguments) {
  EXPECT_EQ(balanced("demo::ops::matmul<float, 16>"), "matmul | float | 16");
}

TEST(FormatKernelName, BriefKeepsOnlyTheBaseName) {
  EXPECT_EQ(brief("demo::ops::matmul<float, 16>"), "matmul");
  EXPECT_EQ(brief("demo::ops::reduce<demo::ops::sum<float>, 4>"), "reduce");
}

TEST(FormatKernelName, PlainNamesLoseOnlyTheirNamespaces) {
  EXPECT_EQ(balanced("matmul"), "matmul");
  EXPECT_EQ(balanced("demo::ops::axpy"), "axpy");
  EXPECT_EQ(brief("::demo::axpy"), "axpy");
}

TEST(FormatKernelName, NestedTemplatesKeepTheirBracketsButLoseTheirNamespaces) {
  EXPECT_EQ(balanced("demo::ops::reduce<demo::ops::sum<float>, 4>"), "reduce | sum<float> | 4");
  EXPECT_EQ(balanced("demo::ops::reduce<demo::ops::sum<demo::pair<int, float> >, 4>"),
            "reduce | sum<pair<int, float>> | 4");
}

TEST(FormatKernelName, PointersAndReferencesReadTheSameInEveryCompilersSpacing) {
  EXPECT_EQ(balanced("demo::ops::copy<const float*, float&>"),
            "copy | const float* | float&");  // g++
  EXPECT_EQ(balanced("demo::ops::copy<const float *, float &>"),
            "copy | const float* | float&");  // clang
  EXPECT_EQ(balanced("demo::ops::copy<const demo::vec *, float &&>"),
            "copy | const vec* | float&&");
}

TEST(FormatKernelName, AnonymousNamespacesAreDroppedInEveryCompilersSpelling) {
  EXPECT_EQ(balanced("(anonymous namespace)::k"), "k");             // clang, g++
  EXPECT_EQ(balanced("{anonymous}::k"), "k");                       // g++
  EXPECT_EQ(balanced("<unnamed>::k"), "k");                         // nvcc's front end
  EXPECT_EQ(balanced("_GLOBAL__N__6ec85f53_8_main_cu_k::k"), "k");  // nvcc's host code
  EXPECT_EQ(balanced("`anonymous namespace'::k"), "k");             // MSVC
  EXPECT_EQ(balanced("demo::sum<(anonymous namespace)::op, 2>"), "sum | op | 2");
}

TEST(FormatKernelName, GxxLambdasReadAsLambdaInTheirEnclosingFunction) {
  EXPECT_EQ(balanced("main()::<lambda(int)>"), "lambda(int) in main");
  EXPECT_EQ(brief("main()::<lambda(int)>"), "lambda in main");
  EXPECT_EQ(balanced("demo::run<float>(float)::<lambda(const demo::vec&)>"),
            "lambda(const vec&) in run");
  EXPECT_EQ(balanced("main()::<lambda()>"), "lambda in main");
}

TEST(FormatKernelName, GxxLambdasAtNamespaceScopeReadAsLambda) {
  EXPECT_EQ(balanced("<lambda(int)>"), "lambda(int)");
  EXPECT_EQ(brief("demo::<lambda(int)>"), "lambda");
}

TEST(FormatKernelName, LambdasInsideACallOperatorNameItsClass) {
  EXPECT_EQ(brief("demo::S::operator()(int) const::<lambda()>"), "lambda in S::operator()");
}

TEST(FormatKernelName, ClangLambdasReadAsLambdaAtTheirFileAndLine) {
  EXPECT_EQ(balanced("(lambda at /src/demo/kernels.cpp:12:3)"), "lambda at kernels.cpp:12:3");
  EXPECT_EQ(brief("(lambda at /src/demo/kernels.cpp:12:3)"), "lambda at kernels.cpp:12");
}

TEST(FormatKernelName, NvccFrontEndLambdasReadAsLambda) {
  EXPECT_EQ(balanced("lambda [](int)->void"), "lambda(int)");
  EXPECT_EQ(brief("lambda [](int)->void"), "lambda");
}

TEST(FormatKernelName, NvccExtendedLambdasReadAsLambdaInTheirEnclosingFunction) {
  EXPECT_EQ(
      balanced("__nv_hdl_wrapper_t<false, true, false, __nv_dl_tag<int (*)(), main, 1>, int(int)>"),
      "lambda(int) in main");
  EXPECT_EQ(brief("__nv_dl_wrapper_t<__nv_dl_tag<void (*)(), &demo::run<float>, 2> >"),
            "lambda in run");
}

TEST(FormatKernelName, MsvcLambdasReadAsLambda) {
  EXPECT_EQ(balanced("class main::<lambda_1>"), "lambda");
}

TEST(FormatKernelName, LambdasAsTemplateArgumentsReadShort) {
  EXPECT_EQ(balanced("demo::apply<main()::<lambda(int)> >"), "apply | lambda(int) in main");
  EXPECT_EQ(balanced("demo::apply<(lambda at k.cpp:16:12)>"), "apply | lambda at k.cpp:16:12");
  EXPECT_EQ(balanced("demo::apply<lambda [](int, float)->void>"), "apply | lambda(int, float)");
}

TEST(FormatKernelName, StructAndClassKeywordsAreDropped) {
  EXPECT_EQ(balanced("struct demo::ops::matmul<float,16>"), "matmul | float | 16");
  EXPECT_EQ(balanced("class demo::ops::reduce<struct demo::ops::sum<float>,4>"),
            "reduce | sum<float> | 4");
  EXPECT_EQ(brief("class `anonymous namespace'::k"), "k");
}

TEST(FormatKernelName, FunctionLocalTypesLoseTheirEnclosingFunction) {
  EXPECT_EQ(balanced("f()::local_kernel"), "local_kernel");
  EXPECT_EQ(balanced("demo::run<float>(float)::local_kernel"), "local_kernel");
  EXPECT_EQ(balanced("demo::S::m() &&::local_kernel"), "local_kernel");
  EXPECT_EQ(balanced("demo::S::m() const::local<int>"), "local | int");
}

TEST(FormatKernelName, UnnamedTypesReadAsWhatTheyAre) {
  EXPECT_EQ(balanced("main()::<unnamed struct>"), "unnamed struct in main");
  EXPECT_EQ(balanced("(unnamed struct at k.cpp:4:1)"), "unnamed struct at k.cpp:4:1");
}

TEST(FormatKernelName, EnclosingClassTemplatesKeepTheirArgumentsWhenBalanced) {
  EXPECT_EQ(balanced("demo::ops<float>::add<4>"), "ops<float>::add | 4");
  EXPECT_EQ(brief("demo::ops<float>::add<4>"), "add");
}

TEST(FormatKernelName, FunctionPointerArrayAndCharacterArgumentsKeepTheirShape) {
  EXPECT_EQ(balanced("demo::apply<void (*)(demo::vec)>"), "apply | void (*)(vec)");
  EXPECT_EQ(balanced("demo::apply<int [3]>"), "apply | int[3]");
  EXPECT_EQ(balanced("demo::apply<int (&)[3]>"), "apply | int (&)[3]");
  EXPECT_EQ(balanced("demo::ch<'<'>"), "ch | '<'");
  EXPECT_EQ(balanced("demo::ch<','>"), "ch | ','");
}

TEST(FormatKernelName, TextThatIsNotASingleNameIsReturnedWithSpacingEvened) {
  EXPECT_EQ(balanced("const float *"), "const float*");
  EXPECT_EQ(brief("unsigned   int"), "unsigned int");
}

TEST(FormatKernelName, EmptyNameStaysEmpty) {
  EXPECT_EQ(balanced(""), "");
  EXPECT_EQ(brief("   "), "");
}

TEST(FormatKernelName, MalformedNamesComeBackWithoutThrowing) {
  EXPECT_EQ(balanced("demo::k<"), "k<");
  EXPECT_EQ(balanced("a::"), "a::");
  EXPECT_EQ(balanced("<<<<"), "<<<<");
  EXPECT_EQ(balanced("k<a->b>"), "k | a->b");
  EXPECT_EQ(brief("(lambda at )"), "lambda");
  for (std::string_view odd : {"::", ")(", "k<int>>", "f(::", "`", "'", "\"", "operator", "struct ",
                               "lambda [", "(anonymous namespace)", "__nv_dl_wrapper_t<x>"}) {
    EXPECT_NO_THROW(balanced(odd)) << odd;
    EXPECT_NO_THROW(brief(odd)) << odd;
  }
}

TEST(FormatKernelName, DeepNestingIsBoundedAndDoesNotThrow) {
  std::string deep;
  for (int i = 0; i < 2000; ++i) deep += "k<";
  deep += "int";
  for (int i = 0; i < 2000; ++i) deep += ">";
  EXPECT_EQ(brief(deep), "k");
  EXPECT_NO_THROW(balanced(deep));
  EXPECT_NO_THROW(balanced(std::string(4000, '(')));
}

TEST(FormatKernelName, LongWellFormedNamesAreFormattedInFull) {
  std::string arguments;
  std::string expected;
  for (int i = 0; i < 200; ++i) {
    arguments += (i > 0 ? ", " : "") + std::string("demo::ops::sum<demo::pair<int, float> >");
    expected += (i > 0 ? ", " : "") + std::string("sum<pair<int, float>>");
  }
  std::string name = "demo::tuple<" + arguments + ">";
  std::string want = "tuple<" + expected + ">";
  for (int level = 0; level < 8; ++level) {
    name = "demo::wrap<" + name + ", " + std::to_string(level) + ">";
    want = (level == 7 ? "wrap | " + want + " | " : "wrap<" + want + ", ") + std::to_string(level) +
           (level == 7 ? "" : ">");
  }
  EXPECT_EQ(balanced(name), want);
}

TEST(FormatKernelName, RandomTextNeverThrows) {
  constexpr std::string_view alphabet = "<>()[]{}:,'`\"&*- a1_";
  std::uint64_t state = 0x9e3779b97f4a7c15u;
  const auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (int round = 0; round < 10000; ++round) {
    std::string text;
    const std::size_t length = next() % 24;
    for (std::size_t i = 0; i < length; ++i) text += alphabet[next() % alphabet.size()];
    ASSERT_NO_THROW(balanced(text)) << text;
    ASSERT_NO_THROW(brief(text)) << text;
  }
}

}  // namespace kernel_name_test
