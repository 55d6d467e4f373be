// Device symbols as the CUDA bridge names launches (src/core/interface/kernel_symbols.hpp):
// demangled once, interned for the process, NCCL's collectives recognised; and LAUNCHWATCH_CUPTI's values.

#include "core/interface/kernel_symbols.hpp"
#include "cuda_bridge/environment.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <launchwatch/errors.hpp>

namespace launchwatch::detail {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(KernelSymbols, AMangledKernelIsNamedByItsDemangledSignature) {
  EXPECT_EQ(demangle_symbol("_Z9k_functorIN4demo4axpyIfLi16EEEEvT_Pf"),
            "void k_functor<demo::axpy<float, 16> >(demo::axpy<float, 16>, float*)");
}

TEST(KernelSymbols, APlainSymbolIsKeptAsGiven) {
  EXPECT_EQ(demangle_symbol("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_cublas"),
            "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_cublas");
  EXPECT_EQ(demangle_symbol("i"), "i") << "a kernel called i is not the type int";
}

TEST(KernelSymbols, ASymbolThatDoesNotDemangleIsKeptAsGiven) {
  EXPECT_EQ(demangle_symbol("_Z!!not"), "_Z!!not");
}

TEST(KernelSymbols, NcclKernelsAreCollectivesAndOthersAreNot) {
  EXPECT_TRUE(is_collective_symbol("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"));
  EXPECT_TRUE(is_collective_symbol("void ncclKernel<1, ncclFuncSum<float>, float, 0, 0>(ncclWorkElem)"));
  EXPECT_FALSE(is_collective_symbol("void k_functor<demo::axpy<float, 16> >(demo::axpy<float, 16>, float*)"));
  EXPECT_FALSE(is_collective_symbol("my_ncclDevKernel_lookalike"));
}

TEST(KernelSymbols, InterningTheSameTextTwiceGivesTheSameStorage) {
  symbol_table table;
  const std::string first{"_Z3addPf"};
  const std::string second{"_Z3addPf"};  // same text, other memory
  const kernel_symbol a = table.intern(first);
  const kernel_symbol b = table.intern(second);
  EXPECT_EQ(a.name, "add(float*)");
  EXPECT_EQ(a.name.data(), b.name.data());
  EXPECT_EQ(table.size(), 1u);
}

TEST(KernelSymbols, AnInternedNameOutlivesTheTextItCameFrom) {
  symbol_table table;
  kernel_symbol kept;
  {
    std::string transient{"_Z6kernelv"};
    kept = table.intern(transient);
    transient.assign(transient.size(), 'x');
  }
  EXPECT_EQ(kept.name, "kernel()");
  EXPECT_EQ(kept.mangled, "_Z6kernelv");
}

TEST(KernelSymbols, TheCacheDoesNotTrustAReusedPointerWithOtherText) {
  symbol_table table;
  symbol_cache cache;
  char buffer[] = "_Z3onev";
  EXPECT_EQ(cache.find(buffer, table).name, "one()");
  std::copy_n("_Z3twov", sizeof buffer, buffer);  // a module unloaded, another's name at the address
  EXPECT_EQ(cache.find(buffer, table).name, "two()");
  EXPECT_EQ(cache.find(buffer, table).name.data(), table.intern("_Z3twov").name.data());
}

TEST(KernelSymbols, TheCacheTakesAPointerItSawInTheSameGenerationWithoutReadingItsText) {
  symbol_table table;
  symbol_cache cache;
  char buffer[] = "_Z3onev";
  EXPECT_EQ(cache.find(buffer, table, 5).name, "one()");
  std::copy_n("_Z3twov", sizeof buffer, buffer);
  EXPECT_EQ(cache.find(buffer, table, 5).name, "one()");  // the text is not read again
  EXPECT_EQ(cache.find(buffer, table, 6).name, "two()");  // another generation: it is
  EXPECT_EQ(cache.find(buffer, table, 6).name, "two()");
}

TEST(KernelSymbols, TheCacheHoldsTheHundredKernelsAModelsStepLaunchesInTurn) {
  std::vector<std::string> symbols;
  for (int i = 0; i < 100; ++i) {
    symbols.push_back("_ZN2at6native18elementwise_kernelILi" + std::to_string(i) + "EEvv");
  }
  symbol_table first_step, second_step;
  symbol_cache cache;
  for (const auto& symbol : symbols) (void)cache.find(symbol.c_str(), first_step, 1);
  // Each name the cache still holds is answered without the table: the second table learns only
  // the names the cache dropped (64 entries held at most 64 of them).
  for (const auto& symbol : symbols) (void)cache.find(symbol.c_str(), second_step, 1);
  EXPECT_EQ(first_step.size(), symbols.size());
  EXPECT_LE(second_step.size(), 10u);
}

TEST(KernelSymbols, ThreadsInterningAtOnceAgreeOnOneEntryPerName) {
  symbol_table table;
  std::vector<std::thread> threads;
  std::vector<const char*> seen(8);
  for (std::size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&, i] {
      for (int n = 0; n < 200; ++n) {
        seen[i] = table.intern("_Z6sharedv").name.data();
        (void)table.intern("_Z5own_" + std::to_string(i) + "v");
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const char* s : seen) EXPECT_EQ(s, seen[0]);
  EXPECT_EQ(table.size(), 1u + seen.size());
}

TEST(CuptiSwitch, OnAndOffAreTheAcceptedValues) {
  EXPECT_TRUE(parse_cupti_switch("on"));
  EXPECT_FALSE(parse_cupti_switch("off"));
}

TEST(CuptiSwitch, AnyOtherValueIsRefusedNamingTheVariableAndTheAcceptedValues) {
  try {
    (void)parse_cupti_switch("yes");
    FAIL() << "LAUNCHWATCH_CUPTI=yes was accepted";
  } catch (const configuration_error& error) {
    EXPECT_THAT(error.what(), AllOf(HasSubstr("LAUNCHWATCH_CUPTI"), HasSubstr("`yes`"),
                                    HasSubstr("on, off")));
  }
  EXPECT_THROW((void)parse_cupti_switch("ON"), configuration_error);
}

TEST(CuptiSwitch, UnsetOrEmptyMeansNoAnswer) {
  ::unsetenv("LAUNCHWATCH_CUPTI");
  EXPECT_FALSE(cupti_from_environment().has_value());
  ::setenv("LAUNCHWATCH_CUPTI", "", 1);
  EXPECT_FALSE(cupti_from_environment().has_value());
  ::setenv("LAUNCHWATCH_CUPTI", "off", 1);
  EXPECT_EQ(cupti_from_environment(), false);
  ::unsetenv("LAUNCHWATCH_CUPTI");
}

}  // namespace
}  // namespace launchwatch::detail
