// Tests of intrinsic mappings (verdicts, one space per mapping, registry order), the named
// resource-pruning rules of the FMA matmul sketches with their statistics, and the replay of
// legacy mm_tiled/v1 traces.
#include "common/schedule/mapping.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "common/ir/conv.h"
#include "common/kernels/cpu/matmul_blocked/matmul_blocked.h"
#include "common/kernels/family.h"
#include "common/kernels/registry.h"
#include "common/schedule/space.h"
#include "common/util/hash.h"
#include "common/util/status.h"
#include "tests/unit/schedule/test_workloads.h"

namespace gtco::kernels {
namespace {

using schedule::testing::MatMul;
using schedule::testing::RowWorkload;

target::HardwareInfo FakeHost(std::vector<std::string> features, int cores) {
  target::HardwareInfo hw;
  hw.cpu_model = "fake";
  hw.cpu_features = std::move(features);
  hw.cores = cores;
  hw.l1d_bytes = 48 * 1024;
  hw.l2_bytes = 2 * 1024 * 1024;
  return hw;
}
target::HardwareInfo Avx512Host() { return FakeHost({"avx", "avx2", "avx512f", "fma"}, 2); }
target::HardwareInfo Avx2Host() { return FakeHost({"avx", "avx2", "fma"}, 2); }
target::HardwareInfo SseHost() { return FakeHost({"sse2", "sse4_2"}, 1); }

/// The verdict of `mapping` among `verdicts`; fails the test when absent.
MappingVerdict Find(const std::vector<MappingVerdict>& verdicts, const std::string& mapping) {
  for (const MappingVerdict& verdict : verdicts) {
    if (verdict.mapping == mapping) return verdict;
  }
  ADD_FAILURE() << "no verdict for " << mapping;
  return {};
}

/// Names of the f32 matmul mappings among `verdicts`, in order.
std::vector<std::string> F32MatMulMappings(const std::vector<MappingVerdict>& verdicts) {
  std::vector<std::string> names;
  for (const MappingVerdict& verdict : verdicts) {
    if (verdict.mapping == "avx512_fma" || verdict.mapping == "avx2_fma" ||
        verdict.mapping == "vector") {
      names.push_back(verdict.mapping);
    }
  }
  return names;
}

const Sketch& SketchNamed(const std::string& name) {
  const Sketch* sketch = SketchByName(name);
  GTCO_CHECK(sketch != nullptr, "no sketch ", name);
  return *sketch;
}

TEST(ExplainMappingsTest, Avx512HostGetsEveryF32MatMulMappingInOrder) {
  const std::vector<MappingVerdict> verdicts = ExplainMappings(MatMul(1, 64, 64, 64), Avx512Host());
  EXPECT_EQ(F32MatMulMappings(verdicts),
            (std::vector<std::string>{"avx512_fma", "avx2_fma", "vector"}));
  for (const char* mapping : {"avx512_fma", "avx2_fma", "vector"}) {
    const MappingVerdict verdict = Find(verdicts, mapping);
    EXPECT_TRUE(verdict.applies) << mapping << ": " << verdict.reason;
    EXPECT_FALSE(verdict.reason.empty());
  }
  EXPECT_NE(Find(verdicts, "avx512_fma").reason.find("avx512f"), std::string::npos);
}

TEST(ExplainMappingsTest, Avx2HostLacksAvx512AndSseHostOnlyVectorizes) {
  const ir::Workload w = MatMul(1, 64, 64, 64);
  const std::vector<MappingVerdict> avx2 = ExplainMappings(w, Avx2Host());
  EXPECT_FALSE(Find(avx2, "avx512_fma").applies);
  EXPECT_NE(Find(avx2, "avx512_fma").reason.find("needs CPU feature avx512f"), std::string::npos)
      << Find(avx2, "avx512_fma").reason;
  EXPECT_TRUE(Find(avx2, "avx2_fma").applies);
  EXPECT_TRUE(Find(avx2, "vector").applies);

  const std::vector<MappingVerdict> sse = ExplainMappings(w, SseHost());
  EXPECT_FALSE(Find(sse, "avx512_fma").applies);
  EXPECT_FALSE(Find(sse, "avx2_fma").applies);
  EXPECT_NE(Find(sse, "avx2_fma").reason.find("avx2, fma"), std::string::npos)
      << Find(sse, "avx2_fma").reason;
  EXPECT_TRUE(Find(sse, "vector").applies);
}

TEST(ExplainMappingsTest, F32MappingsRejectOtherDtypesWithTheReason) {
  ir::Workload w = MatMul(1, 32, 32, 32);
  w.inputs[0].dtype = ir::DType::kBF16;
  w.inputs[1].dtype = ir::DType::kBF16;
  const std::vector<MappingVerdict> verdicts = ExplainMappings(w, Avx512Host());
  for (const char* mapping : {"avx512_fma", "avx2_fma", "vector"}) {
    const MappingVerdict verdict = Find(verdicts, mapping);
    EXPECT_FALSE(verdict.applies) << mapping;
    EXPECT_NE(verdict.reason.find("f32"), std::string::npos) << verdict.reason;
  }
}

TEST(ExplainMappingsTest, RowWorkloadsHaveOneVectorMapping) {
  for (ir::AnchorKind anchor :
       {ir::AnchorKind::kSoftmax, ir::AnchorKind::kLayerNorm, ir::AnchorKind::kReduceMean}) {
    const std::vector<MappingVerdict> verdicts =
        ExplainMappings(RowWorkload(anchor, 4, 100), SseHost());
    ASSERT_EQ(verdicts.size(), 1u) << ir::AnchorKindName(anchor);
    EXPECT_EQ(verdicts[0].mapping, "vector");
    EXPECT_TRUE(verdicts[0].applies);
  }
}

TEST(CreateMappingSpacesTest, OneSpacePerApplicableMappingBestFirst) {
  const ir::Workload w = MatMul(1, 197, 768, 768);
  absl::StatusOr<std::vector<SearchSpace>> spaces = CreateMappingSpaces(w, Avx512Host());
  ASSERT_TRUE(spaces.ok()) << spaces.status();
  std::vector<std::string> mappings, sketches;
  for (const SearchSpace& space : *spaces) {
    mappings.push_back(space.mapping());
    sketches.push_back(space.sketch_name());
  }
  EXPECT_EQ(mappings, (std::vector<std::string>{"avx512_fma", "avx2_fma", "vector"}));
  EXPECT_EQ(sketches,
            (std::vector<std::string>{"mm_avx512_fma/v1", "mm_avx2_fma/v1", "mm_vector/v1"}));

  absl::StatusOr<SearchSpace> first = kernels::CreateSpace(w, Avx512Host());
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->mapping(), "avx512_fma");
  // An untuned workload exports with this default: on a host of two cores, on both.
  EXPECT_EQ(first->DefaultTrace().Get("par"), 1) << first->DefaultTrace().ToString();
  absl::StatusOr<SearchSpace> avx2 = kernels::CreateSpace(w, Avx2Host());
  ASSERT_TRUE(avx2.ok());
  EXPECT_EQ(avx2->mapping(), "avx2_fma");
  absl::StatusOr<SearchSpace> sse = kernels::CreateSpace(w, SseHost());
  ASSERT_TRUE(sse.ok());
  EXPECT_EQ(sse->mapping(), "vector");
}

// Conv mappings by rank: output channels in the lanes first for convs with taps and 32+ output
// channels and for pointwise ones on small planes; pixels in the lanes first for pointwise convs
// on large planes and for few output channels; on AVX2 hosts alike.
TEST(CreateMappingSpacesTest, ConvMappingsAreRankedByShape) {
  const auto first = [](int64_t c, int64_t hw, int64_t k, int64_t r,
                        const target::HardwareInfo& host) {
    ir::ConvParams p;
    p.in_channels = c;
    p.in_h = p.in_w = hw;
    p.out_channels = k;
    p.kernel_h = p.kernel_w = r;
    p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = r / 2;
    absl::StatusOr<std::vector<SearchSpace>> spaces =
        CreateMappingSpaces(ir::MakeConvWorkload(p), host);
    EXPECT_TRUE(spaces.ok()) << spaces.status();
    return spaces.ok() ? spaces->front().mapping() : std::string();
  };
  // 3x3 stride 1 with 16+ input and 32+ output channels: Winograd F(2x2, 3x3); on 7x7 planes
  // only with 256x256+ channels (DenseNet's 128->32 there stays channel-vectorized).
  EXPECT_EQ(first(64, 56, 64, 3, Avx512Host()), "avx512_fma_winograd");
  EXPECT_EQ(first(512, 7, 512, 3, Avx512Host()), "avx512_fma_winograd");
  EXPECT_EQ(first(128, 7, 32, 3, Avx512Host()), "avx512_fma_channels");
  EXPECT_EQ(first(960, 7, 160, 1, Avx512Host()), "avx512_fma_channels");
  EXPECT_EQ(first(64, 56, 256, 1, Avx512Host()), "avx512_fma");
  EXPECT_EQ(first(128, 56, 32, 3, Avx512Host()), "avx512_fma_winograd");
  EXPECT_EQ(first(16, 28, 16, 3, Avx512Host()), "avx512_fma");
  EXPECT_EQ(first(16, 55, 64, 3, Avx512Host()), "avx512_fma_winograd");
  EXPECT_EQ(first(3, 224, 64, 3, Avx512Host()), "avx512_fma_channels");
  EXPECT_EQ(first(64, 56, 64, 3, Avx2Host()), "avx2_fma_winograd");
  EXPECT_EQ(first(64, 56, 256, 1, Avx2Host()), "avx2_fma");
  // CreateSpace (an untuned export's mapping) takes the same first one.
  ir::ConvParams p;
  p.in_channels = p.out_channels = 256;
  p.in_h = p.in_w = 14;
  p.kernel_h = p.kernel_w = 3;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  absl::StatusOr<SearchSpace> space = kernels::CreateSpace(ir::MakeConvWorkload(p), Avx512Host());
  ASSERT_TRUE(space.ok()) << space.status();
  EXPECT_EQ(space->mapping(), "avx512_fma_winograd");
  p.stride_h = p.stride_w = 2;  // a strided 3x3 is no Winograd conv
  space = kernels::CreateSpace(ir::MakeConvWorkload(p), Avx512Host());
  ASSERT_TRUE(space.ok()) << space.status();
  EXPECT_EQ(space->mapping(), "avx512_fma_channels");
}

TEST(CreateMappingSpacesTest, ErrorsNameTheVerdicts) {
  ir::Workload w = MatMul(1, 8, 8, 8);
  w.inputs[0].dtype = ir::DType::kF16;
  absl::Status status = kernels::CreateSpace(w, SseHost()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("vector: needs f32 operands"), std::string::npos) << status;

  absl::Status unknown =
      kernels::CreateSpaceForMapping(MatMul(1, 8, 8, 8), Avx2Host(), "avx512_fma").status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.message().find("avx512f"), std::string::npos) << unknown;
  absl::StatusOr<SearchSpace> vector =
      kernels::CreateSpaceForMapping(MatMul(1, 8, 8, 8), Avx2Host(), "vector");
  ASSERT_TRUE(vector.ok());
  EXPECT_EQ(vector->sketch_name(), "mm_vector/v1");
}

// A worker may describe caches too small for a mapping's every schedule (here a 1 KiB L1: no
// register-blocked FMA tile's panels fit): that mapping has no space, and the workload is tuned
// under the others instead of failing, with the reason in the mapping's verdict.
TEST(CreateMappingSpacesTest, AMappingThatAdmitsNothingIsLeftOutWithItsReason) {
  const ir::Workload w = MatMul(1, 197, 768, 768);
  target::HardwareInfo tiny = Avx2Host();
  tiny.l1d_bytes = 1024;
  std::vector<MappingVerdict> unusable;
  absl::StatusOr<std::vector<SearchSpace>> spaces = CreateMappingSpaces(w, tiny, &unusable);
  ASSERT_TRUE(spaces.ok()) << spaces.status();
  std::vector<std::string> mappings;
  for (const SearchSpace& space : *spaces) mappings.push_back(space.mapping());
  EXPECT_EQ(mappings, (std::vector<std::string>{"vector"}));
  ASSERT_EQ(unusable.size(), 1u);
  EXPECT_EQ(unusable[0].mapping, "avx2_fma");
  EXPECT_FALSE(unusable[0].applies);
  EXPECT_NE(unusable[0].reason.find("every schedule"), std::string::npos) << unusable[0].reason;
  // Without the out-parameter the same spaces come back.
  absl::StatusOr<std::vector<SearchSpace>> again = CreateMappingSpaces(w, tiny);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->size(), 1u);
}

TEST(SketchRegistryTest, EveryMappingSketchAndLegacySketchReplaysByName) {
  std::set<std::string> names;
  for (const MappingSketch* mapping : MappingRegistry()) {
    EXPECT_EQ(SketchByName(mapping->sketch().Name()), &mapping->sketch());
    names.insert(mapping->sketch().Name());
  }
  EXPECT_TRUE(names.count("mm_avx512_fma/v1") && names.count("mm_avx2_fma/v1") &&
              names.count("mm_vector/v1"));
  ASSERT_NE(SketchByName("mm_tiled/v1"), nullptr);  // legacy: no mapping, still replays
  EXPECT_EQ(names.count("mm_tiled/v1"), 0u);
}

TEST(SketchRegistryTest, LegacyMatMulTracesReplayToTheSameProgram) {
  // Golden digests of mm_tiled/v1 lowerings as stored in databases before the mapping
  // registry; a change means stored traces would no longer replay the measured program.
  const ir::Workload w = schedule::testing::MatMulBiasGelu(2, 77, 45, 300, /*trans_b=*/true);
  const struct {
    const char* trace;
    const char* digest;
  } cases[] = {
      {"mm_tiled/v1;mc=64;nc=32;kc=128;mr=6;nr=2;vw=16;par=2;order=0;unroll_k=4;pack_b=1",
       "a52d3b558444be079dc6d2131aa7b134"},
      {"mm_tiled/v1;mc=8;nc=45;kc=300;mr=3;nr=1;vw=8;par=1;order=1;unroll_k=2;pack_b=0",
       "acc5f67639252b05a076be32a720fc9c"},
  };
  for (const auto& legacy : cases) {
    absl::StatusOr<ir::LoweredFunc> func = LowerSchedule(w, *Trace::Parse(legacy.trace), "k");
    ASSERT_TRUE(func.ok()) << func.status();
    EXPECT_EQ(util::HexDigest128(ir::ToString(*func)), legacy.digest) << legacy.trace;
  }
}

// ---- pruning rules ----------------------------------------------------------------------------

/// Values in the blocked sketches' knob order: mr nr kc mc nc par unroll_k pack_a pack_b.
KnobValues Blocked(int64_t mr, int64_t nr, int64_t kc, int64_t mc, int64_t nc, int64_t par = 0,
                   int64_t unroll_k = 1) {
  return {mr, nr, kc, mc, nc, par, unroll_k, 0, 1};
}

std::string RuleOf(const char* sketch, const ir::Workload& w, const target::HardwareInfo& hw,
                   const KnobValues& values) {
  const char* rule = SketchNamed(sketch).PruneRule(w, hw, values);
  return rule == nullptr ? "admitted" : rule;
}

TEST(PruneRuleTest, Avx512RulesRejectTheExpectedCombinations) {
  const char* sketch = "mm_avx512_fma/v1";
  const target::HardwareInfo hw = Avx512Host();
  const ir::Workload w = MatMul(1, 1024, 1024, 1024);
  EXPECT_EQ(RuleOf(sketch, w, hw, Blocked(6, 4, 256, 256, 512)), "admitted");
  EXPECT_EQ(RuleOf(sketch, w, hw, Blocked(14, 2, 256, 256, 512)), "admitted");       // 31 registers
  EXPECT_EQ(RuleOf(sketch, w, hw, Blocked(8, 4, 256, 256, 512)), "register_file");   // 37
  EXPECT_EQ(RuleOf(sketch, w, hw, Blocked(12, 3, 256, 256, 512)), "register_file");  // 40
  // kc 1024 x 64 columns of B (256 KiB) + 6 x 1024 of A: over 4 x 48 KiB.
  EXPECT_EQ(RuleOf(sketch, w, hw, Blocked(6, 4, 1024, 128, 512)), "l1_tile");
  // A block 1024 x 512 + B block 512 x 1024, 4 MiB: over the 2 MiB L2.
  EXPECT_EQ(RuleOf(sketch, w, hw, Blocked(4, 1, 512, 1024, 1024)), "l2_panel");
  // 48-column tiles do not divide a 256-column N block.
  EXPECT_EQ(RuleOf(sketch, w, hw, Blocked(8, 3, 256, 256, 256)), "alignment");
  EXPECT_EQ(RuleOf(sketch, w, hw, Blocked(8, 3, 256, 256, 384)), "admitted");
  // One task cannot feed two cores (A 1024 x 256 + B 256 x 1024 just fit the 2 MiB L2); a
  // tiny matmul is not worth a parallel loop.
  EXPECT_EQ(RuleOf(sketch, w, hw, Blocked(6, 4, 256, 1024, 1024, 1)), "too_small_to_parallelize");
  EXPECT_EQ(RuleOf(sketch, MatMul(1, 96, 96, 64), hw, Blocked(6, 4, 64, 96, 96, 1)),
            "too_small_to_parallelize");
  EXPECT_EQ(RuleOf(sketch, MatMul(1, 512, 64, 64), hw, Blocked(6, 4, 64, 512, 64, 1)),
            "too_small_to_parallelize");  // 1 task on 2 cores
  EXPECT_EQ(RuleOf(sketch, MatMul(1, 512, 64, 64), hw, Blocked(6, 4, 64, 256, 64, 1)), "admitted");
  EXPECT_EQ(RuleOf(sketch, MatMul(1, 64, 64, 2), hw, Blocked(6, 4, 2, 64, 64, 0, 4)),
            "exceeds_shape");  // unroll 4 over a K block of 2
}

// The channel-vectorized conv (pixels x channels x patch rows: 3136 x 64 x 576 for ResNet's
// first 3x3) keeps its packed patch block within half of L2 (1 MiB of the 2 MiB here), and its
// default trace is admitted: 6 x 4 tiles, the largest pixel block that fits, patches packed.
TEST(PruneRuleTest, ChannelConvKeepsPackedPatchesInL2) {
  const char* sketch = "conv_avx512_fma_channels/v1";
  const target::HardwareInfo hw = Avx512Host();
  ir::ConvParams p;
  p.in_channels = p.out_channels = 64;
  p.in_h = p.in_w = 56;
  p.kernel_h = p.kernel_w = 3;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  const ir::Workload w = ir::MakeConvWorkload(p);
  auto conv = [](int64_t kc, int64_t mc, int64_t pack_a) {
    return KnobValues{6, 4, kc, mc, 64, 1, 1, pack_a, 2};
  };
  EXPECT_EQ(RuleOf(sketch, w, hw, conv(576, 392, 1)), "admitted");         // 882 KiB
  EXPECT_EQ(RuleOf(sketch, w, hw, conv(576, 1568, 1)), "l2_patch_block");  // 3.4 MiB
  EXPECT_EQ(RuleOf(sketch, w, hw, conv(192, 1568, 1)), "l2_patch_block");  // 1.1 MiB
  // A 1x1 conv reads its image in place: no block to pack.
  ir::ConvParams pointwise = p;
  pointwise.kernel_h = pointwise.kernel_w = 1;
  pointwise.pad_top = pointwise.pad_left = pointwise.pad_bottom = pointwise.pad_right = 0;
  EXPECT_EQ(RuleOf(sketch, ir::MakeConvWorkload(pointwise), hw,
                   KnobValues{6, 4, 64, 1568, 64, 1, 1, 0, 2}),
            "admitted");
  // A staged band (pack_a 2) holds the block's input rows once, not R*S-fold: the 3.4 MiB
  // patch block above is a 0.45 MiB band (64 channels x 31 rows x 58 columns).
  EXPECT_EQ(RuleOf(sketch, w, hw, conv(576, 1568, 2)), "admitted");
  EXPECT_EQ(RuleOf(sketch, w, hw, conv(288, 1568, 2)), "admitted");
  // Its K blocks hold whole channels (kc a multiple of the 9 taps, or all of K).
  EXPECT_EQ(RuleOf(sketch, w, hw, conv(192, 1568, 2)), "staged_channels");
  ir::ConvParams wide = p;
  wide.in_channels = 256;  // a whole-K band of 256 channels x 58 x 58: 3.3 MiB
  EXPECT_EQ(
      RuleOf(sketch, ir::MakeConvWorkload(wide), hw, KnobValues{6, 4, 2304, 3136, 64, 1, 1, 2, 2}),
      "l2_band");
  // A block of every pixel of ResNet's stem (12544 x 98 > 4 MiB as packed A) stages a band of
  // 2 channels x 229 x 229: admitted, and it lowers (the plan's packed-A size limit does not
  // apply to a staged A).
  const ir::ConvParams stem = schedule::testing::ResNetStem();
  const KnobValues whole_image{12, 2, 98, 12544, 32, 0, 4, 2, 2};
  EXPECT_EQ(RuleOf(sketch, ir::MakeConvWorkload(stem), hw, whole_image), "admitted");
  absl::StatusOr<ir::LoweredFunc> lowered =
      static_cast<const schedule::LoopSketch&>(SketchNamed(sketch))
          .Lower(ir::MakeConvWorkload(stem), whole_image, "stem");
  EXPECT_TRUE(lowered.ok()) << lowered.status();
  absl::StatusOr<SearchSpace> space = CreateSpaceForMapping(w, hw, "avx512_fma_channels");
  ASSERT_TRUE(space.ok()) << space.status();
  const Trace chosen = space->DefaultTrace();
  EXPECT_EQ(chosen.Get("mr"), 6);
  EXPECT_EQ(chosen.Get("nr"), 4);
  EXPECT_EQ(chosen.Get("pack_a"), 2);
  EXPECT_EQ(chosen.Get("pack_b"), 2);
  EXPECT_EQ(chosen.Get("kc").value_or(0) % 9, 0) << chosen.ToString();
  // The pixels split evenly over the host's cores (the busiest core's share least).
  const int64_t mc = chosen.Get("mc").value_or(0);
  EXPECT_EQ((3136 + mc - 1) / mc % hw.cores, 0) << chosen.ToString();
}

// Besides its default (6 x 4 tiles), the channel conv's space seeds the search with the next
// narrower tile (4 x 4) and half the vectors (6 x 2), the rest of the default unchanged: on the
// stem those ran at ~520 µs where the default ran at ~830 (conv_sketch.cc, Seeds).
TEST(SeedTest, ChannelConvSeedsANarrowerAndAHalfWidthTile) {
  const target::HardwareInfo hw = Avx512Host();
  const ir::Workload stem = ir::MakeConvWorkload(schedule::testing::ResNetStem());
  absl::StatusOr<SearchSpace> space = CreateSpaceForMapping(stem, hw, "avx512_fma_channels");
  ASSERT_TRUE(space.ok()) << space.status();
  const Trace fallback = space->DefaultTrace();
  ASSERT_EQ(fallback.Get("mr"), 6);
  ASSERT_EQ(fallback.Get("nr"), 4);
  const std::vector<Trace> seeds = space->SeedTraces();
  ASSERT_EQ(seeds.size(), 2u);
  EXPECT_EQ(seeds[0].Get("mr"), 4);
  EXPECT_EQ(seeds[0].Get("nr"), 4);
  EXPECT_EQ(seeds[1].Get("mr"), 6);
  EXPECT_EQ(seeds[1].Get("nr"), 2);
  for (const Trace& seed : seeds) {
    EXPECT_TRUE(space->Contains(seed)) << seed.ToString();
    for (const char* knob : {"kc", "mc", "nc", "par", "unroll_k", "pack_a", "pack_b"}) {
      EXPECT_EQ(seed.Get(knob), fallback.Get(knob)) << knob << " of " << seed.ToString();
    }
  }
  // A mapping without seeds (the pixel-vectorized conv) has none.
  absl::StatusOr<SearchSpace> pixels = CreateSpaceForMapping(stem, hw, "avx512_fma");
  ASSERT_TRUE(pixels.ok()) << pixels.status();
  EXPECT_TRUE(pixels->SeedTraces().empty());
}

// Where no usual row count divides the pixels (layer 4's 7x7 planes: 49 = 6 x 8 + 1), the
// space offers the tile rows that do (7) and seeds the search with them, as many vectors of
// channels as the 32 registers hold and the default's N block (1024 here) holds whole (7 x 2;
// 7 x 3 would leave 1024 % 48 columns); elsewhere (the stem's 12544 pixels, 8 | 12544) not.
TEST(SeedTest, ChannelConvSeedsTileRowsDividingThePixels) {
  const target::HardwareInfo hw = Avx512Host();
  ir::ConvParams layer4;
  layer4.in_channels = 512;
  layer4.in_h = layer4.in_w = 7;
  layer4.out_channels = 2048;
  const ir::Workload w = ir::MakeConvWorkload(layer4);
  absl::StatusOr<SearchSpace> space = CreateSpaceForMapping(w, hw, "avx512_fma_channels");
  ASSERT_TRUE(space.ok()) << space.status();
  const std::vector<Trace> seeds = space->SeedTraces();
  ASSERT_EQ(seeds.size(), 3u);
  EXPECT_EQ(seeds[0].Get("mr"), 7);
  EXPECT_EQ(seeds[0].Get("nr"), 2);
  EXPECT_EQ(seeds[0].Get("nc"), space->DefaultTrace().Get("nc"));
  EXPECT_TRUE(space->Contains(seeds[0])) << seeds[0].ToString();
  EXPECT_EQ(internal::DividingTileRows(internal::Avx512FmaSpec(), 49), 7);
  EXPECT_EQ(internal::DividingTileRows(internal::Avx512FmaSpec(), 12544), 0);  // 8 divides it
  EXPECT_EQ(internal::DividingTileRows(internal::Avx512FmaSpec(), 197), 0);    // prime
  EXPECT_EQ(internal::DividingTileRows(internal::Avx512FmaSpec(), 10), 0);     // below the widest
}

TEST(PruneRuleTest, Avx2RulesUseSixteenRegistersAndEightLanes) {
  const char* sketch = "mm_avx2_fma/v1";
  target::HardwareInfo hw = Avx2Host();
  hw.l1d_bytes = 32 * 1024;
  hw.l2_bytes = 512 * 1024;
  const ir::Workload w = MatMul(1, 512, 512, 512);
  EXPECT_EQ(RuleOf(sketch, w, hw, Blocked(6, 2, 256, 64, 256)), "admitted");       // 15 registers
  EXPECT_EQ(RuleOf(sketch, w, hw, Blocked(4, 3, 256, 64, 240)), "admitted");       // 16
  EXPECT_EQ(RuleOf(sketch, w, hw, Blocked(6, 3, 256, 64, 240)), "register_file");  // 22
  // 512 x 24 columns (48 KiB) + 4 x 512 (8 KiB): within 4 x 32 KiB of L1.
  EXPECT_EQ(RuleOf(sketch, w, hw, Blocked(4, 3, 512, 64, 96)), "admitted");
  // A 512 x 256 + B 256 x 512 = 1 MiB: over a 512 KiB L2.
  EXPECT_EQ(RuleOf(sketch, w, hw, Blocked(6, 2, 256, 512, 512)), "l2_panel");
  EXPECT_EQ(RuleOf(sketch, w, hw, Blocked(4, 3, 128, 64, 256)), "alignment");  // 256 % 24
  // The first failing rule in the fixed order is the one reported.
  EXPECT_EQ(RuleOf(sketch, w, hw, Blocked(6, 3, 512, 512, 256)), "register_file");
}

TEST(PruneStatsTest, CountsTheWholeProductByFirstFailingRule) {
  for (const target::HardwareInfo& hw : {Avx512Host(), Avx2Host()}) {
    absl::StatusOr<SearchSpace> space = kernels::CreateSpace(MatMul(1, 1024, 1024, 1024), hw);
    ASSERT_TRUE(space.ok());
    const PruneStats& stats = space->prune_stats();
    int64_t product = 1;
    for (const Knob& knob : space->knobs()) product *= knob.values.size();
    EXPECT_EQ(stats.considered, product);
    EXPECT_FALSE(stats.sampled);
    int64_t pruned = 0;
    for (const auto& [rule, count] : stats.pruned_by_rule) pruned += count;
    EXPECT_EQ(stats.admitted + pruned, stats.considered);
    EXPECT_GT(stats.admitted, 0);
    for (const char* rule : {"register_file", "l1_tile", "l2_panel", "alignment"}) {
      // 8-lane panels never exceed 4 x L1 with the kc candidates (at most 1024).
      if (std::string(rule) == "l1_tile" && !hw.HasFeature("avx512f")) continue;
      EXPECT_GT(stats.pruned_by_rule.count(rule) ? stats.pruned_by_rule.at(rule) : 0, 0)
          << rule << " on " << hw.Summary();
    }
    // Samples are admitted combinations only.
    std::mt19937_64 rng(17);
    const Sketch& sketch = SketchNamed(space->sketch_name());
    for (int sample = 0; sample < 300; ++sample) {
      const Trace trace = space->Sample(rng);
      KnobValues values;
      for (const auto& decision : trace.decisions) values.push_back(decision.second);
      EXPECT_EQ(sketch.PruneRule(MatMul(1, 1024, 1024, 1024), hw, values), nullptr)
          << trace.ToString();
    }
  }
}

TEST(PruneStatsTest, TinyWorkloadsAreTooSmallToParallelize) {
  absl::StatusOr<SearchSpace> space =
      kernels::CreateSpaceForMapping(MatMul(1, 64, 64, 64), Avx512Host(), "vector");
  ASSERT_TRUE(space.ok());
  // 0.5 MFLOP: no parallel candidate at all.
  for (const Knob& knob : space->knobs()) {
    if (knob.name == "par") EXPECT_EQ(knob.values, std::vector<int64_t>{0});
  }
  absl::StatusOr<SearchSpace> batched =
      kernels::CreateSpace(MatMul(12, 197, 64, 197), Avx512Host());
  ASSERT_TRUE(batched.ok());
  EXPECT_EQ(batched->prune_stats().pruned_by_rule.count("too_small_to_parallelize"), 0u);
}

/// A test sketch of `num_knobs` knobs with values 0..9 (9 first when `nine_first`): rule_a
/// rejects a < 3, then rule_b rejects b < 5.
class FakeSketch final : public LoopSketch {
 public:
  FakeSketch(int num_knobs, bool nine_first) : num_knobs_(num_knobs), nine_first_(nine_first) {}
  const char* Name() const override { return "test_fake/v1"; }
  std::vector<std::string> KnobNames() const override {
    const std::vector<std::string> names = {"a", "b", "c", "d", "e", "f"};
    return std::vector<std::string>(names.begin(), names.begin() + num_knobs_);
  }
  bool AppliesTo(const ir::Workload&) const override { return true; }
  std::vector<Knob> Knobs(const ir::Workload&, const target::HardwareInfo&) const override {
    std::vector<Knob> knobs;
    for (const std::string& name : KnobNames()) {
      knobs.push_back({name, nine_first_ ? std::vector<int64_t>{9, 0, 1, 2, 3, 4, 5, 6, 7, 8}
                                         : std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}});
    }
    return knobs;
  }
  const char* PruneRule(const ir::Workload&, const target::HardwareInfo&,
                        const KnobValues& values) const override {
    if (values[0] < 3) return "rule_a";
    if (values[1] < 5) return "rule_b";
    return nullptr;
  }
  bool Admits(const ir::Workload& w, const target::HardwareInfo& hw,
              const KnobValues& values) const override {
    return PruneRule(w, hw, values) == nullptr;
  }
  absl::StatusOr<ir::LoweredFunc> Lower(const ir::Workload&, const KnobValues&,
                                        const std::string& func_name) const override {
    return ir::LoweredFunc{func_name, {}, ir::MakeBlock({})};
  }

 private:
  int num_knobs_;
  bool nine_first_;
};

class FakeMapping final : public MappingSketch {
 public:
  FakeMapping(int num_knobs, bool nine_first) : sketch_(num_knobs, nine_first) {}
  const char* Name() const override { return "huge"; }
  const Sketch& sketch() const override { return sketch_; }
  MappingVerdict Explain(const ir::Workload&, const target::HardwareInfo&) const override {
    return {Name(), true, "test"};
  }

 private:
  FakeSketch sketch_;
};

TEST(PruneStatsTest, LargeProductsAreSampledAndScaled) {
  const FakeMapping mapping(/*num_knobs=*/6, /*nine_first=*/true);
  absl::StatusOr<SearchSpace> space =
      SearchSpace::CreateFromMapping(MatMul(1, 8, 8, 8), Avx512Host(), mapping);
  ASSERT_TRUE(space.ok()) << space.status();
  const PruneStats& stats = space->prune_stats();
  EXPECT_TRUE(stats.sampled);
  EXPECT_EQ(stats.considered, 1000000);
  EXPECT_NEAR(stats.pruned_by_rule.at("rule_a"), 300000, 10000);
  EXPECT_NEAR(stats.pruned_by_rule.at("rule_b"), 350000, 10000);
  EXPECT_NEAR(stats.admitted, 350000, 10000);
  EXPECT_EQ(space->mapping(), "huge");
  // The all-first-values trace (a = 9, b = 9) is admitted and is the default.
  EXPECT_EQ(space->DefaultTrace().ToString(), "test_fake/v1;a=9;b=9;c=9;d=9;e=9;f=9");
}

TEST(PruneStatsTest, DefaultFallsBackToTheFirstAdmittedCombination) {
  const FakeMapping mapping(/*num_knobs=*/3, /*nine_first=*/false);
  absl::StatusOr<SearchSpace> space =
      SearchSpace::CreateFromMapping(MatMul(1, 8, 8, 8), Avx512Host(), mapping);
  ASSERT_TRUE(space.ok()) << space.status();
  EXPECT_FALSE(space->prune_stats().sampled);
  EXPECT_EQ(space->prune_stats().considered, 1000);
  EXPECT_EQ(space->prune_stats().admitted, 7 * 5 * 10);
  EXPECT_EQ(space->prune_stats().pruned_by_rule.at("rule_a"), 300);
  EXPECT_EQ(space->prune_stats().pruned_by_rule.at("rule_b"), 7 * 5 * 10);
  EXPECT_EQ(space->DefaultTrace().ToString(), "test_fake/v1;a=3;b=5;c=0");
  EXPECT_TRUE(space->Contains(space->DefaultTrace()));
}

TEST(PruneStatsTest, EverythingPrunedIsAnError) {
  target::HardwareInfo hw = Avx2Host();
  hw.l2_bytes = 64;
  absl::Status status =
      kernels::CreateSpaceForMapping(MatMul(1, 64, 64, 64), hw, "avx2_fma").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("every schedule of mapping 'avx2_fma' is pruned"),
            std::string::npos)
      << status;
}

}  // namespace
}  // namespace gtco::kernels
