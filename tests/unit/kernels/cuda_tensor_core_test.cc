// Tensor Core matmul mappings "wmma" and "wgmma": verdicts, pruning, and generated kernels that
// compile with NVRTC (wmma for sm_80 and sm_90, wgmma for sm_90a) within their resource budget.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "common/codegen/cuda/nvrtc.h"
#include "common/kernels/build_program.h"
#include "common/kernels/cuda/matmul_wgmma/generator.h"
#include "common/kernels/cuda/matmul_wmma/generator.h"
#include "common/kernels/registry.h"
#include "common/schedule/cuda_sketch.h"
#include "common/schedule/space.h"
#include "common/target/target.h"
#include "tests/unit/codegen_cuda/nvrtc_required.h"

namespace gtco::kernels {
namespace {

using codegen::CompileCuda;
using codegen::CompiledCuda;
using codegen::CudaResourceUsage;

using ir::DType;
using K = ir::Operand::Kind;

struct MatMulShape {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  bool a_batched = false, b_batched = false, trans_a = false, trans_b = false;
};

ir::Workload MatMul(DType input, DType output, const MatMulShape& s) {
  ir::Workload w;
  w.anchor = ir::AnchorKind::kMatMul;
  w.matmul.batch = s.batch;
  w.matmul.m = s.m;
  w.matmul.n = s.n;
  w.matmul.k = s.k;
  w.matmul.a_batched = s.a_batched;
  w.matmul.b_batched = s.b_batched;
  w.matmul.trans_a = s.trans_a;
  w.matmul.trans_b = s.trans_b;
  const auto shape = [&](bool batched, int64_t rows, int64_t cols) {
    return std::vector<int64_t>{batched ? s.batch : 1, rows, cols};
  };
  w.inputs = {{input, shape(s.a_batched, s.trans_a ? s.k : s.m, s.trans_a ? s.m : s.k)},
              {input, shape(s.b_batched, s.trans_b ? s.n : s.k, s.trans_b ? s.k : s.n)}};
  w.num_anchor_inputs = 2;
  w.output = {output, shape(true, s.m, s.n)};
  return w;
}

/// out = 0.5 * x * (1 + erf(x / sqrt(2))) with x = acc + bias[col].
ir::Workload WithBiasGelu(ir::Workload w) {
  w.inputs.push_back({DType::kF32, {w.matmul.n}});
  w.epilogue = {{ir::EwOp::kAdd, {{K::kAcc, 0, 0}, {K::kInput, 2, 0}}},
                {ir::EwOp::kMul, {{K::kValue, 0, 0}, {K::kConst, 0, 0.70710678f}}},
                {ir::EwOp::kErf, {{K::kValue, 1, 0}}},
                {ir::EwOp::kAdd, {{K::kValue, 2, 0}, {K::kConst, 0, 1.0f}}},
                {ir::EwOp::kMul, {{K::kValue, 0, 0}, {K::kValue, 3, 0}}},
                {ir::EwOp::kMul, {{K::kValue, 4, 0}, {K::kConst, 0, 0.5f}}}};
  return w;
}

/// The workloads every compile test covers.
std::vector<ir::Workload> CompileWorkloads(DType input) {
  MatMulShape square{1, 512, 512, 512};
  MatMulShape mlp{1, 197, 2304, 768};
  // Attention probabilities x values: 12 heads, K = 197 (not a multiple of 8: element copies).
  MatMulShape attention{12, 197, 64, 197, true, true, false, true};
  MatMulShape scores{12, 197, 197, 64, true, true, false, true};
  MatMulShape tiny{1, 5, 7, 3};
  MatMulShape transposed_a{1, 256, 96, 128, false, false, true, false};
  return {MatMul(input, DType::kF32, square),    WithBiasGelu(MatMul(input, DType::kF32, mlp)),
          MatMul(input, DType::kF32, attention), MatMul(input, input, scores),
          MatMul(input, DType::kF32, tiny),      MatMul(input, input, transposed_a)};
}

/// GenerateCudaKernel; for f16 workloads that ir::Workload::Validate() does not accept yet, the
/// sketch's generator is called directly (same plan, same source).
absl::StatusOr<CudaKernel> Generate(const ir::Workload& w, const schedule::Trace& t) {
  if (w.Validate().ok() || w.inputs[0].dtype != DType::kF16) {
    return GenerateCudaKernel(w, t, "gtco_tc_kernel");
  }
  absl::StatusOr<schedule::CudaPlan> plan = kernels::PlanCudaSchedule(w, t);
  if (!plan.ok()) return plan.status();
  schedule::KnobValues values;
  for (const auto& decision : t.decisions) values.push_back(decision.second);
  CudaKernel kernel;
  kernel.entry = "gtco_tc_kernel";
  kernel.plan = *plan;
  absl::StatusOr<std::string> source =
      t.sketch == "cuda_mm_wgmma/v1" ? kernels::GenerateWgmmaMatMul(w, values, *plan, kernel.entry)
                                     : kernels::GenerateWmmaMatMul(w, values, *plan, kernel.entry);
  if (!source.ok()) return source.status();
  kernel.source = *std::move(source);
  return kernel;
}

const schedule::MappingVerdict* FindVerdict(const std::vector<schedule::MappingVerdict>& verdicts,
                                            const std::string& mapping) {
  for (const auto& verdict : verdicts) {
    if (verdict.mapping == mapping) return &verdict;
  }
  return nullptr;
}

TEST(TensorCoreMappingTest, VerdictsFollowDTypesAndComputeCapability) {
  const ir::Workload bf16 = MatMul(DType::kBF16, DType::kF32, {1, 512, 512, 512});
  const ir::Workload f16 = MatMul(DType::kF16, DType::kF32, {1, 512, 512, 512});
  const ir::Workload f32 = MatMul(DType::kF32, DType::kF32, {1, 512, 512, 512});

  auto verdicts = kernels::ExplainMappings(bf16, target::CudaArchPreset(90));
  const auto* wgmma = FindVerdict(verdicts, "wgmma");
  const auto* wmma = FindVerdict(verdicts, "wmma");
  ASSERT_NE(wgmma, nullptr);
  ASSERT_NE(wmma, nullptr);
  EXPECT_TRUE(wgmma->applies) << wgmma->reason;
  EXPECT_TRUE(wmma->applies) << wmma->reason;
  EXPECT_LT(wgmma, wmma) << "wgmma is registered before wmma";

  verdicts = kernels::ExplainMappings(bf16, target::CudaArchPreset(80));
  ASSERT_NE(FindVerdict(verdicts, "wgmma"), nullptr);
  EXPECT_FALSE(FindVerdict(verdicts, "wgmma")->applies);
  EXPECT_NE(FindVerdict(verdicts, "wgmma")->reason.find("9.0"), std::string::npos)
      << FindVerdict(verdicts, "wgmma")->reason;
  EXPECT_TRUE(FindVerdict(verdicts, "wmma")->applies);

  verdicts = kernels::ExplainMappings(bf16, target::CudaArchPreset(100));
  EXPECT_FALSE(FindVerdict(verdicts, "wgmma")->applies) << "wgmma is Hopper-only";

  verdicts = kernels::ExplainMappings(bf16, target::CudaArchPreset(75));
  EXPECT_FALSE(FindVerdict(verdicts, "wmma")->applies);
  EXPECT_NE(FindVerdict(verdicts, "wmma")->reason.find("8.0"), std::string::npos)
      << FindVerdict(verdicts, "wmma")->reason;
  verdicts = kernels::ExplainMappings(f16, target::CudaArchPreset(75));
  EXPECT_TRUE(FindVerdict(verdicts, "wmma")->applies) << FindVerdict(verdicts, "wmma")->reason;

  verdicts = kernels::ExplainMappings(f32, target::CudaArchPreset(90));
  for (const char* mapping : {"wgmma", "wmma"}) {
    const auto* verdict = FindVerdict(verdicts, mapping);
    ASSERT_NE(verdict, nullptr) << mapping;
    EXPECT_FALSE(verdict->applies);
    EXPECT_NE(verdict->reason.find("f16 or bf16"), std::string::npos) << verdict->reason;
    EXPECT_NE(verdict->reason.find("TF32"), std::string::npos) << verdict->reason;
  }

  // CPU workers never see CUDA mappings.
  EXPECT_EQ(FindVerdict(kernels::ExplainMappings(bf16, target::HardwareInfo{}), "wmma"), nullptr);
}

TEST(TensorCoreMappingTest, PrunesOversizeTilesByRule) {
  const ir::Workload w = MatMul(DType::kBF16, DType::kF32, {1, 512, 512, 512});
  const schedule::Sketch* wmma = kernels::SketchByName("cuda_mm_wmma/v1");
  const schedule::Sketch* wgmma = kernels::SketchByName("cuda_mm_wgmma/v1");
  ASSERT_NE(wmma, nullptr);
  ASSERT_NE(wgmma, nullptr);
  const target::HardwareInfo a100 = target::CudaArchPreset(80);
  const target::HardwareInfo h100 = target::CudaArchPreset(90);
  // bm bn bk wm wn stages: 4 stages of 256x64 + 64x256 tiles need 276 KiB.
  EXPECT_STREQ(wmma->PruneRule(w, a100, {256, 256, 64, 64, 64, 4}), "shared_memory");
  EXPECT_STREQ(wmma->PruneRule(w, a100, {32, 64, 32, 64, 32, 3}), "warp_tile");
  EXPECT_EQ(wmma->PruneRule(w, a100, {128, 128, 32, 64, 32, 3}), nullptr);
  // bm bn bk wg stages: two m64 tiles of n256 per warpgroup need 256 accumulators per thread.
  EXPECT_STREQ(wgmma->PruneRule(w, h100, {256, 256, 64, 2, 3}), "register_file");
  EXPECT_STREQ(wgmma->PruneRule(w, h100, {256, 256, 64, 2, 5}), "shared_memory");
  EXPECT_STREQ(wgmma->PruneRule(w, h100, {64, 128, 64, 2, 4}), "warpgroup_tile");
  EXPECT_EQ(wgmma->PruneRule(w, h100, {128, 256, 64, 2, 4}), nullptr);

  const ir::Workload tiny = MatMul(DType::kBF16, DType::kF32, {1, 5, 7, 3});
  EXPECT_STREQ(wgmma->PruneRule(tiny, h100, {128, 64, 64, 2, 3}), "exceeds_shape");
  EXPECT_STREQ(wmma->PruneRule(tiny, a100, {64, 32, 16, 16, 16, 2}), "exceeds_shape");
  EXPECT_EQ(wmma->PruneRule(tiny, a100, {32, 32, 16, 16, 16, 2}), nullptr);
}

TEST(TensorCoreMappingTest, FirstKnobValuesAreTheDefaultForTypicalShapes) {
  for (const ir::Workload& w : {MatMul(DType::kBF16, DType::kF32, {1, 512, 512, 512}),
                                MatMul(DType::kF16, DType::kF32, {1, 197, 2304, 768}),
                                MatMul(DType::kBF16, DType::kBF16, {8, 1024, 1024, 1024})}) {
    for (const auto& [sm, mapping] :
         std::vector<std::pair<int, std::string>>{{80, "wmma"}, {90, "wmma"}, {90, "wgmma"}}) {
      absl::StatusOr<schedule::SearchSpace> space =
          kernels::CreateSpaceForMapping(w, target::CudaArchPreset(sm), mapping);
      ASSERT_TRUE(space.ok()) << space.status();
      const schedule::Trace t = space->DefaultTrace();
      for (size_t knob_idx = 0; knob_idx < space->knobs().size(); ++knob_idx) {
        EXPECT_EQ(t.decisions[knob_idx].second, space->knobs()[knob_idx].values.front())
            << mapping << " sm_" << sm << " " << w.Description() << ": " << t.ToString();
      }
    }
  }
}

TEST(TensorCoreMappingTest, PlansMatchKnobs) {
  const ir::Workload w = MatMul(DType::kBF16, DType::kF32, {4, 300, 200, 128, true, false});
  absl::StatusOr<schedule::SearchSpace> space =
      kernels::CreateSpaceForMapping(w, target::CudaArchPreset(90), "wgmma");
  ASSERT_TRUE(space.ok()) << space.status();
  absl::StatusOr<schedule::CudaPlan> plan = kernels::PlanCudaSchedule(w, space->DefaultTrace());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->arch, "sm_90a");
  EXPECT_TRUE(plan->tensor_core);
  EXPECT_EQ(plan->grid_z, 4);
  EXPECT_EQ(plan->grid_y, (300 + plan->tile_m - 1) / plan->tile_m);
  EXPECT_EQ(plan->grid_x, (200 + plan->tile_n - 1) / plan->tile_n);
  EXPECT_EQ(plan->dynamic_shared_bytes % 1024, 0);
  EXPECT_EQ(plan->tile_k, 64);
}

TEST(TensorCoreMappingTest, CopiesElementsOnlyForUnalignedOperands) {
  for (const char* mapping : {"wmma", "wgmma"}) {
    const target::HardwareInfo hw = target::CudaArchPreset(90);
    // K = 512 (rows of A and of B^T are 16-byte multiples) vs K = 197 (they are not).
    for (const int64_t k : {512, 197}) {
      const ir::Workload w =
          MatMul(DType::kBF16, DType::kF32, {2, 256, 256, k, true, true, false, true});
      absl::StatusOr<schedule::SearchSpace> space = kernels::CreateSpaceForMapping(w, hw, mapping);
      ASSERT_TRUE(space.ok()) << space.status();
      absl::StatusOr<CudaKernel> kernel = Generate(w, space->DefaultTrace());
      ASSERT_TRUE(kernel.ok()) << kernel.status();
      const bool element_copies = kernel->source.find("src[(long long)gr") != std::string::npos;
      EXPECT_EQ(element_copies, k % 8 != 0) << mapping << " K=" << k;
      EXPECT_EQ(kernel->plan.vector_width, k % 8 == 0 ? 8 : 1);
    }
  }
}

TEST(TensorCoreMappingTest, GeneratorRejectsValuesOutsideTheSketch) {
  const ir::Workload w = MatMul(DType::kBF16, DType::kF32, {1, 512, 512, 512});
  schedule::Trace t;
  t.sketch = "cuda_mm_wgmma/v1";
  t.decisions = {{"bm", 96}, {"bn", 128}, {"bk", 64}, {"wg", 1}, {"stages", 4}};
  EXPECT_EQ(GenerateCudaKernel(w, t, "k").status().code(), absl::StatusCode::kInvalidArgument);
  t.sketch = "cuda_mm_wmma/v1";
  t.decisions = {{"bm", 64}, {"bn", 64}, {"bk", 32}, {"wm", 128}, {"wn", 32}, {"stages", 3}};
  EXPECT_EQ(GenerateCudaKernel(w, t, "k").status().code(), absl::StatusCode::kInvalidArgument);
}

struct CompileCase {
  std::string mapping;
  int sm;
  std::string arch;  ///< used when the plan names none
  const char* instruction;
};

/// Generates the default and `samples` random traces of `mapping` for every compile workload
/// and compiles them with NVRTC and checks the ptxas resource report against the device.
void GenerateAndCompile(const CompileCase& c, DType input, int samples) {
  GTCO_REQUIRE_NVRTC();
  const target::HardwareInfo hw = target::CudaArchPreset(c.sm);
  std::mt19937_64 rng(1234 + c.sm);
  for (const ir::Workload& w : CompileWorkloads(input)) {
    absl::StatusOr<schedule::SearchSpace> space = kernels::CreateSpaceForMapping(w, hw, c.mapping);
    ASSERT_TRUE(space.ok()) << space.status();
    std::vector<schedule::Trace> traces = {space->DefaultTrace()};
    for (int sample = 0; sample < samples; ++sample) traces.push_back(space->Sample(rng));
    for (size_t trace_idx = 0; trace_idx < traces.size(); ++trace_idx) {
      const schedule::Trace& t = traces[trace_idx];
      SCOPED_TRACE(w.Description() + " " + t.ToString() + " sm_" + std::to_string(c.sm));
      absl::StatusOr<CudaKernel> kernel = Generate(w, t);
      ASSERT_TRUE(kernel.ok()) << kernel.status();
      EXPECT_NE(kernel->source.find(c.instruction), std::string::npos);
      const std::string arch = kernel->plan.arch.empty() ? c.arch : kernel->plan.arch;
      absl::StatusOr<CompiledCuda> compiled = CompileCuda(kernel->source, kernel->entry, arch);
      ASSERT_TRUE(compiled.ok()) << compiled.status();
      const CudaResourceUsage& usage = compiled->usage;
      const int64_t threads = kernel->plan.Threads();
      EXPECT_GT(usage.registers, 0) << compiled->log;
      EXPECT_LE(usage.registers, 255);
      EXPECT_LE(usage.registers * threads, hw.registers_per_block);
      EXPECT_LE(usage.static_shared_bytes + kernel->plan.dynamic_shared_bytes,
                hw.shared_bytes_per_block);
      // ptxas falls back to serialized wgmma when accumulators are touched while in flight.
      EXPECT_EQ(compiled->log.find("serializ"), std::string::npos) << compiled->log;
      if (trace_idx == 0) {
        EXPECT_EQ(usage.spill_store_bytes + usage.spill_load_bytes, 0) << compiled->log;
      }
      std::printf("[ %s %s ] %-60s %-48s regs %3d (est %3d) spills %lld/%lld  %.2fs\n",
                  c.mapping.c_str(), arch.c_str(), w.Description().c_str(), t.ToString().c_str(),
                  usage.registers, kernel->plan.est_registers,
                  static_cast<long long>(usage.spill_store_bytes),
                  static_cast<long long>(usage.spill_load_bytes), compiled->compile_seconds);
    }
  }
}

constexpr int kSamples = 3;

TEST(TensorCoreCompileTest, WmmaF16OnSm80) {
  GenerateAndCompile({"wmma", 80, "sm_80", "wmma.mma.sync"}, DType::kF16, kSamples);
}
TEST(TensorCoreCompileTest, WmmaBf16OnSm80) {
  GenerateAndCompile({"wmma", 80, "sm_80", "wmma.mma.sync"}, DType::kBF16, kSamples);
}
TEST(TensorCoreCompileTest, WmmaBf16OnSm90) {
  GenerateAndCompile({"wmma", 90, "sm_90", "wmma.mma.sync"}, DType::kBF16, 1);
}
TEST(TensorCoreCompileTest, WgmmaF16OnSm90a) {
  GenerateAndCompile({"wgmma", 90, "sm_90", "wgmma.mma_async"}, DType::kF16, kSamples);
}
TEST(TensorCoreCompileTest, WgmmaBf16OnSm90a) {
  GenerateAndCompile({"wgmma", 90, "sm_90", "wgmma.mma_async"}, DType::kBF16, kSamples);
}

}  // namespace
}  // namespace gtco::kernels
