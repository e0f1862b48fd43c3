// CUDA kernels of every mapping on a real GPU (label "gpu"; every test skips without one): the
// kernels of every applicable mapping (default trace and random samples) run through the CUDA
// measurer, which checks each output against the CPU reference (ir::ComputeTypedReference) on
// fresh random inputs before it times anything. Shapes: matmuls in f32 (SIMT, TF32) and f16/bf16
// (mma.sync, wmma, wgmma on sm_90) with ragged, unaligned, batched and transposed cases and fused
// epilogues; tests/unit/kernels/conv_test_workloads.h (small variants of ResNet-50, ViT-B/16 and
// MobileNetV2 convs, the unusual windows, the pools).
#include <gtest/gtest.h>

#include <iostream>
#include <random>
#include <set>

#include "common/codegen/cuda/nvrtc.h"
#include "common/kernels/build_program.h"
#include "common/kernels/registry.h"
#include "common/schedule/space.h"
#include "tests/unit/kernels/conv_test_workloads.h"
#include "tests/unit/kernels/matmul_test_workloads.h"
#include "tests/unit/worker/cuda_test_kernels.h"
#include "worker/cuda_driver.h"
#include "worker/cuda_measure.h"

namespace gtco::worker {
namespace {

constexpr int kSamplesPerMapping = 2;

/// Empty when a GPU can be used here, else why not.
std::string NoGpuReason() {
  static const std::string* const reason = [] {
    absl::StatusOr<std::unique_ptr<CudaDriver>> driver = CudaDriver::Open(0);
    return new std::string(driver.ok() ? "" : std::string(driver.status().message()));
  }();
  return *reason;
}

/// Runs every applicable mapping's default trace and samples of each workload; each must match
/// the CPU reference.
void ExpectAllMappingsMatchTheReference(const std::vector<gtco::testing::NamedWorkload>& cases) {
  absl::StatusOr<std::unique_ptr<CudaMeasurer>> measurer = CudaMeasurer::Create(0);
  ASSERT_TRUE(measurer.ok()) << measurer.status();
  const target::HardwareInfo& hw = (*measurer)->hardware();
  std::mt19937_64 rng(7);
  int verified = 0;
  for (const gtco::testing::NamedWorkload& item : cases) {
    absl::StatusOr<std::vector<schedule::SearchSpace>> spaces =
        kernels::CreateMappingSpaces(item.workload, hw);
    ASSERT_TRUE(spaces.ok()) << item.name << ": " << spaces.status();
    for (const schedule::SearchSpace& space : *spaces) {
      std::vector<schedule::Trace> traces = {space.DefaultTrace()};
      for (int sample = 0; sample < kSamplesPerMapping; ++sample) {
        traces.push_back(space.Sample(rng));
      }
      for (const schedule::Trace& trace : traces) {
        SCOPED_TRACE(item.name + " " + item.workload.Description() + " / " + trace.ToString());
        absl::StatusOr<gtco::v1::Candidate> candidate = testing::GeneratedCandidate(item.workload, trace);
        ASSERT_TRUE(candidate.ok()) << candidate.status();
        gtco::v1::MeasureResult result = (*measurer)->Measure(*candidate);
        EXPECT_TRUE(result.ok()) << result.error();
        EXPECT_TRUE(result.verified());
        if (result.ok()) ++verified;
        std::cout << item.name << " " << trace.ToString() << ": " << result.median_seconds() * 1e6
                  << " us\n";
      }
    }
  }
  EXPECT_GT(verified, 0);
}

/// + bias[n] (input 2), then ReLU: a linear layer's epilogue.
ir::Workload WithBiasRelu(ir::Workload w) {
  using K = ir::Operand::Kind;
  w.inputs.push_back({ir::DType::kF32, {w.matmul.n}});
  w.epilogue.push_back({ir::EwOp::kAdd, {{K::kAcc, 0, 0}, {K::kInput, 2, 0}}});
  w.epilogue.push_back({ir::EwOp::kRelu, {{K::kValue, 0, 0}}});
  return w;
}

std::vector<gtco::testing::NamedWorkload> MatMulWorkloads() {
  using ir::DType;
  return {
      {"f32_square", gtco::testing::MatMulWorkload(1, 128, 128, 128, DType::kF32, DType::kF32)},
      {"f32_ragged_bias_relu", WithBiasRelu(gtco::testing::MatMulWorkload(1, 100, 72, 40, DType::kF32, DType::kF32))},
      {"f32_batched_trans_b", gtco::testing::MatMulWorkload(3, 64, 48, 32, DType::kF32, DType::kF32, /*trans_b=*/true)},
      // Few output tiles and a long K: the K split's case (ragged M and N, 16 K tiles of 32).
      {"f32_long_k_bias_relu", WithBiasRelu(gtco::testing::MatMulWorkload(1, 100, 72, 512, DType::kF32, DType::kF32))},
      {"f16_to_f32", gtco::testing::MatMulWorkload(1, 128, 256, 64, DType::kF16, DType::kF32)},
      {"f16_to_f32_bias_relu", WithBiasRelu(gtco::testing::MatMulWorkload(1, 192, 128, 128, DType::kF16, DType::kF32))},
      {"f16_to_f16", gtco::testing::MatMulWorkload(1, 192, 128, 128, DType::kF16, DType::kF16)},
      {"f16_unaligned_n", gtco::testing::MatMulWorkload(1, 72, 36, 24, DType::kF16, DType::kF32)},
      {"bf16_to_bf16", gtco::testing::MatMulWorkload(1, 256, 128, 128, DType::kBF16, DType::kBF16)},
      {"bf16_batched_trans_b", gtco::testing::MatMulWorkload(2, 64, 128, 64, DType::kBF16, DType::kF32, /*trans_b=*/true)},
      {"bf16_shared_weights", gtco::testing::MatMulWorkload(2, 80, 64, 96, DType::kBF16, DType::kF32, false, false)},
  };
}

// Without a GPU too: the cases are valid workloads, every mapping that applies on an sm_90 GPU
// generates their default and sampled kernels, and NVRTC (where it loads) compiles them.
TEST(CudaMatMulGpuTest, EveryMatMulCaseGeneratesForSm90) {
  const target::HardwareInfo hw = target::CudaArchPreset(90);
  std::mt19937_64 rng(7);
  std::set<std::string> mappings;
  for (const gtco::testing::NamedWorkload& item : MatMulWorkloads()) {
    ASSERT_TRUE(item.workload.Validate().ok()) << item.name << ": " << item.workload.Validate();
    absl::StatusOr<std::vector<schedule::SearchSpace>> spaces =
        kernels::CreateMappingSpaces(item.workload, hw);
    ASSERT_TRUE(spaces.ok()) << item.name << ": " << spaces.status();
    for (const schedule::SearchSpace& space : *spaces) {
      for (const schedule::Trace& trace : {space.DefaultTrace(), space.Sample(rng)}) {
        SCOPED_TRACE(item.name + " / " + trace.ToString());
        mappings.insert(trace.ToString().substr(0, trace.ToString().find(';')));
        absl::StatusOr<gtco::v1::Candidate> candidate = testing::GeneratedCandidate(item.workload, trace);
        ASSERT_TRUE(candidate.ok()) << candidate.status();
        // Only a build without CUDA compiles nothing; one with CUDA must load NVRTC.
        if (!codegen::NvrtcBuilt()) continue;
        ASSERT_TRUE(codegen::NvrtcAvailable()) << codegen::NvrtcLoadStatus();
        const std::string arch =
            candidate->launch().arch().empty() ? "sm_90" : candidate->launch().arch();
        absl::StatusOr<codegen::CompiledCuda> compiled =
            codegen::CompileCuda(candidate->program(), candidate->entry(), arch);
        EXPECT_TRUE(compiled.ok()) << compiled.status();
      }
    }
  }
  // Each matmul kernel family is exercised.
  for (const char* sketch : {"cuda_mm_simt/v1", "cuda_mm_tf32/v1", "cuda_mm_tf32_split/v1", "cuda_mm_mma/v1",
                             "cuda_mm_wmma/v1", "cuda_mm_wgmma/v1"}) {
    EXPECT_TRUE(mappings.count(sketch)) << sketch;
  }
}

TEST(CudaMatMulGpuTest, EveryMatMulMappingMatchesTheReference) {
  if (!NoGpuReason().empty()) GTEST_SKIP() << "no CUDA GPU: " << NoGpuReason();
  ExpectAllMappingsMatchTheReference(MatMulWorkloads());
}

TEST(CudaConvGpuTest, EveryConvMappingMatchesTheReference) {
  if (!NoGpuReason().empty()) GTEST_SKIP() << "no CUDA GPU: " << NoGpuReason();
  ExpectAllMappingsMatchTheReference(gtco::testing::ConvWorkloads(/*small=*/true));
}

TEST(CudaConvGpuTest, EveryPoolMappingMatchesTheReference) {
  if (!NoGpuReason().empty()) GTEST_SKIP() << "no CUDA GPU: " << NoGpuReason();
  ExpectAllMappingsMatchTheReference(gtco::testing::PoolWorkloads(/*small=*/true));
}

}  // namespace
}  // namespace gtco::worker
