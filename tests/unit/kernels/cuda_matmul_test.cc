// CUDA matmul mappings "simt", "tf32_mma", "tf32_mma_split" and "mma_sync": verdicts, pruning rules, default
// traces, and generated kernels (default trace plus random samples) that compile with NVRTC for
// sm_80 and sm_90 within the device's resource budget.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/codegen/cuda/nvrtc.h"
#include "common/kernels/build_program.h"
#include "common/kernels/cuda/matmul_mma/generator.h"
#include "common/kernels/cuda/matmul_simt/generator.h"
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

struct Shape {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  bool trans_a = false, trans_b = false;
  bool a_batched = false, b_batched = false;
};

ir::Workload MatMul(DType input, DType output, const Shape& s) {
  ir::Workload w;
  w.anchor = ir::AnchorKind::kMatMul;
  w.matmul.batch = s.batch;
  w.matmul.m = s.m;
  w.matmul.n = s.n;
  w.matmul.k = s.k;
  w.matmul.trans_a = s.trans_a;
  w.matmul.trans_b = s.trans_b;
  w.matmul.a_batched = s.a_batched;
  w.matmul.b_batched = s.b_batched;
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

const Shape kSquare{1, 512, 512, 512};
const Shape kMlp{1, 197, 2304, 768};
/// Attention scores Q x K^T: 12 heads.
const Shape kScores{12, 197, 197, 64, false, true, true, true};
/// Attention probabilities x values: K = 197 is odd (no vector copies of A).
const Shape kValues{12, 197, 64, 197, false, false, true, true};
const Shape kTiny{1, 5, 7, 3};
const Shape kTransA{1, 256, 96, 128, true, false};

const schedule::MappingVerdict* FindVerdict(const std::vector<schedule::MappingVerdict>& verdicts,
                                            const std::string& mapping) {
  for (const auto& verdict : verdicts) {
    if (verdict.mapping == mapping) return &verdict;
  }
  return nullptr;
}

const schedule::MappingSketch* FindMapping(const std::string& name) {
  for (const schedule::MappingSketch* mapping : kernels::MappingRegistry()) {
    if (name == mapping->Name() && mapping->Target() == target::Target::kCuda) return mapping;
  }
  return nullptr;
}

TEST(CudaMatMulMappingTest, VerdictsFollowDTypesAndComputeCapability) {
  const ir::Workload f32 = MatMul(DType::kF32, DType::kF32, kSquare);
  const ir::Workload bf16 = MatMul(DType::kBF16, DType::kBF16, kSquare);
  for (int sm : {80, 90}) {
    const auto verdicts = kernels::ExplainMappings(f32, target::CudaArchPreset(sm));
    for (const char* mapping : {"simt", "tf32_mma"}) {
      const auto* verdict = FindVerdict(verdicts, mapping);
      ASSERT_NE(verdict, nullptr) << mapping;
      EXPECT_TRUE(verdict->applies) << mapping << ": " << verdict->reason;
    }
    const auto* mma = FindVerdict(verdicts, "mma_sync");
    ASSERT_NE(mma, nullptr);
    EXPECT_FALSE(mma->applies);
    EXPECT_NE(mma->reason.find("f16 or bf16"), std::string::npos) << mma->reason;

    const auto bf16_verdicts = kernels::ExplainMappings(bf16, target::CudaArchPreset(sm));
    EXPECT_TRUE(FindVerdict(bf16_verdicts, "mma_sync")->applies);
    EXPECT_TRUE(FindVerdict(bf16_verdicts, "simt")->applies)
        << FindVerdict(bf16_verdicts, "simt")->reason;
    const auto* tf32 = FindVerdict(bf16_verdicts, "tf32_mma");
    EXPECT_FALSE(tf32->applies);
    EXPECT_NE(tf32->reason.find("f32"), std::string::npos) << tf32->reason;
  }

  // Volta: SIMT only; Pascal: nothing.
  auto verdicts = kernels::ExplainMappings(f32, target::CudaArchPreset(70));
  EXPECT_TRUE(FindVerdict(verdicts, "simt")->applies);
  EXPECT_FALSE(FindVerdict(verdicts, "tf32_mma")->applies);
  EXPECT_NE(FindVerdict(verdicts, "tf32_mma")->reason.find("8.0"), std::string::npos)
      << FindVerdict(verdicts, "tf32_mma")->reason;
  verdicts = kernels::ExplainMappings(bf16, target::CudaArchPreset(75));
  EXPECT_FALSE(FindVerdict(verdicts, "mma_sync")->applies);
  verdicts = kernels::ExplainMappings(f32, target::CudaArchPreset(60));
  EXPECT_FALSE(FindVerdict(verdicts, "simt")->applies);
  EXPECT_NE(FindVerdict(verdicts, "simt")->reason.find("7.0"), std::string::npos);

  // Integer matmuls have no CUDA mapping.
  ir::Workload u8 = MatMul(DType::kU8, DType::kI32, kSquare);
  verdicts = kernels::ExplainMappings(u8, target::CudaArchPreset(80));
  EXPECT_FALSE(FindVerdict(verdicts, "simt")->applies);
  EXPECT_NE(FindVerdict(verdicts, "simt")->reason.find("floating-point"), std::string::npos);

  // CPU workers never see CUDA mappings; asked directly, the mapping names the reason.
  EXPECT_EQ(FindVerdict(kernels::ExplainMappings(f32, target::HardwareInfo{}), "simt"), nullptr);
  for (const char* name : {"simt", "tf32_mma", "mma_sync"}) {
    const schedule::MappingSketch* mapping = FindMapping(name);
    ASSERT_NE(mapping, nullptr) << name;
    const schedule::MappingVerdict verdict = mapping->Explain(f32, target::HardwareInfo{});
    EXPECT_FALSE(verdict.applies);
    EXPECT_NE(verdict.reason.find("NVIDIA GPU"), std::string::npos) << verdict.reason;
  }
  EXPECT_FALSE(kernels::CreateSpaceForMapping(bf16, target::CudaArchPreset(80), "tf32_mma").ok());
}

TEST(CudaMatMulMappingTest, PrunesByNamedRules) {
  const target::HardwareInfo a100 = target::CudaArchPreset(80);
  const schedule::Sketch* simt = kernels::SketchByName("cuda_mm_simt/v1");
  const schedule::Sketch* tf32 = kernels::SketchByName("cuda_mm_tf32/v1");
  const schedule::Sketch* mma = kernels::SketchByName("cuda_mm_mma/v1");
  ASSERT_NE(simt, nullptr);
  ASSERT_NE(tf32, nullptr);
  ASSERT_NE(mma, nullptr);
  const ir::Workload f32 = MatMul(DType::kF32, DType::kF32, kSquare);
  const ir::Workload bf16 = MatMul(DType::kBF16, DType::kF32, kSquare);
  const ir::Workload tiny = MatMul(DType::kF32, DType::kF32, kTiny);
  // simt: bm bn bk tm tn stages vw_a vw_b.
  EXPECT_EQ(simt->PruneRule(f32, a100, {128, 128, 8, 8, 8, 1, 4, 4}), nullptr);
  EXPECT_STREQ(simt->PruneRule(tiny, a100, {128, 32, 8, 4, 4, 1, 1, 1}), "exceeds_shape");
  EXPECT_EQ(simt->PruneRule(tiny, a100, {32, 32, 8, 4, 4, 1, 1, 1}), nullptr);
  EXPECT_STREQ(simt->PruneRule(tiny, a100, {32, 32, 8, 4, 4, 1, 4, 1}), "alignment");
  EXPECT_STREQ(simt->PruneRule(f32, a100, {32, 32, 8, 8, 8, 1, 4, 4}), "threads_per_block");
  // cp.async cannot transpose 16-byte vectors of the k-contiguous A, nor convert bf16.
  EXPECT_STREQ(simt->PruneRule(f32, a100, {128, 128, 8, 8, 8, 3, 4, 4}), "async_copy");
  EXPECT_EQ(simt->PruneRule(f32, a100, {128, 128, 8, 8, 8, 3, 1, 4}), nullptr);
  EXPECT_STREQ(simt->PruneRule(bf16, a100, {128, 128, 8, 8, 8, 2, 1, 8}), "async_copy");
  // tf32 / mma: bm bn bk wm wn stages. Four stages of 256x256 tiles need ~290 KiB.
  EXPECT_STREQ(tf32->PruneRule(f32, a100, {256, 256, 32, 64, 64, 4}), "shared_memory");
  EXPECT_EQ(tf32->PruneRule(f32, a100, {128, 128, 32, 64, 64, 3}), nullptr);
  EXPECT_STREQ(tf32->PruneRule(tiny, a100, {64, 32, 16, 16, 16, 2}), "exceeds_shape");
  EXPECT_EQ(tf32->PruneRule(tiny, a100, {32, 32, 16, 16, 16, 2}), nullptr);
  EXPECT_STREQ(tf32->PruneRule(tiny, a100, {32, 32, 16, 16, 16, 3}), "exceeds_shape")
      << "a pipeline deeper than the K loop";
  EXPECT_STREQ(mma->PruneRule(bf16, a100, {32, 64, 32, 64, 32, 3}), "threads_per_block");
  EXPECT_EQ(mma->PruneRule(bf16, a100, {128, 128, 32, 64, 64, 3}), nullptr);

  absl::StatusOr<schedule::SearchSpace> space = kernels::CreateSpaceForMapping(tiny, a100, "simt");
  ASSERT_TRUE(space.ok()) << space.status();
  EXPECT_GT(space->prune_stats().pruned_by_rule.count("exceeds_shape"), 0u);
  EXPECT_GT(space->prune_stats().pruned_by_rule.count("alignment"), 0u);
}

TEST(CudaMatMulMappingTest, FirstKnobValuesAreAdmittedDefaults) {
  const std::vector<std::pair<ir::Workload, std::vector<std::string>>> cases = {
      {MatMul(DType::kF32, DType::kF32, kSquare), {"simt", "tf32_mma"}},
      {WithBiasGelu(MatMul(DType::kF32, DType::kF32, kMlp)), {"simt", "tf32_mma"}},
      {MatMul(DType::kF32, DType::kF32, kScores), {"simt", "tf32_mma"}},
      {MatMul(DType::kBF16, DType::kBF16, kSquare), {"simt", "mma_sync"}},
      {MatMul(DType::kBF16, DType::kF32, kValues), {"simt", "mma_sync"}}};
  for (const auto& [w, mappings] : cases) {
    for (int sm : {80, 90}) {
      for (const std::string& mapping : mappings) {
        SCOPED_TRACE(mapping + " sm_" + std::to_string(sm) + " " + w.Description());
        absl::StatusOr<schedule::SearchSpace> space =
            kernels::CreateSpaceForMapping(w, target::CudaArchPreset(sm), mapping);
        ASSERT_TRUE(space.ok()) << space.status();
        const schedule::Trace t = space->DefaultTrace();
        for (size_t knob_idx = 0; knob_idx < space->knobs().size(); ++knob_idx) {
          EXPECT_EQ(t.decisions[knob_idx].second, space->knobs()[knob_idx].values.front())
              << t.ToString();
        }
      }
    }
  }
}

TEST(CudaMatMulMappingTest, PlansMatchKnobs) {
  const ir::Workload w = MatMul(DType::kBF16, DType::kF32, kValues);
  schedule::Trace t;
  t.sketch = "cuda_mm_mma/v1";
  t.decisions = {{"bm", 64}, {"bn", 64}, {"bk", 32}, {"wm", 32}, {"wn", 32}, {"stages", 3}};
  absl::StatusOr<schedule::CudaPlan> plan = kernels::PlanCudaSchedule(w, t);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->tensor_core);
  EXPECT_EQ(plan->grid_x, 1);
  EXPECT_EQ(plan->grid_y, 4);
  EXPECT_EQ(plan->grid_z, 12);
  EXPECT_EQ(plan->Threads(), 128);
  // A [64][32 + 8] and B [32][64 + 8] bf16 per stage.
  EXPECT_EQ(plan->dynamic_shared_bytes, 3 * (64 * 40 + 32 * 72) * 2);
  EXPECT_EQ(plan->vector_width, 1) << "A rows of 197 bf16 are copied element by element";

  t.sketch = "cuda_mm_simt/v1";
  t.decisions = {{"bm", 64}, {"bn", 32},    {"bk", 16},  {"tm", 4},
                 {"tn", 4},  {"stages", 1}, {"vw_a", 1}, {"vw_b", 8}};
  plan = kernels::PlanCudaSchedule(w, t);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->tensor_core);
  EXPECT_EQ(plan->Threads(), 128);
  EXPECT_EQ(plan->grid_x, 2);
  EXPECT_EQ(plan->dynamic_shared_bytes, 2 * 16 * (68 + 36) * 4);
}

// The K split: grid x holds a cluster of `split` blocks per N tile, shared memory holds at least
// the f32 partial tile the cluster adds up, and the kernel is built for sm_90; a split that
// leaves a block no K tile is pruned; on sm_80 the mapping names the missing clusters' arch.
TEST(CudaMatMulMappingTest, SplitPlansClustersAlongK) {
  const ir::Workload w = WithBiasGelu(MatMul(DType::kF32, DType::kF32, {1, 197, 768, 3072}));
  schedule::Trace t;
  t.sketch = "cuda_mm_tf32_split/v1";
  t.decisions = {{"bm", 64}, {"bn", 128}, {"bk", 16},   {"wm", 32},
                 {"wn", 64}, {"stages", 2}, {"split", 8}};
  absl::StatusOr<schedule::CudaPlan> plan = kernels::PlanCudaSchedule(w, t);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->grid_x, 6 * 8);
  EXPECT_EQ(plan->grid_y, 4);
  EXPECT_EQ(plan->arch, "sm_90");
  EXPECT_EQ(plan->dynamic_shared_bytes, 64 * 128 * 4) << "the partial tile exceeds 2 stages";
  schedule::Trace whole = t;  // the same tiles without the split
  whole.sketch = "cuda_mm_tf32/v1";
  whole.decisions.pop_back();
  absl::StatusOr<schedule::CudaPlan> whole_plan = kernels::PlanCudaSchedule(w, whole);
  ASSERT_TRUE(whole_plan.ok()) << whole_plan.status();
  EXPECT_LT(whole_plan->dynamic_shared_bytes, 64 * 128 * 4);
  EXPECT_EQ(whole_plan->grid_x, 6);
  EXPECT_EQ(whole_plan->arch, "");
  absl::StatusOr<CudaKernel> kernel = GenerateCudaKernel(w, t, "k");
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_NE(kernel->source.find("__cluster_dims__(8, 1, 1)"), std::string::npos);
  // 192 K tiles in 8 slices of 24.
  EXPECT_NE(kernel->source.find("gtco_cluster_rank() * 24"), std::string::npos);

  const schedule::MappingSketch* split = FindMapping("tf32_mma_split");
  ASSERT_NE(split, nullptr);
  const target::HardwareInfo h100 = target::CudaArchPreset(90);
  const auto& sketch = split->sketch();
  EXPECT_EQ(sketch.PruneRule(w, h100, {64, 128, 32, 32, 64, 2, 8}), nullptr);
  const ir::Workload short_k = MatMul(DType::kF32, DType::kF32, {1, 197, 768, 96});
  EXPECT_STREQ(sketch.PruneRule(short_k, h100, {64, 128, 32, 32, 64, 2, 4}), "exceeds_shape")
      << "3 K tiles cannot feed 4 blocks";
  EXPECT_EQ(sketch.PruneRule(short_k, h100, {64, 128, 32, 32, 64, 2, 2}), nullptr);

  const schedule::MappingVerdict a100 = split->Explain(w, target::CudaArchPreset(80));
  EXPECT_FALSE(a100.applies);
  EXPECT_NE(a100.reason.find("9.0"), std::string::npos) << a100.reason;
  EXPECT_TRUE(split->Explain(w, h100).applies);
  // One K tile: nothing to split, and the f32 matmul keeps its other mappings.
  const ir::Workload one_tile = MatMul(DType::kF32, DType::kF32, {1, 1, 10, 16});
  const schedule::MappingVerdict short_verdict = split->Explain(one_tile, h100);
  EXPECT_FALSE(short_verdict.applies);
  EXPECT_NE(short_verdict.reason.find("one K tile"), std::string::npos) << short_verdict.reason;
  absl::StatusOr<std::vector<schedule::SearchSpace>> spaces =
      kernels::CreateMappingSpaces(one_tile, h100);
  ASSERT_TRUE(spaces.ok()) << spaces.status();
  EXPECT_EQ(spaces->size(), 2u) << "tf32_mma and simt";
  // Two tiles of 16: a split of 2 is admitted.
  const ir::Workload two_tiles = MatMul(DType::kF32, DType::kF32, {1, 1, 10, 32});
  EXPECT_TRUE(split->Explain(two_tiles, h100).applies);
  EXPECT_TRUE(kernels::CreateSpaceForMapping(two_tiles, h100, "tf32_mma_split").ok());
}

TEST(CudaMatMulMappingTest, GeneratorRejectsValuesOutsideTheSketch) {
  const ir::Workload w = MatMul(DType::kF32, DType::kF32, kSquare);
  schedule::Trace t;
  t.sketch = "cuda_mm_tf32/v1";
  t.decisions = {{"bm", 96}, {"bn", 128}, {"bk", 32}, {"wm", 32}, {"wn", 32}, {"stages", 3}};
  EXPECT_EQ(GenerateCudaKernel(w, t, "k").status().code(), absl::StatusCode::kInvalidArgument);
  t.sketch = "cuda_mm_simt/v1";
  t.decisions = {{"bm", 128}, {"bn", 128},   {"bk", 8},   {"tm", 8},
                 {"tn", 8},   {"stages", 2}, {"vw_a", 4}, {"vw_b", 4}};
  EXPECT_EQ(GenerateCudaKernel(w, t, "k").status().code(), absl::StatusCode::kInvalidArgument)
      << "cp.async cannot transpose the k-contiguous A in 16-byte vectors";
  t.sketch = "cuda_mm_mma/v1";
  t.decisions = {{"bm", 128}, {"bn", 128}, {"bk", 32}, {"wm", 64}, {"wn", 64}, {"stages", 3}};
  EXPECT_EQ(GenerateCudaKernel(w, t, "k").status().code(), absl::StatusCode::kInvalidArgument)
      << "mma_sync needs 16-bit operands";
}

TEST(CudaMatMulMappingTest, OddShapesHaveAdmittedDefaultsThatGenerate) {
  for (int64_t m : {1, 17, 100, 3072}) {
    for (int64_t n : {1, 30, 768}) {
      for (int64_t k : {1, 9, 1000}) {
        for (int layout = 0; layout < 4; ++layout) {
          const Shape shape{3, m, n, k, (layout & 1) != 0, (layout & 2) != 0, true, layout < 2};
          for (const auto& [dtype, mappings] :
               std::vector<std::pair<DType, std::vector<std::string>>>{
                   {DType::kF32, {"simt", "tf32_mma"}}, {DType::kBF16, {"simt", "mma_sync"}}}) {
            const ir::Workload w = MatMul(dtype, DType::kF32, shape);
            for (const std::string& mapping : mappings) {
              SCOPED_TRACE(mapping + " " + w.Description());
              absl::StatusOr<schedule::SearchSpace> space =
                  kernels::CreateSpaceForMapping(w, target::CudaArchPreset(80), mapping);
              ASSERT_TRUE(space.ok()) << space.status();
              absl::StatusOr<CudaKernel> kernel = GenerateCudaKernel(w, space->DefaultTrace(), "k");
              EXPECT_TRUE(kernel.ok()) << kernel.status();
            }
          }
        }
      }
    }
  }
}

struct CompileCase {
  ir::Workload workload;
  std::string mapping;
  std::vector<std::string> instructions;  ///< every generated source contains these
};

std::vector<CompileCase> CompileCases() {
  const ir::Workload f32_square = MatMul(DType::kF32, DType::kF32, kSquare);
  const ir::Workload f32_mlp = WithBiasGelu(MatMul(DType::kF32, DType::kF32, kMlp));
  const ir::Workload f32_scores = MatMul(DType::kF32, DType::kF32, kScores);
  const ir::Workload f32_tiny = MatMul(DType::kF32, DType::kF32, kTiny);
  const ir::Workload f32_trans_a = MatMul(DType::kF32, DType::kF32, kTransA);
  const ir::Workload bf16_square = MatMul(DType::kBF16, DType::kBF16, kSquare);
  const ir::Workload bf16_values = MatMul(DType::kBF16, DType::kF32, kValues);
  const ir::Workload bf16_tiny = MatMul(DType::kBF16, DType::kBF16, kTiny);
  const ir::Workload bf16_trans_a = MatMul(DType::kBF16, DType::kF32, kTransA);
  const std::vector<std::string> tf32 = {"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
                                         "cvt.rna.tf32.f32", "cp.async.cg.shared.global"};
  const std::vector<std::string> mma = {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                                        "ldmatrix.sync.aligned.m8n8.x4", "cp.async"};
  const std::vector<std::string> simt = {"fmaf("};
  const std::vector<std::string> split = {tf32[0], "__cluster_dims__(", "barrier.cluster.arrive",
                                          "mapa.shared::cluster", "ld.shared::cluster"};
  return {{f32_square, "simt", simt},
          {f32_mlp, "simt", simt},
          {f32_scores, "simt", simt},
          {f32_tiny, "simt", simt},
          {f32_trans_a, "simt", simt},
          {bf16_square, "simt", simt},
          {bf16_values, "simt", simt},
          {f32_square, "tf32_mma", tf32},
          {f32_mlp, "tf32_mma", tf32},
          {f32_scores, "tf32_mma", tf32},
          {f32_tiny, "tf32_mma", {tf32[0]}},
          {f32_trans_a, "tf32_mma", tf32},
          {bf16_square, "mma_sync", mma},
          {bf16_values, "mma_sync", mma},
          {bf16_tiny, "mma_sync", {mma[0], mma[1]}},
          {bf16_trans_a, "mma_sync", mma},
          {f32_mlp, "tf32_mma_split", split},
          {f32_scores, "tf32_mma_split", split},
          {f32_square, "tf32_mma_split", split},
          {f32_trans_a, "tf32_mma_split", split}};
}

constexpr int kSamples = 8;

/// Generates the default trace and kSamples random ones of each case on sm_80 and sm_90 and,
/// compiles them with NVRTC (the default for both architectures, each sample for the one it was
/// drawn for) and checks ptxas' resource report against the device.
TEST(CudaMatMulCompileTest, DefaultAndSampledTracesCompileWithinBudget) {
  GTCO_REQUIRE_NVRTC();
  const auto start = std::chrono::steady_clock::now();
  int compiled_count = 0;
  for (const CompileCase& c : CompileCases()) {
    for (int sm : {80, 90}) {
      if (c.mapping == "tf32_mma_split" && sm < 90) continue;  // clusters are sm_90's
      const target::HardwareInfo hw = target::CudaArchPreset(sm);
      absl::StatusOr<schedule::SearchSpace> space =
          kernels::CreateSpaceForMapping(c.workload, hw, c.mapping);
      ASSERT_TRUE(space.ok()) << c.mapping << " " << c.workload.Description() << ": "
                              << space.status();
      std::mt19937_64 rng(77 + sm);
      std::vector<schedule::Trace> traces = {space->DefaultTrace()};
      for (int sample = 0; sample < kSamples / 2; ++sample) traces.push_back(space->Sample(rng));
      for (size_t trace_idx = 0; trace_idx < traces.size(); ++trace_idx) {
        const schedule::Trace& t = traces[trace_idx];
        SCOPED_TRACE(c.workload.Description() + " " + t.ToString() + " sm_" + std::to_string(sm));
        absl::StatusOr<CudaKernel> kernel = GenerateCudaKernel(c.workload, t, "gtco_mm_kernel");
        ASSERT_TRUE(kernel.ok()) << kernel.status();
        for (const std::string& instruction : c.instructions) {
          EXPECT_NE(kernel->source.find(instruction), std::string::npos) << instruction;
        }
        if (c.mapping == "simt") EXPECT_EQ(kernel->source.find("mma.sync"), std::string::npos);
        const std::string arch =
            kernel->plan.arch.empty() ? "sm_" + std::to_string(sm) : kernel->plan.arch;
        absl::StatusOr<CompiledCuda> compiled = CompileCuda(kernel->source, kernel->entry, arch);
        ASSERT_TRUE(compiled.ok()) << compiled.status() << "\n" << kernel->source;
        ++compiled_count;
        const CudaResourceUsage& usage = compiled->usage;
        const int64_t threads = kernel->plan.Threads();
        EXPECT_GT(usage.registers, 0) << compiled->log;
        EXPECT_LE(usage.registers, 255);
        EXPECT_LE(usage.registers * threads, hw.registers_per_block);
        EXPECT_LE(usage.static_shared_bytes + kernel->plan.dynamic_shared_bytes,
                  hw.shared_bytes_per_block);
        if (trace_idx == 0) {
          EXPECT_EQ(usage.spill_store_bytes + usage.spill_load_bytes, 0) << compiled->log;
          EXPECT_EQ(usage.stack_bytes, 0) << compiled->log;
        }
        if (std::getenv("GTCO_PRINT_CUDA_USAGE") != nullptr) {
          std::printf("%-9s %-6s regs %3d (est %3d) spill %lld threads %lld smem %lld  %s  %s\n",
                      c.mapping.c_str(), arch.c_str(), usage.registers, kernel->plan.est_registers,
                      static_cast<long long>(usage.spill_store_bytes + usage.spill_load_bytes),
                      static_cast<long long>(threads),
                      static_cast<long long>(kernel->plan.dynamic_shared_bytes),
                      c.workload.Description().c_str(), t.ToString().c_str());
        }
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("compiled %d kernels in %.1f s\n", compiled_count, seconds);
}

/// f16 matmuls: ir::Workload::Validate() does not accept them yet, so the generators are called
/// directly with the default trace's plan.
TEST(CudaMatMulCompileTest, F16DefaultTracesCompile) {
  GTCO_REQUIRE_NVRTC();
  const ir::Workload w = MatMul(DType::kF16, DType::kF32, kScores);
  for (const auto& [mapping, instruction] : std::vector<std::pair<std::string, std::string>>{
           {"mma_sync", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"},
           {"simt", "gtco_f16_to_f32("}}) {
    SCOPED_TRACE(mapping);
    const target::HardwareInfo hw = target::CudaArchPreset(80);
    absl::StatusOr<schedule::SearchSpace> space = kernels::CreateSpaceForMapping(w, hw, mapping);
    ASSERT_TRUE(space.ok()) << space.status();
    const schedule::Trace t = space->DefaultTrace();
    absl::StatusOr<schedule::CudaPlan> plan = kernels::PlanCudaSchedule(w, t);
    ASSERT_TRUE(plan.ok()) << plan.status();
    schedule::KnobValues values;
    for (const auto& decision : t.decisions) values.push_back(decision.second);
    absl::StatusOr<std::string> source =
        mapping == "simt" ? kernels::GenerateSimtMatMul(w, values, *plan, "k")
                          : kernels::GenerateMmaSyncMatMul(w, values, *plan, "k");
    ASSERT_TRUE(source.ok()) << source.status();
    EXPECT_NE(source->find(instruction), std::string::npos);
    absl::StatusOr<CompiledCuda> compiled = CompileCuda(*source, "k", "sm_80");
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    EXPECT_EQ(compiled->usage.spill_store_bytes, 0) << compiled->log;
  }
}

}  // namespace
}  // namespace gtco::kernels
