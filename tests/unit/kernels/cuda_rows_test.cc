// CUDA row-wise (softmax, layernorm, reduce_mean: "warp_rows") and element-wise ("simt")
// mappings: verdicts, pruning rules, default traces, and generated kernels that compile with
// NVRTC for sm_80 and sm_90 within the resources their plans claim.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common/codegen/cuda/nvrtc.h"
#include "common/kernels/build_program.h"
#include "common/kernels/cuda/rows/cuda_rows_sketch.h"
#include "common/kernels/registry.h"
#include "common/schedule/mapping.h"
#include "common/schedule/space.h"
#include "common/target/target.h"
#include "tests/unit/codegen_cuda/nvrtc_required.h"
#include "tests/unit/schedule/test_workloads.h"

namespace gtco::kernels {
namespace {

using codegen::CompileCuda;
using codegen::CompiledCuda;
using codegen::CudaResourceUsage;

using schedule::testing::Const;
using schedule::testing::In;
using schedule::testing::RowWorkload;
using schedule::testing::Tensor;
using schedule::testing::Val;

/// `w` with output = gelu(output) (erf form) appended to its epilogue.
void AppendGelu(ir::Workload* w, ir::Operand x) {
  const int base = static_cast<int>(w->epilogue.size());
  w->epilogue.push_back({ir::EwOp::kMul, {x, Const(0.70710678f)}});       // base
  w->epilogue.push_back({ir::EwOp::kErf, {Val(base)}});                   // base+1
  w->epilogue.push_back({ir::EwOp::kAdd, {Val(base + 1), Const(1.0f)}});  // base+2
  w->epilogue.push_back({ir::EwOp::kMul, {x, Val(base + 2)}});            // base+3
  w->epilogue.push_back({ir::EwOp::kMul, {Val(base + 3), Const(0.5f)}});  // base+4
}

/// out = gelu(x + bias) for x [rows, cols] and bias [cols].
ir::Workload BiasGelu(int64_t rows, int64_t cols, ir::DType x_dtype = ir::DType::kF32) {
  ir::Workload w;
  w.anchor = ir::AnchorKind::kNone;
  w.inputs = {Tensor({rows, cols}), Tensor({cols})};
  w.inputs[0].dtype = x_dtype;
  w.output = Tensor({rows, cols});
  w.epilogue = {{ir::EwOp::kAdd, {In(0), In(1)}}};
  AppendGelu(&w, Val(0));
  return w;
}

/// Layernorm whose output adds a residual [rows, cols] and is scaled by 0.5.
ir::Workload LayerNormResidual(int64_t rows, int64_t cols) {
  ir::Workload w = RowWorkload(ir::AnchorKind::kLayerNorm, rows, cols);
  w.inputs.push_back(Tensor({rows, cols}));
  w.epilogue = {{ir::EwOp::kAdd, {schedule::testing::Acc(), In(3)}},
                {ir::EwOp::kMul, {Val(0), Const(0.5f)}}};
  return w;
}

ir::Workload Bf16Softmax(int64_t rows, int64_t cols) {
  ir::Workload w = RowWorkload(ir::AnchorKind::kSoftmax, rows, cols);
  w.inputs[0].dtype = ir::DType::kBF16;
  w.output.dtype = ir::DType::kBF16;
  return w;
}

struct NamedWorkload {
  std::string name;
  ir::Workload workload;
  std::string mapping;
};

std::vector<NamedWorkload> Workloads() {
  ir::Workload scaled_softmax = RowWorkload(ir::AnchorKind::kSoftmax, 12 * 197, 197);
  scaled_softmax.epilogue = {{ir::EwOp::kMul, {schedule::testing::Acc(), Const(0.125f)}}};
  return {
      {"softmax_2364x197", scaled_softmax, "warp_rows"},
      {"softmax_4x4096", RowWorkload(ir::AnchorKind::kSoftmax, 4, 4096), "warp_rows"},
      {"softmax_3x50000", RowWorkload(ir::AnchorKind::kSoftmax, 3, 50000), "warp_rows"},
      {"softmax_bf16_2364x197", Bf16Softmax(12 * 197, 197), "warp_rows"},
      {"layernorm_197x768", RowWorkload(ir::AnchorKind::kLayerNorm, 197, 768), "warp_rows"},
      {"layernorm_6304x768", LayerNormResidual(6304, 768), "warp_rows"},
      {"reduce_mean_64x1000", RowWorkload(ir::AnchorKind::kReduceMean, 64, 1000), "warp_rows"},
      {"bias_gelu_197x768", BiasGelu(197, 768), "simt"},
      {"bias_gelu_bf16_197x768", BiasGelu(197, 768, ir::DType::kBF16), "simt"},
  };
}

const schedule::Sketch& SketchOf(const char* name) {
  const schedule::Sketch* sketch = kernels::SketchByName(name);
  EXPECT_NE(sketch, nullptr) << name;
  return *sketch;
}

TEST(CudaRowsMappingTest, WarpRowsAppliesToRowWorkloadsOnCudaOnly) {
  for (ir::AnchorKind anchor :
       {ir::AnchorKind::kSoftmax, ir::AnchorKind::kLayerNorm, ir::AnchorKind::kReduceMean}) {
    const ir::Workload w = RowWorkload(anchor, 64, 1000);
    bool found = false;
    for (const schedule::MappingVerdict& verdict :
         kernels::ExplainMappings(w, target::CudaArchPreset(80))) {
      if (verdict.mapping != "warp_rows") continue;
      found = true;
      EXPECT_TRUE(verdict.applies) << verdict.reason;
    }
    EXPECT_TRUE(found) << ir::AnchorKindName(anchor);
    for (const schedule::MappingVerdict& verdict :
         kernels::ExplainMappings(w, target::HardwareInfo{})) {
      EXPECT_NE(verdict.mapping, "warp_rows") << "a CPU host must not see CUDA mappings";
    }
  }
  absl::StatusOr<schedule::SearchSpace> space =
      kernels::CreateSpace(BiasGelu(197, 768), target::CudaArchPreset(90));
  ASSERT_TRUE(space.ok()) << space.status();
  EXPECT_EQ(space->mapping(), "simt");
  EXPECT_EQ(space->sketch_name(), "cuda_elementwise/v1");
}

TEST(CudaRowsMappingTest, RejectsIntegerOperandsAndOldGpus) {
  ir::Workload w = RowWorkload(ir::AnchorKind::kSoftmax, 8, 64);
  w.inputs[0].dtype = ir::DType::kI8;
  absl::StatusOr<schedule::SearchSpace> space =
      kernels::CreateSpaceForMapping(w, target::CudaArchPreset(80), "warp_rows");
  ASSERT_FALSE(space.ok());
  EXPECT_NE(space.status().message().find("f32, f16 or bf16"), std::string::npos) << space.status();
  target::HardwareInfo old_gpu = target::CudaArchPreset(80);
  old_gpu.sm_major = 6;
  old_gpu.sm_minor = 1;
  space = kernels::CreateSpaceForMapping(RowWorkload(ir::AnchorKind::kSoftmax, 8, 64), old_gpu,
                                         "warp_rows");
  ASSERT_FALSE(space.ok());
  EXPECT_NE(space.status().message().find("compute capability"), std::string::npos)
      << space.status();
}

TEST(CudaRowsMappingTest, RejectsEpilogueInputsThatDoNotBroadcast) {
  ir::Workload w = BiasGelu(197, 768);
  w.inputs[1] = Tensor({767});
  absl::StatusOr<schedule::SearchSpace> space =
      kernels::CreateSpaceForMapping(w, target::CudaArchPreset(90), "simt");
  ASSERT_FALSE(space.ok());
  EXPECT_NE(space.status().message().find("does not broadcast"), std::string::npos)
      << space.status();
  ir::Workload softmax = RowWorkload(ir::AnchorKind::kSoftmax, 8, 64);
  softmax.inputs.push_back(Tensor({8, 2}));
  softmax.epilogue = {{ir::EwOp::kAdd, {schedule::testing::Acc(), In(1)}}};
  space = kernels::CreateSpaceForMapping(softmax, target::CudaArchPreset(80), "warp_rows");
  ASSERT_FALSE(space.ok());
  EXPECT_NE(space.status().message().find("does not broadcast"), std::string::npos)
      << space.status();
}

TEST(CudaRowsPruneTest, RulesNameTheirReason) {
  const target::HardwareInfo a100 = target::CudaArchPreset(80);
  const target::HardwareInfo h100 = target::CudaArchPreset(90);
  const schedule::Sketch& softmax = SketchOf("cuda_softmax/v1");
  const ir::Workload short_rows = RowWorkload(ir::AnchorKind::kSoftmax, 2364, 197);
  const ir::Workload long_rows = RowWorkload(ir::AnchorKind::kSoftmax, 3, 50000);
  // Knobs: tpr, rpb, vw, strategy, unroll, split.
  EXPECT_EQ(softmax.PruneRule(short_rows, a100, {32, 4, 1, 0, 1, 1}), nullptr);
  EXPECT_STREQ(softmax.PruneRule(short_rows, a100, {32, 4, 4, 0, 1, 1}), "alignment");
  EXPECT_STREQ(softmax.PruneRule(short_rows, a100, {1024, 1, 1, 0, 1, 1}), "exceeds_shape");
  EXPECT_STREQ(softmax.PruneRule(short_rows, a100, {32, 64, 1, 0, 1, 1}), "threads_per_block");
  EXPECT_STREQ(softmax.PruneRule(short_rows, a100, {8, 1, 1, 0, 1, 1}), "threads_per_block");
  EXPECT_STREQ(softmax.PruneRule(short_rows, a100, {32, 4, 1, 0, 4, 1}), "redundant");
  EXPECT_STREQ(softmax.PruneRule(long_rows, a100, {1024, 1, 4, 0, 1, 1}), "register_file");
  EXPECT_STREQ(softmax.PruneRule(long_rows, a100, {256, 1, 4, 0, 1, 1}), "row_cache");
  EXPECT_EQ(softmax.PruneRule(long_rows, a100, {1024, 1, 4, 1, 4, 1}), nullptr);
  EXPECT_STREQ(softmax.PruneRule(long_rows, a100, {1024, 1, 4, 1, 4, 8}), "cluster");
  EXPECT_EQ(softmax.PruneRule(long_rows, h100, {1024, 1, 4, 1, 2, 8}), nullptr);
  EXPECT_STREQ(softmax.PruneRule(long_rows, h100, {1024, 1, 4, 1, 4, 8}), "exceeds_shape");
  EXPECT_EQ(softmax.PruneRule(long_rows, h100, {1024, 1, 4, 0, 1, 8}), nullptr);
  const ir::Workload bf16 = Bf16Softmax(64, 1024);
  EXPECT_EQ(softmax.PruneRule(bf16, a100, {32, 4, 8, 0, 1, 1}), nullptr);
  EXPECT_STREQ(
      softmax.PruneRule(RowWorkload(ir::AnchorKind::kSoftmax, 64, 1024), a100, {32, 4, 8, 0, 1, 1}),
      "alignment");  // 32-byte f32 loads

  const schedule::Sketch& elementwise = SketchOf("cuda_elementwise/v1");
  const ir::Workload odd = BiasGelu(197, 3);  // knobs: block, vw, ept, iters
  EXPECT_STREQ(elementwise.PruneRule(odd, a100, {128, 2, 1, 1}), "alignment");
  EXPECT_STREQ(elementwise.PruneRule(odd, a100, {256, 1, 8, 1}), "exceeds_shape");
  EXPECT_STREQ(elementwise.PruneRule(BiasGelu(4, 3), a100, {128, 1, 1, 1}), "exceeds_shape");
  EXPECT_STREQ(elementwise.PruneRule(odd, a100, {128, 1, 1, 4}), "too_small_to_parallelize");
  EXPECT_EQ(elementwise.PruneRule(odd, a100, {128, 1, 1, 1}), nullptr);

  absl::StatusOr<schedule::SearchSpace> space =
      kernels::CreateSpaceForMapping(short_rows, h100, "warp_rows");
  ASSERT_TRUE(space.ok()) << space.status();
  const auto& pruned = space->prune_stats().pruned_by_rule;
  for (const char* rule : {"alignment", "exceeds_shape", "threads_per_block", "redundant"}) {
    EXPECT_GT(pruned.count(rule) ? pruned.at(rule) : 0, 0) << rule;
  }
}

TEST(CudaRowsSpaceTest, FirstValuesFormAnAdmittedTraceOnBothPresets) {
  for (const NamedWorkload& named : Workloads()) {
    for (int sm : {80, 90}) {
      absl::StatusOr<schedule::SearchSpace> space =
          kernels::CreateSpaceForMapping(named.workload, target::CudaArchPreset(sm), named.mapping);
      ASSERT_TRUE(space.ok()) << named.name << " sm_" << sm << ": " << space.status();
      const schedule::Trace trace = space->DefaultTrace();
      ASSERT_EQ(trace.decisions.size(), space->knobs().size());
      for (size_t knob_idx = 0; knob_idx < trace.decisions.size(); ++knob_idx) {
        EXPECT_EQ(trace.decisions[knob_idx].second, space->knobs()[knob_idx].values.front())
            << named.name << " sm_" << sm << " knob " << space->knobs()[knob_idx].name
            << ": the first values are not admitted (" << trace.ToString() << ")";
      }
    }
  }
}

TEST(CudaRowsPlanTest, DefaultPlansFitTheShapes) {
  const target::HardwareInfo h100 = target::CudaArchPreset(90);
  absl::StatusOr<schedule::SearchSpace> space = kernels::CreateSpaceForMapping(
      RowWorkload(ir::AnchorKind::kLayerNorm, 6304, 768), h100, "warp_rows");
  ASSERT_TRUE(space.ok()) << space.status();
  absl::StatusOr<schedule::CudaPlan> plan = kernels::PlanCudaSchedule(
      RowWorkload(ir::AnchorKind::kLayerNorm, 6304, 768), space->DefaultTrace());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->vector_width, 4);
  EXPECT_EQ(plan->grid_x, (6304 + plan->tile_m - 1) / plan->tile_m);
  EXPECT_EQ(plan->stages, 1);
  // Few long rows: one block of streaming threads per row unless clusters are chosen.
  space = kernels::CreateSpaceForMapping(RowWorkload(ir::AnchorKind::kSoftmax, 3, 50000),
                                         target::CudaArchPreset(80), "warp_rows");
  ASSERT_TRUE(space.ok()) << space.status();
  EXPECT_EQ(space->DefaultTrace().Get("strategy").value_or(-1), 1)
      << space->DefaultTrace().ToString();
}

TEST(CudaRowsCodegenTest, RejectsMisalignedVectorWidth) {
  const ir::Workload w = RowWorkload(ir::AnchorKind::kSoftmax, 4, 10);
  const schedule::KnobValues values = {4, 8, 4, 0, 1, 1};
  absl::StatusOr<std::string> source = kernels::GenerateCudaSoftmax(w, values, {}, "k");
  EXPECT_EQ(source.status().code(), absl::StatusCode::kInvalidArgument);
}

/// Generates (directly for workloads that Workload::Validate does not accept yet: f16/bf16 row
/// anchors) and compiles `t`, checking the compiled resources against `hw` and the plan.
void CompileAndCheck(const NamedWorkload& named, const schedule::Trace& t,
                     const target::HardwareInfo& hw, bool expect_no_spills) {
  const std::string where =
      named.name + " " + t.ToString() + " sm_" + std::to_string(hw.SmVersion());
  absl::StatusOr<schedule::CudaPlan> plan = kernels::PlanCudaSchedule(named.workload, t);
  ASSERT_TRUE(plan.ok()) << where << ": " << plan.status();
  std::string source;
  if (named.workload.Validate().ok()) {
    absl::StatusOr<CudaKernel> kernel = GenerateCudaKernel(named.workload, t, "rows_kernel");
    ASSERT_TRUE(kernel.ok()) << where << ": " << kernel.status();
    source = kernel->source;
  } else {
    schedule::KnobValues values;
    for (const auto& decision : t.decisions) values.push_back(decision.second);
    absl::StatusOr<std::string> generated =
        named.mapping == "simt"
            ? kernels::GenerateCudaElementwise(named.workload, values, *plan, "rows_kernel")
            : kernels::GenerateCudaSoftmax(named.workload, values, *plan, "rows_kernel");
    ASSERT_TRUE(generated.ok()) << where << ": " << generated.status();
    source = *generated;
  }
  const std::string arch = "sm_" + std::to_string(hw.SmVersion());
  absl::StatusOr<CompiledCuda> compiled = CompileCuda(source, "rows_kernel", arch);
  ASSERT_TRUE(compiled.ok()) << where << ": " << compiled.status() << "\n" << source;
  const CudaResourceUsage& usage = compiled->usage;
  EXPECT_GT(usage.registers, 0) << where << "\n" << compiled->log;
  EXPECT_LE(usage.registers, 255) << where;
  EXPECT_LE(usage.registers * plan->Threads(), hw.registers_per_block) << where;
  EXPECT_LE(usage.static_shared_bytes + plan->dynamic_shared_bytes, hw.shared_bytes_per_block)
      << where;
  if (expect_no_spills) {
    EXPECT_EQ(usage.spill_store_bytes + usage.spill_load_bytes, 0) << where << "\n"
                                                                   << compiled->log;
  }
  // The register estimate prunes the space: it must be in the compiled count's neighborhood.
  EXPECT_LE(usage.registers, plan->est_registers + 24)
      << where << ": estimated " << plan->est_registers << "\n"
      << source;
}

schedule::Trace MakeTrace(const char* sketch, const std::vector<std::string>& names,
                          const schedule::KnobValues& values) {
  schedule::Trace trace;
  trace.sketch = sketch;
  for (size_t knob_idx = 0; knob_idx < names.size(); ++knob_idx) {
    trace.decisions.push_back({names[knob_idx], values[knob_idx]});
  }
  return trace;
}

TEST(CudaRowsCompileTest, ClusterStreamingAndEpilogueVariantsCompile) {
  GTCO_REQUIRE_NVRTC();
  const target::HardwareInfo h100 = target::CudaArchPreset(90);
  const std::vector<std::string> names =
      CudaRowsKnobNames(ir::AnchorKind::kSoftmax);  // same for layernorm
  struct Variant {
    NamedWorkload named;
    const char* sketch;
    schedule::KnobValues values;
    std::vector<std::string> expected;  // fragments of the source
  };
  const std::vector<Variant> variants = {
      {{"softmax_cluster_cached", RowWorkload(ir::AnchorKind::kSoftmax, 3, 50000), "warp_rows"},
       "cuda_softmax/v1",
       {1024, 1, 4, 0, 1, 8},
       {"__cluster_dims__(8, 1, 1)", "gtco_cluster_load(", "gtco_ldv<4>(x + g * 4"}},
      {{"softmax_cluster_online", RowWorkload(ir::AnchorKind::kSoftmax, 3, 50000), "warp_rows"},
       "cuda_softmax/v1",
       {1024, 1, 4, 1, 2, 4},
       {"__cluster_dims__(4, 1, 1)", "new_m"}},
      {{"layernorm_cluster_welford", RowWorkload(ir::AnchorKind::kLayerNorm, 3, 20000),
        "warp_rows"},
       "cuda_layernorm/v1",
       {512, 1, 4, 1, 2, 4},
       {"gtco_group_welford<16>", "gtco_cluster_sync();"}},
      {{"layernorm_residual", LayerNormResidual(6304, 768), "warp_rows"},
       "cuda_layernorm/v1",
       {32, 4, 4, 0, 1, 1},
       {"gtco_ldv<4>(in3 + (", "gtco_ldv<4>(in1 + g * 4, gtco_sc)"}},
  };
  for (const Variant& variant : variants) {
    const schedule::Trace trace = MakeTrace(variant.sketch, names, variant.values);
    const schedule::Sketch& sketch = SketchOf(variant.sketch);
    EXPECT_EQ(sketch.PruneRule(variant.named.workload, h100, variant.values), nullptr)
        << variant.named.name;
    absl::StatusOr<CudaKernel> kernel = GenerateCudaKernel(variant.named.workload, trace, "k");
    ASSERT_TRUE(kernel.ok()) << variant.named.name << ": " << kernel.status();
    for (const std::string& fragment : variant.expected) {
      EXPECT_NE(kernel->source.find(fragment), std::string::npos)
          << variant.named.name << " lacks " << fragment << "\n"
          << kernel->source;
    }
    CompileAndCheck(variant.named, trace, h100, /*expect_no_spills=*/true);
  }
}

TEST(CudaRowsCompileTest, DefaultAndSampledTracesCompileWithinTheirPlans) {
  GTCO_REQUIRE_NVRTC();
  constexpr int kSamples = 4;  // per workload and architecture
  std::mt19937_64 rng(20240601);
  for (const NamedWorkload& named : Workloads()) {
    for (int sm : {80, 90}) {
      const target::HardwareInfo hw = target::CudaArchPreset(sm);
      absl::StatusOr<schedule::SearchSpace> space =
          kernels::CreateSpaceForMapping(named.workload, hw, named.mapping);
      ASSERT_TRUE(space.ok()) << named.name << ": " << space.status();
      CompileAndCheck(named, space->DefaultTrace(), hw, /*expect_no_spills=*/true);
      for (int sample = 0; sample < kSamples; ++sample) {
        CompileAndCheck(named, space->Sample(rng), hw, /*expect_no_spills=*/false);
      }
    }
  }
}

}  // namespace
}  // namespace gtco::kernels
