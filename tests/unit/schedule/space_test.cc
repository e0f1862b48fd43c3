// Tests of search spaces (sampling, mutation, pruning) and trace replay without running code.
#include "common/schedule/space.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "common/ir/conv.h"
#include "common/kernels/registry.h"
#include "tests/unit/schedule/test_workloads.h"

namespace gtco::schedule {
using kernels::LowerSchedule;
namespace {

using testing::Avx512Host;
using testing::Elementwise;
using testing::MatMul;
using testing::MatMulBiasGelu;
using testing::RowWorkload;

target::HardwareInfo Avx2Host() {
  target::HardwareInfo hw;
  hw.cpu_features = {"avx", "avx2", "fma"};
  hw.cores = 4;
  return hw;
}

std::vector<ir::Workload> AllClasses() {
  return {MatMulBiasGelu(2, 197, 64, 197),
          MatMul(1, 77, 197, 64, false, true),
          RowWorkload(ir::AnchorKind::kSoftmax, 12, 197),
          RowWorkload(ir::AnchorKind::kLayerNorm, 197, 768),
          RowWorkload(ir::AnchorKind::kReduceMean, 5, 3),
          Elementwise({2, 3, 77})};
}

TEST(SearchSpaceTest, SamplesAreValidLowerableAndRoundTrip) {
  std::mt19937_64 rng(7);
  for (const ir::Workload& w : AllClasses()) {
    absl::StatusOr<SearchSpace> space = kernels::CreateSpace(w, Avx512Host());
    ASSERT_TRUE(space.ok()) << space.status();
    for (int sample = 0; sample < 100; ++sample) {
      const Trace trace = space->Sample(rng);
      EXPECT_TRUE(space->Contains(trace)) << trace.ToString();
      absl::StatusOr<Trace> parsed = Trace::Parse(trace.ToString());
      ASSERT_TRUE(parsed.ok());
      EXPECT_EQ(*parsed, trace);
      absl::StatusOr<ir::LoweredFunc> func = LowerSchedule(w, *parsed, "k");
      ASSERT_TRUE(func.ok()) << trace.ToString() << ": " << func.status();
      ASSERT_EQ(func->params.size(), w.inputs.size() + 1);
      EXPECT_EQ(func->params.front().name, "in0");
      EXPECT_EQ(func->params.back().name, "out");
    }
  }
}

TEST(SearchSpaceTest, SamplingCoversManyTraces) {
  absl::StatusOr<SearchSpace> space = kernels::CreateSpace(MatMul(1, 512, 512, 512), Avx512Host());
  ASSERT_TRUE(space.ok());
  std::mt19937_64 rng(1);
  std::set<std::string> distinct;
  for (int sample = 0; sample < 200; ++sample) distinct.insert(space->Sample(rng).ToString());
  EXPECT_GT(distinct.size(), 190u);
}

TEST(SearchSpaceTest, PrunesMicroKernelsThatOverflowTheRegisterFile) {
  const ir::Workload w = MatMul(1, 256, 256, 256);
  for (const target::HardwareInfo& hw : {Avx512Host(), Avx2Host()}) {
    absl::StatusOr<SearchSpace> space = kernels::CreateSpace(w, hw);
    ASSERT_TRUE(space.ok());
    const int64_t registers = hw.HasFeature("avx512f") ? 32 : 16;
    std::mt19937_64 rng(3);
    int64_t largest_tile = 0;
    for (int sample = 0; sample < 500; ++sample) {
      const Trace trace = space->Sample(rng);
      const int64_t mr = *trace.Get("mr"), nr = *trace.Get("nr");
      EXPECT_LE(mr * nr + nr + 1, registers) << trace.ToString();
      largest_tile = std::max(largest_tile, mr * nr);
    }
    EXPECT_GE(largest_tile, registers * 3 / 4 - 1);  // the space still reaches big tiles
    Trace too_big = space->DefaultTrace();
    too_big.decisions[0].second = hw.HasFeature("avx512f") ? 8 : 6;  // mr
    too_big.decisions[1].second = hw.HasFeature("avx512f") ? 4 : 3;  // nr: 37 / 22 registers
    EXPECT_FALSE(space->Contains(too_big)) << too_big.ToString();
  }
}

TEST(SearchSpaceTest, MutateChangesOneOrTwoDecisionsAndStaysValid) {
  std::mt19937_64 rng(11);
  for (const ir::Workload& w : AllClasses()) {
    absl::StatusOr<SearchSpace> space = kernels::CreateSpace(w, Avx512Host());
    ASSERT_TRUE(space.ok());
    Trace trace = space->Sample(rng);
    for (int step = 0; step < 100; ++step) {
      const Trace mutated = space->Mutate(trace, rng);
      EXPECT_TRUE(space->Contains(mutated)) << mutated.ToString();
      int changed = 0;
      for (size_t idx = 0; idx < trace.decisions.size(); ++idx) {
        changed += trace.decisions[idx] != mutated.decisions[idx];
      }
      EXPECT_LE(changed, 2);
      trace = mutated;
    }
  }
}

TEST(SearchSpaceTest, MutateOfForeignTraceSamplesAFreshOne) {
  absl::StatusOr<SearchSpace> space = kernels::CreateSpace(MatMul(1, 64, 64, 64), Avx512Host());
  ASSERT_TRUE(space.ok());
  std::mt19937_64 rng(5);
  const Trace foreign{"softmax_rows/v1", {{"vw", 4}, {"unroll", 1}, {"par", 0}, {"variant", 0}}};
  EXPECT_TRUE(space->Contains(space->Mutate(foreign, rng)));
}

TEST(SearchSpaceTest, NearestCarriesAScheduleToASimilarWorkload) {
  // BERT's fc1 (128 x 3072 x 768) and fc2 (128 x 768 x 3072) share the sketch but not every
  // candidate value: each decision of one lands on the nearest candidate of the other.
  absl::StatusOr<SearchSpace> fc1 = kernels::CreateSpace(MatMul(1, 128, 3072, 768), Avx512Host());
  absl::StatusOr<SearchSpace> fc2 = kernels::CreateSpace(MatMul(1, 128, 768, 3072), Avx512Host());
  ASSERT_TRUE(fc1.ok() && fc2.ok());
  std::mt19937_64 rng(3);
  int carried = 0;
  for (int draw = 0; draw < 200; ++draw) {
    const Trace trace = fc1->Sample(rng);
    // A trace of the space itself is its own nearest.
    ASSERT_EQ(fc1->Nearest(trace), trace);
    std::optional<Trace> near = fc2->Nearest(trace);
    if (!near) continue;  // the nearest values are pruned for fc2 (e.g. its B panel)
    ++carried;
    EXPECT_TRUE(fc2->Contains(*near)) << near->ToString();
    for (const char* same : {"mr", "nr", "par", "unroll_k", "pack_a", "pack_b"}) {
      EXPECT_EQ(near->Get(same), trace.Get(same)) << same << " of " << trace.ToString();
    }
    // fc1's K block of all 768 becomes fc2's largest block of its 3072 (128..512 deep).
    if (trace.Get("kc") == 768) EXPECT_EQ(near->Get("kc"), 512);
  }
  EXPECT_GT(carried, 50);
  // Another sketch, or other knobs, have no nearest trace.
  const Trace foreign{"softmax_rows/v1", {{"vw", 4}, {"unroll", 1}, {"par", 0}, {"variant", 0}}};
  EXPECT_FALSE(fc2->Nearest(foreign).has_value());
  Trace renamed = fc1->Sample(rng);
  renamed.decisions[0].first = "rows";
  EXPECT_FALSE(fc2->Nearest(renamed).has_value());
}

// A sketch's preferred default (each knob's first value) that this hardware's rules prune gives
// way to the admitted combination nearest to it, not to the first one enumerated: ResNet-50's
// layer-4 3x3 conv under the AVX2 channel mapping on a 512 KiB L2 (an AMD Zen 3 VM), where the
// 387 x 512 weight block of the preferred K block and all output channels breaks the L2 rule
// (the first admitted had the smallest blocks and ran 7.7-14.5 ms there, the nearest 1.67).
TEST(SearchSpaceTest, APrunedPreferredDefaultGivesWayToTheNearestAdmittedOne) {
  ir::ConvParams p;
  p.in_channels = p.out_channels = 512;
  p.in_h = p.in_w = 7;
  p.kernel_h = p.kernel_w = 3;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  target::HardwareInfo hw = Avx2Host();
  hw.cores = 2;
  hw.l1d_bytes = 32 * 1024;
  hw.l2_bytes = 512 * 1024;
  absl::StatusOr<SearchSpace> space =
      kernels::CreateSpaceForMapping(ir::MakeConvWorkload(p), hw, "avx2_fma_channels");
  ASSERT_TRUE(space.ok()) << space.status();
  Trace preferred = space->DefaultTrace();
  for (size_t knob = 0; knob < space->knobs().size(); ++knob) {
    preferred.decisions[knob].second = space->knobs()[knob].values.front();
  }
  ASSERT_FALSE(space->Contains(preferred)) << preferred.ToString();
  const Trace fallback = space->DefaultTrace();
  ASSERT_TRUE(space->Contains(fallback));
  auto distance = [&](const Trace& t) {
    double sum = 0;
    for (size_t knob = 0; knob < t.decisions.size(); ++knob) {
      const int64_t a = t.decisions[knob].second, b = preferred.decisions[knob].second;
      sum += a > 0 && b > 0 ? std::abs(std::log(static_cast<double>(a) / b))
                            : static_cast<double>(std::abs(a - b));
    }
    return sum;
  };
  // No admitted schedule is nearer; the fallback keeps the preferred register tile and staging.
  std::mt19937_64 rng(3);
  for (int sample = 0; sample < 3000; ++sample) {
    const Trace other = space->Sample(rng);
    EXPECT_GE(distance(other) + 1e-12, distance(fallback)) << other.ToString();
  }
  EXPECT_EQ(fallback.Get("mr"), preferred.Get("mr"));
  EXPECT_EQ(fallback.Get("nr"), preferred.Get("nr"));
  EXPECT_EQ(fallback.Get("pack_a"), preferred.Get("pack_a"));
}

TEST(SearchSpaceTest, TinyWorkloadsGetSerialSmallSpaces) {
  absl::StatusOr<SearchSpace> space = kernels::CreateSpace(MatMul(1, 1, 1, 1), Avx512Host());
  ASSERT_TRUE(space.ok());
  for (const Knob& knob : space->knobs()) {
    if (knob.name == "par" || knob.name == "mr" || knob.name == "mc" || knob.name == "nc" ||
        knob.name == "kc") {
      EXPECT_EQ(knob.values.size(), 1u) << knob.name;
    }
  }
  EXPECT_NE(
      space->Describe().find("mm_avx512_fma/v1: mr{1} nr{1} kc{1} mc{1} nc{1} par{0} unroll_k{1}"),
      std::string::npos)
      << space->Describe();
}

TEST(SearchSpaceTest, DescribeNamesSketchAndKnobs) {
  absl::StatusOr<SearchSpace> space =
      kernels::CreateSpace(RowWorkload(ir::AnchorKind::kSoftmax, 12, 197), Avx2Host());
  ASSERT_TRUE(space.ok());
  // Each knob's first value is its default: the widest vector a 197-column row fills.
  EXPECT_EQ(space->Describe(), "softmax_rows/v1: vw{8,4} unroll{1,2,4} par{0} variant{0,1,2}");
}

TEST(LowerScheduleTest, IsDeterministic) {
  std::mt19937_64 rng(13);
  for (const ir::Workload& w : AllClasses()) {
    absl::StatusOr<SearchSpace> space = kernels::CreateSpace(w, Avx512Host());
    ASSERT_TRUE(space.ok());
    for (int sample = 0; sample < 10; ++sample) {
      const Trace trace = space->Sample(rng);
      absl::StatusOr<ir::LoweredFunc> first = LowerSchedule(w, trace, "kern");
      absl::StatusOr<ir::LoweredFunc> second = LowerSchedule(w, trace, "kern");
      ASSERT_TRUE(first.ok() && second.ok());
      EXPECT_EQ(ir::ToString(*first), ir::ToString(*second));
    }
  }
}

TEST(LowerScheduleTest, DifferentTracesGiveDifferentPrograms) {
  const ir::Workload w = MatMul(1, 128, 128, 128);
  absl::StatusOr<Trace> a = Trace::Parse(
      "mm_tiled/v1;mc=64;nc=128;kc=128;mr=4;nr=2;vw=16;par=1;order=0;unroll_k=4;pack_b=0");
  absl::StatusOr<Trace> b = Trace::Parse(
      "mm_tiled/v1;mc=64;nc=128;kc=64;mr=4;nr=2;vw=16;par=1;order=0;unroll_k=4;pack_b=0");
  ASSERT_TRUE(a.ok() && b.ok());
  absl::StatusOr<ir::LoweredFunc> fa = LowerSchedule(w, *a, "k");
  absl::StatusOr<ir::LoweredFunc> fb = LowerSchedule(w, *b, "k");
  ASSERT_TRUE(fa.ok() && fb.ok());
  EXPECT_NE(ir::ToString(*fa), ir::ToString(*fb));
  EXPECT_NE(ir::ToString(*fb).find("ko"), std::string::npos);  // K blocking appears
}

TEST(LowerScheduleTest, RejectsTracesOutsideTheSpace) {
  const ir::Workload w = MatMul(1, 16, 16, 16);
  const std::string good =
      "mm_tiled/v1;mc=16;nc=16;kc=16;mr=4;nr=1;vw=16;par=0;order=0;unroll_k=1;pack_b=0";
  ASSERT_TRUE(LowerSchedule(w, *Trace::Parse(good), "k").ok());
  for (const char* bad :
       {"mm_tiled/v9;mc=16;nc=16;kc=16;mr=4;nr=1;vw=16;par=0;order=0;unroll_k=1;pack_b=0",
        "softmax_rows/v1;vw=4;unroll=1;par=0;variant=0",
        "mm_tiled/v1;mc=16;nc=16;kc=16;mr=4;nr=1;vw=16;par=0;order=0;unroll_k=1",
        "mm_tiled/v1;mc=16;nc=16;kc=16;mr=4;nr=1;vw=16;par=0;order=0;unroll_k=1;pack_b=2",
        "mm_tiled/v1;nc=16;mc=16;kc=16;mr=4;nr=1;vw=16;par=0;order=0;unroll_k=1;pack_b=0",
        "mm_tiled/v1;mc=16;nc=16;kc=16;mr=4;nr=1;vw=16;par=0;order=0;unroll_k=1;pack_b=0;x=1",
        "mm_tiled/v1;mc=16;nc=16;kc=16;mr=9;nr=1;vw=16;par=0;order=0;unroll_k=1;pack_b=0",
        "mm_tiled/v1;mc=16;nc=16;kc=16;mr=4;nr=1;vw=5;par=0;order=0;unroll_k=1;pack_b=0",
        "mm_tiled/v1;mc=0;nc=16;kc=16;mr=4;nr=1;vw=16;par=0;order=0;unroll_k=1;pack_b=0",
        "mm_tiled/v1;mc=16;nc=16;kc=16;mr=4;nr=1;vw=16;par=3;order=0;unroll_k=1;pack_b=0"}) {
    absl::StatusOr<ir::LoweredFunc> func = LowerSchedule(w, *Trace::Parse(bad), "k");
    EXPECT_FALSE(func.ok()) << bad;
    if (!func.ok()) EXPECT_EQ(func.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(SearchSpaceTest, RejectsInconsistentWorkloads) {
  ir::Workload bad_shapes = MatMul(1, 8, 8, 8);
  bad_shapes.inputs[0].shape = {8, 9};
  EXPECT_EQ(kernels::CreateSpace(bad_shapes, Avx512Host()).status().code(),
            absl::StatusCode::kInvalidArgument);

  ir::Workload bad_broadcast = Elementwise({4, 3});
  bad_broadcast.inputs[1].shape = {4};  // [4] does not broadcast against [4, 3]
  absl::Status status = kernels::CreateSpace(bad_broadcast, Avx512Host()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("does not broadcast"), std::string::npos) << status;

  ir::Workload bad_operand = RowWorkload(ir::AnchorKind::kSoftmax, 2, 2);
  bad_operand.epilogue.push_back({ir::EwOp::kAdd, {testing::Acc(), testing::In(3)}});
  EXPECT_EQ(kernels::CreateSpace(bad_operand, Avx512Host()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gtco::schedule
