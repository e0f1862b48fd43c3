// Tests of the cost model's features on hand-built loop nests and on real lowered programs
// (matmul and softmax traces of the schedule sketches).
#include "common/costmodel/features.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "common/kernels/registry.h"
#include "common/schedule/space.h"
#include "tests/unit/schedule/test_workloads.h"

namespace gtco::costmodel {
namespace {

using ir::ForKind;
using ir::MakeFloat;
using ir::MakeInt;
using ir::MakeLoad;
using ir::MakeVar;

/// A fixed machine, so features do not depend on the test host.
target::HardwareInfo TestMachine() {
  target::HardwareInfo hw;
  hw.cpu_features = {"avx2", "avx512f", "fma", "avx512_vnni", "avx512_bf16"};
  hw.cores = 8;
  hw.l1d_bytes = 32 * 1024;
  hw.l2_bytes = 1024 * 1024;
  return hw;
}

float Get(const Features& features, const std::string& name) {
  const std::vector<std::string>& names = FeatureNames();
  const auto found = std::find(names.begin(), names.end(), name);
  EXPECT_NE(found, names.end()) << "no feature " << name;
  if (found == names.end()) return NAN;
  return features[found - names.begin()];
}

Features FeaturesOf(const ir::Workload& w, const std::string& trace_text) {
  absl::StatusOr<schedule::Trace> trace = schedule::Trace::Parse(trace_text);
  EXPECT_TRUE(trace.ok()) << trace.status();
  absl::StatusOr<ir::LoweredFunc> func = kernels::LowerSchedule(w, *trace, "kernel");
  EXPECT_TRUE(func.ok()) << trace_text << ": " << func.status();
  if (!func.ok()) return {};
  return ExtractFeatures(*func, TestMachine());
}

std::string MatMulTrace(const std::string& tile) {
  return "mm_tiled/v1;mc=64;nc=128;kc=128;" + tile + ";order=0;unroll_k=2;pack_b=0";
}

TEST(FeatureNamesTest, UniqueAndSized) {
  const std::vector<std::string>& names = FeatureNames();
  EXPECT_GE(names.size(), 40u);
  EXPECT_LE(names.size(), 80u);
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
}

TEST(FeaturesTest, KnownSmallMatMulCounts) {
  // 16x32x8, one K block, 1x1 tiles of 4 lanes: every multiply-add is one element update.
  const ir::Workload w = schedule::testing::MatMul(1, 16, 32, 8);
  const Features f = FeaturesOf(
      w, "mm_tiled/v1;mc=16;nc=32;kc=8;mr=1;nr=1;vw=4;par=0;order=0;unroll_k=1;pack_b=0");
  ASSERT_EQ(f.size(), FeatureNames().size());
  const double flops = 2.0 * 16 * 32 * 8;
  EXPECT_NEAR(Get(f, "log_flops"), std::log1p(flops), 1e-4);
  const double unique_bytes = (16 * 8 + 8 * 32 + 16 * 32) * 4.0;
  EXPECT_NEAR(Get(f, "log_unique_global_bytes"), std::log1p(unique_bytes), 1e-4);
  // B is read once per multiply-add (per lane); A once per 4-lane vector (a broadcast); C is
  // written once per element.
  EXPECT_NEAR(Get(f, "log_global_load_bytes"), std::log1p((1.25 * 16 * 32 * 8) * 4.0), 1e-4);
  EXPECT_NEAR(Get(f, "log_global_store_bytes"), std::log1p(16 * 32 * 4.0), 1e-4);
  EXPECT_NEAR(Get(f, "log_intensity_unique"), std::log1p(flops / unique_bytes), 1e-4);
  EXPECT_EQ(Get(f, "max_vector_width"), 4.0f);
  EXPECT_EQ(Get(f, "has_parallel"), 0.0f);
  EXPECT_EQ(Get(f, "log_math_calls"), 0.0f);
  EXPECT_NEAR(Get(f, "log_dominant_innermost_extent"), std::log1p(8.0), 1e-4);
  // The accumulator update is a loop-carried accumulation into a local buffer.
  EXPECT_GT(Get(f, "loop_carried_accum_fraction"), 0.5f);
  EXPECT_EQ(Get(f, "global_accum_fraction"), 0.0f);
  // The whole problem (3.5 KiB) fits in L1: L1 traffic is at most a few times the data.
  EXPECT_LE(Get(f, "log_traffic_l1"), std::log1p(4 * unique_bytes));
  for (float value : f) EXPECT_TRUE(std::isfinite(value));
}

TEST(FeaturesTest, DeterministicAndTraceSensitive) {
  const ir::Workload w = schedule::testing::MatMul(1, 256, 256, 256);
  const Features base = FeaturesOf(w, MatMulTrace("mr=4;nr=2;vw=8;par=0"));
  EXPECT_EQ(base, FeaturesOf(w, MatMulTrace("mr=4;nr=2;vw=8;par=0")));
  const Features other_tile = FeaturesOf(w, MatMulTrace("mr=2;nr=1;vw=8;par=0"));
  const Features wider = FeaturesOf(w, MatMulTrace("mr=4;nr=2;vw=16;par=0"));
  const Features parallel = FeaturesOf(w, MatMulTrace("mr=4;nr=2;vw=8;par=2"));
  EXPECT_NE(base, other_tile);
  EXPECT_NE(base, wider);
  EXPECT_NE(base, parallel);
  EXPECT_GT(Get(base, "log_dominant_local_bytes"), Get(other_tile, "log_dominant_local_bytes"));
  EXPECT_GT(Get(base, "log_dominant_unroll"), Get(other_tile, "log_dominant_unroll"));
  // A bigger register tile reuses each loaded element more: fewer loads for the same flops.
  EXPECT_NEAR(Get(base, "log_flops"), Get(other_tile, "log_flops"), 1e-3);
  EXPECT_LT(Get(base, "log_global_load_bytes"), Get(other_tile, "log_global_load_bytes"));
  EXPECT_EQ(Get(base, "max_vector_width"), 8.0f);
  EXPECT_EQ(Get(wider, "max_vector_width"), 16.0f);
  EXPECT_GT(Get(wider, "vector_width_weighted"), Get(base, "vector_width_weighted"));
  EXPECT_GT(Get(wider, "vector_width_vs_hw"), Get(base, "vector_width_vs_hw"));
  EXPECT_EQ(Get(base, "has_parallel"), 0.0f);
  EXPECT_EQ(Get(parallel, "has_parallel"), 1.0f);
  // par=2: (M blocks x N blocks) = 4 x 2 tasks on 8 cores.
  EXPECT_NEAR(Get(parallel, "log_parallel_extent"), std::log1p(8.0), 1e-4);
  EXPECT_NEAR(Get(parallel, "parallel_balance"), 1.0, 1e-6);
  EXPECT_NEAR(Get(parallel, "parallel_flop_fraction"), 1.0, 1e-6);
}

TEST(FeaturesTest, CacheBlockingShowsInFootprints) {
  const ir::Workload w = schedule::testing::MatMul(1, 512, 512, 512);
  const Features blocked = FeaturesOf(
      w, "mm_tiled/v1;mc=64;nc=128;kc=128;mr=4;nr=2;vw=8;par=0;order=0;unroll_k=1;pack_b=0");
  const Features unblocked = FeaturesOf(
      w, "mm_tiled/v1;mc=512;nc=512;kc=512;mr=4;nr=2;vw=8;par=0;order=0;unroll_k=1;pack_b=0");
  EXPECT_LT(Get(blocked, "log2_footprint_lvl2"), Get(unblocked, "log2_footprint_lvl2"));
  EXPECT_LT(Get(blocked, "footprint_lvl3_vs_l2"), Get(unblocked, "footprint_lvl3_vs_l2"));
  EXPECT_LT(Get(blocked, "log_traffic_l2"), Get(unblocked, "log_traffic_l2"));
}

TEST(FeaturesTest, SoftmaxVariantsDifferInExpCalls) {
  const ir::Workload w = schedule::testing::RowWorkload(ir::AnchorKind::kSoftmax, 64, 1000);
  const Features recompute = FeaturesOf(w, "softmax_rows/v1;vw=8;unroll=2;par=1;variant=0");
  const Features store_exp = FeaturesOf(w, "softmax_rows/v1;vw=8;unroll=2;par=1;variant=1");
  // Variant 0 evaluates exp twice per element, variant 1 once.
  EXPECT_NEAR(Get(recompute, "log_exp_calls"), std::log1p(2.0 * 64 * 1000), 0.01);
  EXPECT_NEAR(Get(store_exp, "log_exp_calls"), std::log1p(1.0 * 64 * 1000), 0.01);
  EXPECT_EQ(Get(recompute, "has_parallel"), 1.0f);
  EXPECT_NEAR(Get(recompute, "log_parallel_extent"), std::log1p(64.0), 1e-4);
  EXPECT_GT(Get(recompute, "vectorized_flop_fraction"), 0.9f);
  const Features narrow = FeaturesOf(w, "softmax_rows/v1;vw=4;unroll=1;par=0;variant=0");
  EXPECT_NE(narrow, recompute);
  EXPECT_EQ(Get(narrow, "has_parallel"), 0.0f);
  EXPECT_LT(Get(narrow, "vector_width_weighted"), Get(recompute, "vector_width_weighted"));
}

TEST(FeaturesTest, RandomTracesGiveFiniteFeatures) {
  const target::HardwareInfo hw = TestMachine();
  std::mt19937_64 rng(7);
  for (const ir::Workload& w :
       {schedule::testing::MatMulBiasGelu(2, 197, 64, 197),
        schedule::testing::RowWorkload(ir::AnchorKind::kLayerNorm, 197, 768),
        schedule::testing::Elementwise({64, 1000})}) {
    absl::StatusOr<schedule::SearchSpace> space = kernels::CreateSpace(w, hw);
    ASSERT_TRUE(space.ok()) << space.status();
    for (int sample = 0; sample < 20; ++sample) {
      const schedule::Trace trace = space->Sample(rng);
      absl::StatusOr<ir::LoweredFunc> func = kernels::LowerSchedule(w, trace, "kernel");
      ASSERT_TRUE(func.ok()) << func.status();
      const Features f = ExtractFeatures(*func, hw);
      ASSERT_EQ(f.size(), FeatureNames().size());
      for (size_t idx = 0; idx < f.size(); ++idx) {
        EXPECT_TRUE(std::isfinite(f[idx])) << trace.ToString() << " " << FeatureNames()[idx];
      }
      EXPECT_GT(Get(f, "log_flops"), 0.0f) << trace.ToString();
    }
  }
}

/// Features of the first-choice space's random trace for `w`.
Features RandomTraceFeatures(const ir::Workload& w, uint64_t seed) {
  absl::StatusOr<schedule::SearchSpace> space = kernels::CreateSpace(w, TestMachine());
  EXPECT_TRUE(space.ok()) << space.status();
  if (!space.ok()) return {};
  std::mt19937_64 rng(seed);
  const schedule::Trace trace = space->Sample(rng);
  absl::StatusOr<ir::LoweredFunc> func = kernels::LowerSchedule(w, trace, "kernel");
  EXPECT_TRUE(func.ok()) << trace.ToString() << ": " << func.status();
  if (!func.ok()) return {};
  return ExtractFeatures(*func, TestMachine());
}

TEST(FeaturesTest, LowPrecisionMatMulsCountBytesAndDotProducts) {
  const int64_t size = 128;
  const ir::Workload f32 = schedule::testing::MatMul(1, size, size, size);
  ir::Workload int8 = f32, bf16 = f32;
  int8.inputs[0].dtype = ir::DType::kU8;
  int8.inputs[1].dtype = ir::DType::kI8;
  int8.output.dtype = ir::DType::kI32;
  bf16.inputs[0].dtype = bf16.inputs[1].dtype = ir::DType::kBF16;
  const Features f32_features = RandomTraceFeatures(f32, 1);
  const double macs = static_cast<double>(size) * size * size;
  for (const ir::Workload* w : {&int8, &bf16}) {
    const Features f = RandomTraceFeatures(*w, 1);
    ASSERT_EQ(f.size(), FeatureNames().size());
    for (float value : f) EXPECT_TRUE(std::isfinite(value));
    const double input_bytes = (w == &int8 ? 1.0 : 2.0) * 2 * size * size;
    const double output_bytes = 4.0 * size * size;
    // 1- or 2-byte operands; the output is i32 (int8) or f32 (bf16), 4 bytes either way.
    EXPECT_NEAR(Get(f, "log_unique_global_bytes"), std::log1p(input_bytes + output_bytes), 1e-3);
    EXPECT_LT(Get(f, "log_unique_global_bytes"), Get(f32_features, "log_unique_global_bytes"));
    // Dot-product intrinsics count their multiply-adds: about 2 ops per MAC plus packing and
    // correction work.
    EXPECT_GT(Get(f, "log_flops"), std::log1p(1.5 * macs));
    EXPECT_LT(Get(f, "log_flops"), std::log1p(6.0 * macs));
  }
}

/// for i in [0, 8) vectorized: out[i] = in0[2i] + in1[0] + in2[i] + in3[int(in2[i])].
TEST(FeaturesTest, ClassifiesVectorLaneAccesses) {
  const ir::Expr i = MakeVar("i");
  const ir::Expr value = MakeLoad("in0", i * MakeInt(2)) + MakeLoad("in1", MakeInt(0)) +
                         MakeLoad("in2", i) +
                         MakeLoad("in3", ir::MakeCast(ir::ScalarType::kI64, MakeLoad("in2", i)));
  ir::LoweredFunc func;
  func.name = "lanes";
  func.params = {{"in0", 16}, {"in1", 1}, {"in2", 8}, {"in3", 8}, {"out", 8}};
  func.body = ir::MakeFor("i", MakeInt(0), MakeInt(8), ForKind::kVectorized,
                          ir::MakeStore("out", i, value));
  const Features f = ExtractFeatures(func, TestMachine());
  // Contiguous: in2 (twice: once as data, once inside the gather's index) and out.
  EXPECT_NEAR(Get(f, "log_vec_contiguous_count"), std::log1p(3.0), 1e-5);
  EXPECT_NEAR(Get(f, "log_vec_strided_count"), std::log1p(1.0), 1e-5);
  EXPECT_NEAR(Get(f, "log_vec_broadcast_count"), std::log1p(1.0), 1e-5);
  EXPECT_NEAR(Get(f, "log_vec_gather_count"), std::log1p(1.0), 1e-5);
  EXPECT_NEAR(Get(f, "vec_gather_fraction"), 1.0 / 6.0, 1e-5);
  EXPECT_NEAR(Get(f, "log_flops"), std::log1p(3.0 * 8), 1e-5);
}

/// for i in [0, 64): for j in [0, 64): out[64i + j] = in0[j] * 2.
TEST(FeaturesTest, FootprintOfInnermostLoop) {
  const ir::Expr i = MakeVar("i"), j = MakeVar("j");
  ir::LoweredFunc func;
  func.name = "rows";
  func.params = {{"in0", 64}, {"out", 64 * 64}};
  func.body = ir::MakeFor(
      "i", MakeInt(0), MakeInt(64), ForKind::kSerial,
      ir::MakeFor("j", MakeInt(0), MakeInt(64), ForKind::kSerial,
                  ir::MakeStore("out", i * MakeInt(64) + j, MakeLoad("in0", j) * MakeFloat(2))));
  const Features f = ExtractFeatures(func, TestMachine());
  // Level 1 (the j loop): 64 floats of in0 + 64 of out = 8 cache lines of 64 bytes.
  EXPECT_NEAR(Get(f, "log2_footprint_lvl1"), std::log2(8 * 64.0), 1e-4);
  // Level 2 (both loops): in0 stays 4 lines, out grows to 256 lines.
  EXPECT_NEAR(Get(f, "log2_footprint_lvl2"), std::log2(260 * 64.0), 1e-4);
  EXPECT_NEAR(Get(f, "innermost_unit_stride_fraction"), 1.0, 1e-6);
  EXPECT_EQ(Get(f, "max_vector_width"), 1.0f);
  EXPECT_EQ(Get(f, "max_loop_depth"), 2.0f);
}

}  // namespace
}  // namespace gtco::costmodel
