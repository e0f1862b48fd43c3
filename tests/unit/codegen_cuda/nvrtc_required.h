// Tests that compile generated CUDA need NVRTC: a build configured with CUDA (the default) must
// load libnvrtc (scripts/setup.sh installs it), so its absence fails the test with the loader's
// message; only a build configured with -DGTCO_WITH_CUDA=OFF skips.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>

#include "common/codegen/cuda/nvrtc.h"

/// Skips in a build configured without CUDA; fails, saying how to install NVRTC, where the build
/// has CUDA but libnvrtc cannot be loaded.
#define GTCO_REQUIRE_NVRTC()                                                              \
  do {                                                                                    \
    if (!::gtco::codegen::NvrtcBuilt()) {                                                 \
      GTEST_SKIP() << ::gtco::codegen::NvrtcLoadStatus().message();                       \
    }                                                                                     \
    ASSERT_TRUE(::gtco::codegen::NvrtcAvailable()) << ::gtco::codegen::NvrtcLoadStatus(); \
  } while (0)

namespace gtco::codegen::testing {

/// Prints, when the test program ends, how many kernels it compiled with NVRTC (one line,
/// "[ nvrtc ] N CUDA kernels compiled ...", which scripts/run-tests.sh adds up over the run).
class NvrtcCountReport : public ::testing::Environment {
 public:
  void TearDown() override {
    if (NvrtcCompiledCount() == 0) return;
    std::printf("[ nvrtc ] %lld CUDA kernels compiled with NVRTC %s (%s)\n",
                static_cast<long long>(NvrtcCompiledCount()), NvrtcVersion().c_str(),
                NvrtcLibraryPath().c_str());
  }
};

inline ::testing::Environment* const kNvrtcCountReport =
    ::testing::AddGlobalTestEnvironment(new NvrtcCountReport);

}  // namespace gtco::codegen::testing
