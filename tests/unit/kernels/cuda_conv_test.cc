// CUDA convolution and pooling mappings ("tf32_mma", "simt" and "direct" for convs, "simt" for
// pools): verdicts, pruning, default traces, and generated kernels (every mapping's default trace
// plus random samples) that compile with NVRTC for sm_80 and sm_90 within the device's resource
// budget, on ResNet-50, ViT-B/16 and MobileNetV2 shapes and the unusual windows. Their outputs
// are checked against the CPU reference on a GPU by tests/unit/worker/cuda_mappings_gpu_test.cc.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/codegen/cuda/nvrtc.h"
#include "common/costmodel/cuda_features.h"
#include "common/kernels/build_program.h"
#include "common/kernels/registry.h"
#include "common/schedule/cuda_sketch.h"
#include "common/schedule/space.h"
#include "common/target/target.h"
#include "tests/unit/codegen_cuda/nvrtc_required.h"
#include "tests/unit/kernels/conv_test_workloads.h"

namespace gtco::kernels {
namespace {

using gtco::testing::ConvShape;
using gtco::testing::NamedWorkload;

constexpr int kSamplesPerMapping = 3;

const schedule::MappingVerdict* FindVerdict(const std::vector<schedule::MappingVerdict>& verdicts,
                                            const std::string& mapping) {
  for (const auto& verdict : verdicts) {
    if (verdict.mapping == mapping) return &verdict;
  }
  return nullptr;
}

std::vector<std::string> MappingNames(const std::vector<schedule::SearchSpace>& spaces) {
  std::vector<std::string> names;
  for (const schedule::SearchSpace& space : spaces) names.push_back(space.mapping());
  return names;
}

/// Compiles the kernel of (w, trace) with NVRTC for sm_`sm` and checks its resources.
void ExpectCompilesWithinBudget(const ir::Workload& w, const schedule::Trace& trace,
                                const target::HardwareInfo& hw) {
  SCOPED_TRACE(absl::StrCat(w.Description(), " / ", trace.ToString()));
  absl::StatusOr<CudaKernel> kernel = GenerateCudaKernel(w, trace, "gtco_kernel");
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_GT(kernel->plan.Blocks(), 0);
  const std::string arch =
      kernel->plan.arch.empty() ? absl::StrCat("sm_", hw.SmVersion()) : kernel->plan.arch;
  absl::StatusOr<codegen::CompiledCuda> compiled =
      codegen::CompileCuda(kernel->source, kernel->entry, arch);
  ASSERT_TRUE(compiled.ok()) << compiled.status() << "\n" << kernel->source;
  const codegen::CudaResourceUsage& usage = compiled->usage;
  EXPECT_GT(usage.registers, 0);
  EXPECT_LE(usage.registers, 255);
  EXPECT_LE(int64_t{usage.registers} * kernel->plan.Threads(), hw.registers_per_block);
  EXPECT_LE(usage.static_shared_bytes + kernel->plan.dynamic_shared_bytes,
            hw.shared_bytes_per_block);
}

TEST(CudaConvMappingTest, VerdictsByKindAndComputeCapability) {
  const ir::Workload dense = ir::MakeConvWorkload(ConvShape(1, 64, 56, 56, 64, 3, 3, 1, 1));
  const ir::Workload depthwise =
      ir::MakeConvWorkload(ConvShape(1, 32, 56, 56, 32, 3, 3, 1, 1, /*groups=*/32));
  for (int sm : {80, 90}) {
    const auto verdicts = ExplainMappings(dense, target::CudaArchPreset(sm));
    for (const char* mapping : {"tf32_mma", "simt"}) {
      const auto* verdict = FindVerdict(verdicts, mapping);
      ASSERT_NE(verdict, nullptr) << mapping;
      EXPECT_TRUE(verdict->applies) << mapping << ": " << verdict->reason;
      EXPECT_NE(verdict->reason.find("implicit GEMM"), std::string::npos) << verdict->reason;
    }
    EXPECT_EQ(FindVerdict(verdicts, "direct"), nullptr) << "depthwise only";
    absl::StatusOr<std::vector<schedule::SearchSpace>> spaces =
        CreateMappingSpaces(depthwise, target::CudaArchPreset(sm));
    ASSERT_TRUE(spaces.ok()) << spaces.status();
    EXPECT_EQ(MappingNames(*spaces), (std::vector<std::string>{"direct", "tf32_mma", "simt"}));
  }
  // Volta: SIMT only; no CUDA conv mapping on a CPU.
  const auto volta = ExplainMappings(dense, target::CudaArchPreset(70));
  EXPECT_TRUE(FindVerdict(volta, "simt")->applies);
  EXPECT_FALSE(FindVerdict(volta, "tf32_mma")->applies);
  absl::StatusOr<schedule::SearchSpace> first = CreateSpace(dense, target::CudaArchPreset(80));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->mapping(), "tf32_mma");

  const ir::Workload pool =
      ir::MakePoolWorkload(gtco::testing::PoolShape(true, 1, 64, 112, 112, 3, 2, 1));
  absl::StatusOr<std::vector<schedule::SearchSpace>> pool_spaces =
      CreateMappingSpaces(pool, target::CudaArchPreset(80));
  ASSERT_TRUE(pool_spaces.ok()) << pool_spaces.status();
  EXPECT_EQ(MappingNames(*pool_spaces), (std::vector<std::string>{"simt"}));
}

TEST(CudaConvMappingTest, GatheredPatchesAreCopiedOneAtATime) {
  const target::HardwareInfo a100 = target::CudaArchPreset(80);
  const schedule::Sketch* simt = SketchByName("cuda_conv_simt/v1");
  ASSERT_NE(simt, nullptr);
  const ir::Workload gathered = ir::MakeConvWorkload(ConvShape(1, 64, 56, 56, 64, 3, 3, 1, 1));
  const ir::Workload pointwise = ir::MakeConvWorkload(ConvShape(1, 256, 56, 56, 64, 1, 1, 1, 0));
  // simt knobs: bm bn bk tm tn stages vw_a vw_b.
  EXPECT_STREQ(simt->PruneRule(gathered, a100, {64, 64, 8, 4, 4, 1, 4, 4}), "alignment");
  EXPECT_EQ(simt->PruneRule(gathered, a100, {64, 64, 8, 4, 4, 1, 4, 1}), nullptr);
  EXPECT_EQ(simt->PruneRule(gathered, a100, {64, 64, 8, 4, 4, 3, 1, 1}), nullptr)
      << "cp.async copies gathered elements";
  EXPECT_EQ(simt->PruneRule(pointwise, a100, {64, 64, 8, 4, 4, 1, 4, 4}), nullptr)
      << "a pointwise conv reads the image planes as a stored B";
  const std::vector<schedule::Knob> knobs = simt->Knobs(gathered, a100);
  EXPECT_EQ(knobs.back().values, (std::vector<int64_t>{1}));

  // The generator refuses a vectorized gather whatever the search proposes.
  schedule::Trace trace;
  trace.sketch = "cuda_conv_simt/v1";
  const std::vector<std::string> names = simt->KnobNames();
  const std::vector<int64_t> values = {64, 64, 8, 4, 4, 1, 4, 4};
  for (size_t index = 0; index < names.size(); ++index) {
    trace.decisions.push_back({names[index], values[index]});
  }
  absl::StatusOr<CudaKernel> kernel = GenerateCudaKernel(gathered, trace, "k");
  ASSERT_FALSE(kernel.ok());
  EXPECT_EQ(kernel.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CudaConvMappingTest, EpilogueOverOneSpatialDimIsRefusedByName) {
  ir::Workload w = ir::MakeConvWorkload(ConvShape(1, 8, 10, 10, 8, 3, 3, 1, 1));
  w.inputs.push_back({ir::DType::kF32, {10}});  // broadcasts over OW only
  w.epilogue.push_back(
      {ir::EwOp::kAdd, {{ir::Operand::Kind::kAcc, 0, 0}, {ir::Operand::Kind::kInput, 2, 0}}});
  absl::StatusOr<schedule::SearchSpace> space =
      CreateSpaceForMapping(w, target::CudaArchPreset(80), "simt");
  ASSERT_TRUE(space.ok()) << space.status();
  absl::StatusOr<CudaKernel> kernel = GenerateCudaKernel(w, space->DefaultTrace(), "k");
  ASSERT_FALSE(kernel.ok());
  EXPECT_EQ(kernel.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(kernel.status().message().find("one spatial dim"), std::string::npos)
      << kernel.status();
}

TEST(CudaConvMappingTest, PlansFeedTheCostModel) {
  const target::HardwareInfo hw = target::CudaArchPreset(80);
  for (const NamedWorkload& item : gtco::testing::ConvWorkloads(/*small=*/false)) {
    absl::StatusOr<std::vector<schedule::SearchSpace>> spaces =
        CreateMappingSpaces(item.workload, hw);
    ASSERT_TRUE(spaces.ok()) << item.name << ": " << spaces.status();
    for (const schedule::SearchSpace& space : *spaces) {
      absl::StatusOr<costmodel::Features> features =
          ProgramFeatures(item.workload, space.DefaultTrace(), hw);
      ASSERT_TRUE(features.ok()) << item.name << ": " << features.status();
      float sum = 0;
      for (float value : *features) {
        EXPECT_TRUE(value == value) << item.name;  // no NaN
        sum += value;
      }
      EXPECT_GT(sum, 0) << item.name;
      // Tile efficiency (features 17, 18) is a fraction of real work.
      EXPECT_GT((*features)[17], 0.0f) << item.name << " " << space.mapping();
      EXPECT_LE((*features)[17], 1.0f) << item.name << " " << space.mapping();
    }
  }
}

struct CompileCase {
  bool pool;
  int sm;
};

class CudaConvCompileTest : public ::testing::TestWithParam<CompileCase> {};

TEST_P(CudaConvCompileTest, EveryMappingCompilesWithinBudget) {
  GTCO_REQUIRE_NVRTC();
  const target::HardwareInfo hw = target::CudaArchPreset(GetParam().sm);
  std::mt19937_64 rng(GetParam().sm * 7 + GetParam().pool);
  int compiled = 0;
  const std::vector<NamedWorkload> workloads =
      GetParam().pool ? gtco::testing::PoolWorkloads(false) : gtco::testing::ConvWorkloads(false);
  for (const NamedWorkload& item : workloads) {
    SCOPED_TRACE(item.name);
    absl::StatusOr<std::vector<schedule::SearchSpace>> spaces =
        CreateMappingSpaces(item.workload, hw);
    ASSERT_TRUE(spaces.ok()) << spaces.status();
    for (const schedule::SearchSpace& space : *spaces) {
      ExpectCompilesWithinBudget(item.workload, space.DefaultTrace(), hw);
      for (int sample = 0; sample < kSamplesPerMapping; ++sample) {
        ExpectCompilesWithinBudget(item.workload, space.Sample(rng), hw);
      }
      compiled += 1 + kSamplesPerMapping;
    }
  }
  EXPECT_GT(compiled, 0);
  RecordProperty("kernels_compiled", compiled);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaConvCompileTest,
                         ::testing::Values(CompileCase{false, 80}, CompileCase{false, 90},
                                           CompileCase{true, 80}, CompileCase{true, 90}),
                         [](const ::testing::TestParamInfo<CompileCase>& info) {
                           return absl::StrCat(info.param.pool ? "pool" : "conv", "_sm",
                                               info.param.sm);
                         });

}  // namespace
}  // namespace gtco::kernels
