// The fused-attention CUDA sketch "cuda_attention/v1" (mapping "flash"): verdicts, pruning, plans,
// and kernels that compile with NVRTC for sm_80 and sm_90 within their resource budget (the
// compile tests skip cleanly in builds without NVRTC).
#include <gtest/gtest.h>

#include <random>

#include "absl/strings/str_cat.h"
#include "common/codegen/cuda/nvrtc.h"
#include "common/ir/attention.h"
#include "common/kernels/build_program.h"
#include "common/kernels/registry.h"
#include "common/schedule/cuda_sketch.h"
#include "common/schedule/space.h"
#include "common/target/target.h"
#include "tests/unit/codegen_cuda/nvrtc_required.h"

namespace gtco {
namespace {

constexpr int kSamples = 8;

ir::Workload Attention(int64_t batch, int64_t seq_q, int64_t seq_k, int64_t head_dim,
                       int64_t value_dim, float scale, bool k_transposed = false,
                       ir::DType dtype = ir::DType::kF32, ir::DType out = ir::DType::kF32) {
  ir::AttentionParams p;
  p.batch = batch;
  p.seq_q = seq_q;
  p.seq_k = seq_k;
  p.head_dim = head_dim;
  p.value_dim = value_dim;
  p.scale = scale;
  p.k_transposed = k_transposed;
  return ir::MakeAttentionWorkload(p, dtype, out);
}

/// The three shapes of the brief: ViT-B/16 (12 heads x 197 tokens), a square 128-token one, and
/// a transposed-K cross attention whose lengths are no multiple of any tile.
std::vector<ir::Workload> MainWorkloads() {
  return {Attention(12, 197, 197, 64, 64, 0.125f), Attention(4, 128, 128, 64, 64, 0.125f),
          Attention(2, 50, 77, 32, 32, 0.17677669f, /*k_transposed=*/true)};
}

const schedule::Sketch& AttentionSketch() {
  const schedule::Sketch* sketch = kernels::SketchByName("cuda_attention/v1");
  EXPECT_NE(sketch, nullptr);
  return *sketch;
}

schedule::KnobValues Values(const schedule::Trace& trace) {
  schedule::KnobValues values;
  for (const auto& decision : trace.decisions) values.push_back(decision.second);
  return values;
}

/// Generates and compiles `trace` for `hw`; checks registers, shared memory and (when
/// `expect_no_spills`) spills against the budget. Returns the registers ptxas reports.
int ExpectCompilesWithinBudget(const ir::Workload& w, const schedule::Trace& trace,
                               const target::HardwareInfo& hw, bool expect_no_spills) {
  SCOPED_TRACE(absl::StrCat(w.Description(), " / ", trace.ToString(), " / sm_", hw.SmVersion()));
  absl::StatusOr<kernels::CudaKernel> kernel = kernels::GenerateCudaKernel(w, trace, "attention");
  EXPECT_TRUE(kernel.ok()) << kernel.status();
  if (!kernel.ok()) return 0;
  absl::StatusOr<codegen::CompiledCuda> compiled =
      codegen::CompileCuda(kernel->source, kernel->entry, absl::StrCat("sm_", hw.SmVersion()));
  EXPECT_TRUE(compiled.ok()) << compiled.status() << "\n" << kernel->source;
  if (!compiled.ok()) return 0;
  const codegen::CudaResourceUsage& usage = compiled->usage;
  const int64_t threads = kernel->plan.Threads();
  EXPECT_GT(usage.registers, 0) << compiled->log;
  EXPECT_LE(usage.registers, 255);
  EXPECT_LE(int64_t{usage.registers} * threads, hw.registers_per_block)
      << usage.registers << " registers x " << threads << " threads";
  EXPECT_LE(usage.static_shared_bytes + kernel->plan.dynamic_shared_bytes,
            hw.shared_bytes_per_block);
  if (expect_no_spills) {
    EXPECT_EQ(usage.spill_store_bytes, 0) << compiled->log;
    EXPECT_EQ(usage.spill_load_bytes, 0) << compiled->log;
  }
  return usage.registers;
}

TEST(CudaAttentionVerdictTest, FlashAppliesOnCudaOnly) {
  const ir::Workload w = MainWorkloads()[0];
  for (int sm : {80, 90}) {
    const std::vector<schedule::MappingVerdict> verdicts =
        kernels::ExplainMappings(w, target::CudaArchPreset(sm));
    ASSERT_EQ(verdicts.size(), 1u);
    EXPECT_EQ(verdicts[0].mapping, "flash");
    EXPECT_TRUE(verdicts[0].applies) << verdicts[0].reason;
    absl::StatusOr<schedule::SearchSpace> space =
        kernels::CreateSpace(w, target::CudaArchPreset(sm));
    ASSERT_TRUE(space.ok()) << space.status();
    EXPECT_EQ(space->mapping(), "flash");
    EXPECT_EQ(space->sketch_name(), "cuda_attention/v1");
  }
  // CPU workers have no attention mapping: the planner only fuses attention for "cuda".
  target::HardwareInfo cpu;
  EXPECT_TRUE(kernels::ExplainMappings(w, cpu).empty());
  absl::StatusOr<schedule::SearchSpace> on_cpu = kernels::CreateSpace(w, cpu);
  EXPECT_EQ(on_cpu.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(on_cpu.status().message().find("'attention' on target 'cpu'"), std::string::npos)
      << on_cpu.status();
}

TEST(CudaAttentionVerdictTest, OldGpusAndHugeHeadsAreRefusedWithAReason) {
  const std::vector<schedule::MappingVerdict> pascal =
      kernels::ExplainMappings(MainWorkloads()[0], target::CudaArchPreset(61));
  ASSERT_EQ(pascal.size(), 1u);
  EXPECT_FALSE(pascal[0].applies);
  EXPECT_NE(pascal[0].reason.find("compute capability 7.0"), std::string::npos) << pascal[0].reason;
  const ir::Workload huge = Attention(2, 64, 64, 320, 64, 0.05f);
  const std::vector<schedule::MappingVerdict> verdicts =
      kernels::ExplainMappings(huge, target::CudaArchPreset(90));
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_FALSE(verdicts[0].applies);
  EXPECT_NE(verdicts[0].reason.find("exceed 256"), std::string::npos) << verdicts[0].reason;
  absl::StatusOr<schedule::SearchSpace> space =
      kernels::CreateSpaceForMapping(huge, target::CudaArchPreset(90), "flash");
  EXPECT_EQ(space.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CudaAttentionPruneTest, ResourceRulesComeFirstThenTheSketchRules) {
  const schedule::Sketch& sketch = AttentionSketch();
  const target::HardwareInfo a100 = target::CudaArchPreset(80);
  const target::HardwareInfo h100 = target::CudaArchPreset(90);
  // head_dim 256 with 128-row tiles: over the A100's shared memory, within the H100's.
  const ir::Workload wide = Attention(64, 512, 512, 256, 256, 0.0625f);
  EXPECT_STREQ(sketch.PruneRule(wide, a100, {128, 64, 8, 4}), "shared_memory");
  EXPECT_STREQ(sketch.PruneRule(wide, a100, {128, 128, 8, 4}), "shared_memory");
  EXPECT_EQ(sketch.PruneRule(wide, h100, {64, 32, 8, 4}), nullptr);
  // One warp holding a 128 x 128 tile of scores and a 128 x 256 output: too many registers.
  EXPECT_STREQ(sketch.PruneRule(wide, h100, {128, 32, 1, 4}), "register_file");
  // vw = 4 cannot read rows of 6 elements (nor 2 x 4 = 8 with vw = 8: f32 has no 8).
  const ir::Workload narrow = Attention(64, 256, 256, 6, 6, 0.4f);
  EXPECT_STREQ(sketch.PruneRule(narrow, h100, {64, 64, 4, 4}), "alignment");
  EXPECT_EQ(sketch.PruneRule(narrow, h100, {64, 64, 4, 2}), nullptr);
  // K transposed with seq_k = 77 and head_dim 32: vw = 4 still helps Q and V.
  const ir::Workload cross = MainWorkloads()[2];
  EXPECT_EQ(sketch.PruneRule(cross, h100, {16, 32, 4, 4}), nullptr);
  // 50 query rows: a 128-row tile is mostly empty; 40 keys: a 128-key tile likewise.
  EXPECT_STREQ(sketch.PruneRule(cross, h100, {128, 32, 4, 4}), "exceeds_shape");
  const ir::Workload short_keys = Attention(8, 256, 40, 32, 32, 0.2f);
  EXPECT_STREQ(sketch.PruneRule(short_keys, h100, {16, 128, 4, 4}), "exceeds_shape");
  EXPECT_EQ(sketch.PruneRule(short_keys, h100, {16, 64, 4, 4}), nullptr);
  // 4 x 128 rows in 64-row blocks: 8 blocks for 132 SMs.
  const ir::Workload square = MainWorkloads()[1];
  EXPECT_STREQ(sketch.PruneRule(square, h100, {64, 64, 4, 4}), "too_small_to_parallelize");
  EXPECT_EQ(sketch.PruneRule(square, h100, {16, 64, 4, 4}), nullptr);

  absl::StatusOr<schedule::SearchSpace> space = kernels::CreateSpaceForMapping(wide, a100, "flash");
  ASSERT_TRUE(space.ok()) << space.status();
  const schedule::PruneStats& stats = space->prune_stats();
  EXPECT_EQ(stats.considered, 4 * 4 * 4 * 3);
  EXPECT_GT(stats.admitted, 0);
  EXPECT_GT(stats.pruned_by_rule.count("shared_memory"), 0u);
  EXPECT_GT(stats.pruned_by_rule.count("register_file"), 0u);
}

TEST(CudaAttentionPlanTest, DefaultTraceIsTheFirstKnobValuesAndPlansConsistently) {
  for (int sm : {80, 90}) {
    const target::HardwareInfo hw = target::CudaArchPreset(sm);
    for (const ir::Workload& w : MainWorkloads()) {
      SCOPED_TRACE(absl::StrCat(w.Description(), " sm_", sm));
      absl::StatusOr<schedule::SearchSpace> space = kernels::CreateSpaceForMapping(w, hw, "flash");
      ASSERT_TRUE(space.ok()) << space.status();
      const schedule::Trace trace = space->DefaultTrace();
      const schedule::KnobValues values = Values(trace);
      for (size_t knob_idx = 0; knob_idx < values.size(); ++knob_idx) {
        EXPECT_EQ(values[knob_idx], space->knobs()[knob_idx].values.front());
      }
      absl::StatusOr<schedule::CudaPlan> plan = kernels::PlanCudaSchedule(w, trace);
      ASSERT_TRUE(plan.ok()) << plan.status();
      const int64_t bq = values[0], bk = values[1], warps = values[2];
      EXPECT_EQ(plan->grid_x, w.attention.batch * ((w.attention.seq_q + bq - 1) / bq));
      EXPECT_EQ(plan->Threads(), warps * 32);
      EXPECT_EQ(bq % plan->block_y, 0);
      EXPECT_EQ(bk % plan->block_x, 0);
      EXPECT_EQ(plan->tile_m, bq);
      EXPECT_EQ(plan->tile_n, bk);
      EXPECT_EQ(plan->tile_k, w.attention.head_dim);
      EXPECT_GE(plan->dynamic_shared_bytes, 4 * (bq + 2 * bk) * w.attention.head_dim);
      EXPECT_LE(plan->dynamic_shared_bytes, hw.shared_bytes_per_block);
      EXPECT_EQ(schedule::CudaResourceRule(hw, *plan), nullptr);
    }
  }
}

TEST(CudaAttentionCodegenTest, RejectsTracesOfOtherShapesOrSketches) {
  const ir::Workload w = MainWorkloads()[0];
  schedule::Trace trace{"cuda_attention/v1", {{"bq", 64}, {"bk", 64}, {"warps", 4}, {"vw", 4}}};
  EXPECT_TRUE(kernels::GenerateCudaKernel(w, trace, "k").ok());
  schedule::Trace bad_tile = trace;
  bad_tile.decisions[0].second = 48;
  EXPECT_EQ(kernels::GenerateCudaKernel(w, bad_tile, "k").status().code(),
            absl::StatusCode::kInvalidArgument);
  schedule::Trace missing = trace;
  missing.decisions.pop_back();
  EXPECT_EQ(kernels::GenerateCudaKernel(w, missing, "k").status().code(),
            absl::StatusCode::kInvalidArgument);
  ir::Workload softmax;
  softmax.anchor = ir::AnchorKind::kSoftmax;
  softmax.row.rows = 4;
  softmax.row.cols = 8;
  softmax.inputs = {{ir::DType::kF32, {4, 8}}};
  softmax.num_anchor_inputs = 1;
  softmax.output = {ir::DType::kF32, {4, 8}};
  EXPECT_EQ(kernels::GenerateCudaKernel(softmax, trace, "k").status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<kernels::CudaKernel> kernel = kernels::GenerateCudaKernel(w, trace, "k");
  ASSERT_TRUE(kernel.ok());
  EXPECT_NE(kernel->source.find("__launch_bounds__(128, 1) k("), std::string::npos);
  EXPECT_NE(kernel->source.find("exp2f"), std::string::npos);
  EXPECT_NE(kernel->source.find("extern __shared__"), std::string::npos);
}

class CudaAttentionCompileTest : public testing::TestWithParam<int> {};

TEST_P(CudaAttentionCompileTest, DefaultAndSampledTracesCompileWithinBudget) {
  GTCO_REQUIRE_NVRTC();
  const target::HardwareInfo hw = target::CudaArchPreset(GetParam());
  std::mt19937_64 rng(GetParam());
  for (const ir::Workload& w : MainWorkloads()) {
    absl::StatusOr<schedule::SearchSpace> space = kernels::CreateSpaceForMapping(w, hw, "flash");
    ASSERT_TRUE(space.ok()) << space.status();
    const schedule::Trace trace = space->DefaultTrace();
    const int registers = ExpectCompilesWithinBudget(w, trace, hw, /*expect_no_spills=*/true);
    // The plan's register estimate is realistic (within a factor of 1.5 either way).
    absl::StatusOr<schedule::CudaPlan> plan = kernels::PlanCudaSchedule(w, trace);
    ASSERT_TRUE(plan.ok());
    EXPECT_LE(registers, plan->est_registers * 3 / 2) << w.Description();
    EXPECT_GE(registers, plan->est_registers * 2 / 3) << w.Description();
    for (int sample = 0; sample < kSamples; ++sample) {
      ExpectCompilesWithinBudget(w, space->Sample(rng), hw, /*expect_no_spills=*/false);
    }
  }
}

TEST_P(CudaAttentionCompileTest, OddHeadDimsLowPrecisionAndEpiloguesCompile) {
  GTCO_REQUIRE_NVRTC();
  const target::HardwareInfo hw = target::CudaArchPreset(GetParam());
  ir::Workload biased = Attention(3, 33, 45, 40, 24, 0.15811388f);
  biased.inputs.push_back({ir::DType::kF32, {24}});
  biased.epilogue = {ir::EwInstr{ir::EwOp::kAdd,
                                 {ir::Operand{}, ir::Operand{ir::Operand::Kind::kInput, 3, 0.0f}}}};
  const std::vector<ir::Workload> workloads = {
      Attention(2, 20, 31, 6, 10, 0.4f, /*k_transposed=*/true),
      Attention(8, 100, 100, 80, 80, 0.11180340f),
      Attention(2, 64, 96, 256, 256, 0.0625f),
      Attention(4, 77, 77, 64, 64, 0.125f, false, ir::DType::kF16, ir::DType::kF16),
      Attention(4, 77, 77, 64, 64, 0.125f, true, ir::DType::kBF16, ir::DType::kF32),
      biased};
  std::mt19937_64 rng(GetParam() + 1);
  for (const ir::Workload& w : workloads) {
    ASSERT_TRUE(w.Validate().ok()) << w.Validate();
    absl::StatusOr<schedule::SearchSpace> space = kernels::CreateSpaceForMapping(w, hw, "flash");
    ASSERT_TRUE(space.ok()) << w.Description() << ": " << space.status();
    ExpectCompilesWithinBudget(w, space->DefaultTrace(), hw, /*expect_no_spills=*/true);
    ExpectCompilesWithinBudget(w, space->Sample(rng), hw, /*expect_no_spills=*/false);
  }
}

INSTANTIATE_TEST_SUITE_P(Arch, CudaAttentionCompileTest, testing::Values(80, 90),
                         [](const testing::TestParamInfo<int>& info) {
                           return absl::StrCat("sm", info.param);
                         });

}  // namespace
}  // namespace gtco
