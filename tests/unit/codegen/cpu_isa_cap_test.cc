// GTCO_CPU_ISA=avx2: feature detection and the JIT's code generation both stop at AVX2 + FMA,
// so an AVX-512 host can tune and check programs for an AVX2-only target.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "common/codegen/llvm/jit.h"
#include "common/target/target.h"

namespace gtco::codegen {
namespace {

class CpuIsaCapTest : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv("GTCO_CPU_ISA"); }
};

// Kernel ABI (KernelEntry): one argument, the array of buffer pointers.
constexpr char kWideAdd[] = R"(
define void @k(ptr %args) {
  %a = load ptr, ptr %args
  %b.slot = getelementptr ptr, ptr %args, i64 1
  %b = load ptr, ptr %b.slot
  %v = load <16 x float>, ptr %a, align 64
  %w = fadd <16 x float> %v, %v
  store <16 x float> %w, ptr %b
  ret void
}
)";

constexpr char kAvx512Intrinsic[] = R"(
declare <16 x float> @llvm.x86.avx512.rcp14.ps.512(<16 x float>, <16 x float>, i16)
define void @k(ptr %args) {
  %a = load ptr, ptr %args
  %b.slot = getelementptr ptr, ptr %args, i64 1
  %b = load ptr, ptr %b.slot
  %v = load <16 x float>, ptr %a, align 64
  %r = call <16 x float> @llvm.x86.avx512.rcp14.ps.512(<16 x float> %v, <16 x float> %v, i16 -1)
  store <16 x float> %r, ptr %b
  ret void
}
)";

TEST_F(CpuIsaCapTest, UnsetAndNativeMeanTheHostsOwnFeatures) {
  unsetenv("GTCO_CPU_ISA");
  ASSERT_TRUE(target::CpuIsaCap().ok());
  EXPECT_EQ(*target::CpuIsaCap(), "");
  setenv("GTCO_CPU_ISA", "native", 1);
  EXPECT_EQ(*target::CpuIsaCap(), "");
}

TEST_F(CpuIsaCapTest, UnknownValueIsAnErrorThatNamesTheChoices) {
  setenv("GTCO_CPU_ISA", "sse9", 1);
  absl::StatusOr<std::string> cap = target::CpuIsaCap();
  ASSERT_FALSE(cap.ok());
  EXPECT_EQ(cap.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(cap.status().message().find("native, avx2"), std::string::npos);
  absl::StatusOr<std::unique_ptr<CpuJit>> jit = CpuJit::Create();
  ASSERT_FALSE(jit.ok());
  EXPECT_EQ(jit.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CpuIsaCapTest, Avx2CapDropsWiderFeaturesFromDetectionAndCodegen) {
  if (!target::DetectHostCpu().HasFeature("avx2")) GTEST_SKIP() << "host has no AVX2";
  setenv("GTCO_CPU_ISA", "avx2", 1);
  const target::HardwareInfo hw = target::DetectHostCpu();
  for (const std::string& feature : hw.cpu_features) {
    EXPECT_FALSE(target::BeyondAvx2(feature)) << feature;
  }
  EXPECT_TRUE(hw.HasFeature("avx2"));
  EXPECT_EQ(hw.MaxFloatLanes(), 8);

  absl::StatusOr<std::unique_ptr<CpuJit>> jit = CpuJit::Create();
  ASSERT_TRUE(jit.ok()) << jit.status();
  for (const std::string& feature : (*jit)->host_features()) {
    EXPECT_FALSE(target::BeyondAvx2(feature)) << feature;
  }
  absl::StatusOr<std::string> assembly = (*jit)->EmitAssembly(kWideAdd);
  ASSERT_TRUE(assembly.ok()) << assembly.status();
  EXPECT_EQ(assembly->find("zmm"), std::string::npos) << *assembly;
  EXPECT_NE(assembly->find("ymm"), std::string::npos) << *assembly;
  // The program still runs (as two 8-lane halves).
  absl::StatusOr<KernelEntry> entry = (*jit)->Compile(kWideAdd, "k");
  ASSERT_TRUE(entry.ok()) << entry.status();
  alignas(64) float in[16];
  alignas(64) float out[16];
  for (int i = 0; i < 16; ++i) in[i] = static_cast<float>(i);
  void* args[] = {in, out};
  (*entry)(args);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(out[i], 2.0f * i);
}

TEST_F(CpuIsaCapTest, Avx2CapRefusesAvx512Intrinsics) {
  if (!target::DetectHostCpu().HasFeature("avx2")) GTEST_SKIP() << "host has no AVX2";
  setenv("GTCO_CPU_ISA", "avx2", 1);
  absl::StatusOr<std::unique_ptr<CpuJit>> jit = CpuJit::Create();
  ASSERT_TRUE(jit.ok()) << jit.status();
  absl::StatusOr<KernelEntry> entry = (*jit)->Compile(kAvx512Intrinsic, "k");
  ASSERT_FALSE(entry.ok());
  EXPECT_EQ(entry.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(entry.status().message().find("avx512f"), std::string::npos);
}

}  // namespace
}  // namespace gtco::codegen
