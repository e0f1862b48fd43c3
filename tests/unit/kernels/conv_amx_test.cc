// The AMX conv of inputs in the pair layout ("conv_amx_bf16/v2"): the workload's layout and
// reference, the mapping's verdicts, the TileMatMul taps and K passes in the IR, and
// JIT-compiled kernels (every knob value, kc's passes included, 1x1 and 3x3, strided,
// asymmetric pads, two images, an epilogue) against the reference where the host has AMX.
#include "common/kernels/cpu/conv/conv_amx.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/codegen/llvm/jit.h"
#include "common/codegen/llvm/llvm_codegen.h"
#include "common/ir/conv.h"
#include "common/ir/reference.h"
#include "common/kernels/cpu/conv/conv_pairs.h"
#include "common/kernels/family.h"
#include "common/kernels/prepack.h"
#include "common/kernels/registry.h"
#include "common/target/target.h"
#include "tests/unit/kernels/conv_test_workloads.h"

namespace gtco::kernels {
namespace {

using ir::DType;
using schedule::KnobValues;
using schedule::Trace;

/// A conv of bf16 X in the pair layout and bf16 W (testing::ConvShape; pads top, left, bottom,
/// right).
ir::Workload PairsConv(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r,
                       int64_t pad_top, int64_t pad_left, int64_t pad_bottom, int64_t pad_right,
                       int64_t stride = 1) {
  ir::ConvParams p = testing::ConvShape(n, c, h, w, k, r, r, stride, /*pad=*/0);
  p.pad_top = pad_top;
  p.pad_left = pad_left;
  p.pad_bottom = pad_bottom;
  p.pad_right = pad_right;
  p.x_pairs = true;
  ir::Workload work = ir::MakeConvWorkload(p);
  work.inputs[0].dtype = DType::kBF16;
  work.inputs[1].dtype = DType::kBF16;
  return work;
}

/// An image of nonzero values through the pair layout of `w` and back: every value once in the
/// layout, everything else zero; random inputs keep the layout's padding zero too (the kernels
/// read it as the padding).
void ExpectTheLayoutRoundTrips(const ir::Workload& w) {
  const ir::ConvParams& p = w.conv;
  std::vector<float> image(p.batch * p.in_channels * p.in_h * p.in_w);
  for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<float>(i + 1);
  const std::vector<float> pairs = ir::ConvImageToPairs(p, image);
  EXPECT_EQ(ir::ConvPairsToImage(p, pairs), image);
  int64_t nonzero = 0;
  for (float value : pairs) nonzero += value != 0.0f;
  EXPECT_EQ(nonzero, static_cast<int64_t>(image.size()));
  const std::vector<std::vector<float>> random = ir::RandomInputs(w, 5);
  nonzero = 0;
  for (float value : random[0]) nonzero += value != 0.0f;
  EXPECT_LE(nonzero, static_cast<int64_t>(image.size()));
  EXPECT_EQ(random[0], ir::ConvImageToPairs(p, ir::ConvPairsToImage(p, random[0])));
}

TEST(ConvPairsTest, TheLayoutRoundTripsAndKeepsItsPaddingZero) {
  const ir::Workload w = PairsConv(2, 4, 3, 5, 16, 3, 1, 2, 0, 1);
  ASSERT_TRUE(w.Validate().ok()) << w.Validate();
  const ir::ConvParams& p = w.conv;
  // (3 + 1 + 0) x (5 + 2 + 1) padded pixels; after each image's two pairs, three zero planes (the
  // 80-pixel tail).
  EXPECT_EQ(ir::ConvPairPlane(p), 4 * 8);
  EXPECT_EQ(ir::ConvPairTailPlanes(p), 3);
  EXPECT_EQ(w.inputs[0].shape, (std::vector<int64_t>{2, 2 + 3, 32, 2}));
  // Channel 3 of image 1, pixel (2, 4): pair 1, padded pixel (3, 6).
  EXPECT_EQ(ir::ConvPairIndex(p, 1, 3, 2, 4), ((1 * 5 + 1) * 32 + 3 * 8 + 6) * 2 + 1);
  ExpectTheLayoutRoundTrips(w);
  // The canonical text names the layout and parses back.
  EXPECT_NE(w.CanonicalString().find("layout=pairs"), std::string::npos);
  absl::StatusOr<ir::Workload> parsed = ir::ParseWorkload(w.CanonicalString());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->Key(), w.Key());
  EXPECT_TRUE(parsed->conv.x_pairs);
  ir::Workload plain = w;
  plain.conv.x_pairs = false;
  plain.inputs[0].shape = ir::ConvXShape(plain.conv);
  EXPECT_NE(plain.Key(), w.Key());
}

// A strided conv's planes hold the padded image's stride phases: every pixel once, in the phase
// of its row and column parities, the layout's padding and tails zero.
TEST(ConvPairsTest, AStridedConvsPlanesHoldTheImagesPhases) {
  const ir::Workload w = PairsConv(1, 4, 7, 8, 16, 3, 1, 1, 1, 0, /*stride=*/2);
  ASSERT_TRUE(w.Validate().ok()) << w.Validate();
  const ir::ConvParams& p = w.conv;
  // Padded 9 x 9: phases of ceil(9 / 2) = 5 rows and columns, four of them, then the tail.
  EXPECT_EQ(ir::ConvPairPhaseH(p), 5);
  EXPECT_EQ(ir::ConvPairPhaseW(p), 5);
  EXPECT_EQ(ir::ConvPairPlane(p), 4 * 25);
  EXPECT_EQ(ir::ConvPairTailPlanes(p), 1);
  // Channel 2 pixel (2, 4): padded (3, 5), phase (1, 1) = 3, its pixel (1, 2).
  EXPECT_EQ(ir::ConvPairIndex(p, 0, 2, 2, 4), (1 * 100 + 3 * 25 + 1 * 5 + 2) * 2);
  ExpectTheLayoutRoundTrips(w);
  ir::Workload unit = PairsConv(1, 4, 7, 8, 16, 3, 1, 1, 1, 0);
  EXPECT_NE(unit.Key(), w.Key());
}

TEST(ConvPairsTest, ThePairLayoutIsRefusedWhereItCannotHold) {
  ir::Workload strided = PairsConv(1, 32, 12, 12, 16, 3, 1, 1, 1, 1, /*stride=*/5);
  EXPECT_NE(strided.Validate().message().find("strides of at most 4"), std::string::npos)
      << strided.Validate();
  ir::Workload dilated = PairsConv(1, 32, 12, 12, 16, 3, 1, 1, 1, 1);
  dilated.conv.dilation_h = 2;
  dilated.output.shape = ir::ConvOutShape(dilated.conv);
  EXPECT_NE(dilated.Validate().message().find("unit dilations"), std::string::npos)
      << dilated.Validate();
  ir::Workload f32 = PairsConv(1, 32, 8, 8, 16, 3, 1, 1, 1, 1);
  f32.inputs[0].dtype = DType::kF32;
  EXPECT_NE(f32.Validate().message().find("bf16 X and W"), std::string::npos) << f32.Validate();
  const ir::Workload odd_k = PairsConv(1, 32, 8, 8, 24, 1, 0, 0, 0, 0);
  EXPECT_NE(internal::AmxConvMismatch(odd_k).find("multiple of 16"), std::string::npos);
  const ir::Workload odd_c = PairsConv(1, 48, 8, 8, 16, 1, 0, 0, 0, 0);
  EXPECT_NE(internal::AmxConvMismatch(odd_c).find("multiple of 32"), std::string::npos);
  // The f32 conv sketches leave pair-layout convs alone.
  const ir::Workload good = PairsConv(1, 64, 8, 8, 32, 3, 1, 1, 1, 1);
  const target::HardwareInfo hw = target::DetectHostCpu();
  for (const schedule::MappingVerdict& verdict : ExplainMappings(good, hw)) {
    if (verdict.mapping != "amx_bf16" && verdict.mapping != "avx512_bf16" &&
        verdict.mapping != "avx512_bf16_channels") {
      EXPECT_FALSE(verdict.applies) << verdict.mapping << ": " << verdict.reason;
    }
  }
}

TEST(ConvPairsTest, OneTileMatMulWalksEveryTapFromThePairLayout) {
  const ir::Workload w = PairsConv(1, 64, 6, 7, 32, 3, 1, 1, 1, 1);
  const Trace trace{internal::kAmxConvSketchName,
                    {{"mr", 2}, {"nr", 1}, {"order", 0}, {"tasks", 2}, {"pack_b", 2}, {"kc", 0}}};
  absl::StatusOr<ir::LoweredFunc> func = LowerSchedule(w, trace, "kernel");
  ASSERT_TRUE(func.ok()) << func.status();
  const std::string text = ir::ToString(func->body);
  // Padded width 9: taps at (r * 9 + s) * 4 bytes; rows of B a plane apart (4 bytes a pixel).
  EXPECT_NE(text.find("b_taps={0, 4, 8, 36, 40, 44, 72, 76, 80}"), std::string::npos) << text;
  EXPECT_NE(text.find(absl::StrCat("b_row_stride=", 4 * ir::ConvPairPlane(w.conv))),
            std::string::npos);
  EXPECT_NE(text.find("k_steps=2"), std::string::npos);  // 64 channels: two 32-channel steps
  // The IR text parses the taps back the same (operands round trip).
  absl::StatusOr<std::string> llvm_ir = codegen::EmitLlvmIr(*func);
  ASSERT_TRUE(llvm_ir.ok()) << llvm_ir.status();
  EXPECT_NE(llvm_ir->find("tdpbf16ps"), std::string::npos);
  // Stride 2 on a padded 10 x 10: four 5 x 5 phases; tap (r, s) in phase (r % 2, s % 2) at
  // pixel (r / 2, s / 2) of it.
  const ir::Workload strided = PairsConv(1, 64, 8, 8, 32, 3, 1, 1, 1, 1, /*stride=*/2);
  absl::StatusOr<ir::LoweredFunc> strided_func = LowerSchedule(strided, trace, "kernel");
  ASSERT_TRUE(strided_func.ok()) << strided_func.status();
  EXPECT_NE(ir::ToString(strided_func->body).find("b_taps={0, 100, 4, 200, 300, 204, 20, 120, 24}"),
            std::string::npos)
      << ir::ToString(strided_func->body);
  // A "/v1" trace (no kc) still lowers: the same program as kc 0.
  const Trace v1{internal::kAmxConvSketchNameV1,
                 {{"mr", 2}, {"nr", 1}, {"order", 0}, {"tasks", 2}, {"pack_b", 2}}};
  absl::StatusOr<ir::LoweredFunc> v1_func = LowerSchedule(w, v1, "kernel");
  ASSERT_TRUE(v1_func.ok()) << v1_func.status();
  EXPECT_EQ(ir::ToString(v1_func->body), text);
  // kc 2: K in passes of 2 steps (64 channels: 2 steps a tap, so one pass a tap), the first from
  // zero, the others accumulating, per column block of the group, no taps inside a TileMatMul.
  Trace passes = trace;
  passes.decisions.back().second = 2;
  absl::StatusOr<ir::LoweredFunc> passes_func = LowerSchedule(w, passes, "kernel");
  ASSERT_TRUE(passes_func.ok()) << passes_func.status();
  const std::string passes_text = ir::ToString(passes_func->body);
  EXPECT_NE(passes_text.find("k_steps=2, nr=1"), std::string::npos) << passes_text;
  EXPECT_NE(passes_text.find(", accumulate"), std::string::npos);
  EXPECT_EQ(passes_text.find("b_taps="), std::string::npos);
  EXPECT_NE(passes_text.find("serial for (pass, 1, 8)"), std::string::npos) << passes_text;
  passes.decisions.back().second = 3;  // does not divide the 2 steps of a tap
  EXPECT_FALSE(LowerSchedule(w, passes, "kernel").ok());
  // Weights only pre-packed.
  const Trace unpacked{
      internal::kAmxConvSketchName,
      {{"mr", 2}, {"nr", 1}, {"order", 0}, {"tasks", 2}, {"pack_b", 1}, {"kc", 0}}};
  EXPECT_FALSE(LowerSchedule(w, unpacked, "kernel").ok());
  // The weights' packing: [K, C, R, S] -> [K, R, S, C].
  std::vector<float> weights(32 * 64 * 9);
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<float>(i);
  absl::StatusOr<std::optional<PrepackedOperand>> packed = PrepackConstantB(w, trace, weights);
  ASSERT_TRUE(packed.ok()) << packed.status();
  ASSERT_TRUE(packed->has_value());
  EXPECT_EQ((*packed)->shape, (std::vector<int64_t>{32, 9 * 64}));
  // Output channel 5, tap (1, 2) = 5, channel 7.
  EXPECT_EQ((*packed)->data[(5 * 9 + 5) * 64 + 7], weights[(5 * 64 + 7) * 9 + 5]);
}

class ConvAmxJitTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    hw_ = new target::HardwareInfo(target::DetectHostCpu());
    absl::StatusOr<std::unique_ptr<codegen::CpuJit>> jit = codegen::CpuJit::Create();
    if (jit.ok()) jit_ = jit->release();
  }
  static void TearDownTestSuite() {
    delete jit_;
    jit_ = nullptr;
    delete hw_;
  }
  bool HostRunsAmx() {
    return jit_ != nullptr && MissingCpuFeatures(*hw_, {"avx512f", "amx_tile", "amx_bf16"}).empty();
  }

  /// Every admitted knob combination of `w` for `sketch` (each one's weights packed as exported),
  /// or every `every`-th one of them and the last, against the reference.
  void CheckAllKernels(const ir::Workload& w, uint64_t seed,
                       const schedule::Sketch& sketch = ConvAmxBf16Sketch(), int every = 1) {
    ASSERT_TRUE(w.Validate().ok()) << w.Validate();
    const auto& loop_sketch = static_cast<const schedule::LoopSketch&>(sketch);
    const std::vector<ir::TypedBuffer> inputs = ir::RandomTypedInputs(w, seed);
    const ir::TypedBuffer expected = ir::ComputeTypedReference(w, inputs);
    double rtol, atol;
    ir::DefaultTolerance(w, &rtol, &atol);
    const std::vector<schedule::Knob> knobs = sketch.Knobs(w, *hw_);
    std::vector<KnobValues> all = {{}};
    for (const schedule::Knob& knob : knobs) {
      std::vector<KnobValues> next;
      for (const KnobValues& prefix : all) {
        for (int64_t value : knob.values) {
          KnobValues values = prefix;
          values.push_back(value);
          next.push_back(values);
        }
      }
      all = next;
    }
    std::vector<KnobValues> admitted;
    for (const KnobValues& values : all) {
      if (sketch.Admits(w, *hw_, values)) admitted.push_back(values);
    }
    int checked = 0;
    for (size_t index = 0; index < admitted.size(); ++index) {
      if (index % every != 0 && index + 1 != admitted.size()) continue;
      const KnobValues& values = admitted[index];
      Trace trace{sketch.Name(), {}};
      std::string text;
      for (size_t knob = 0; knob < knobs.size(); ++knob) {
        trace.decisions.push_back({knobs[knob].name, values[knob]});
        text += std::to_string(values[knob]) + " ";
      }
      SCOPED_TRACE(w.Description() + " knobs " + text);
      absl::StatusOr<ir::LoweredFunc> func = loop_sketch.Lower(w, values, "kernel");
      ASSERT_TRUE(func.ok()) << func.status();
      absl::StatusOr<std::string> llvm_ir = codegen::EmitLlvmIr(*func);
      ASSERT_TRUE(llvm_ir.ok()) << llvm_ir.status();
      absl::StatusOr<codegen::KernelEntry> entry = jit_->Compile(*llvm_ir, "kernel");
      ASSERT_TRUE(entry.ok()) << entry.status();
      std::vector<std::vector<float>> values_of;
      for (const ir::TypedBuffer& buffer : inputs) values_of.push_back(buffer.ToFloats());
      const absl::Status packed = PackInputsForTrace(w, trace, &values_of);
      ASSERT_TRUE(packed.ok()) << packed;
      std::vector<ir::TypedBuffer> buffers = inputs;
      buffers[1] = ir::TypedBuffer::FromValues(w.inputs[1].dtype, values_of[1]);
      ir::TypedBuffer output(w.output.dtype, w.output.NumElements());
      for (int64_t idx = 0; idx < output.size(); ++idx) output.Set(idx, NAN);
      std::vector<void*> args;
      for (ir::TypedBuffer& buffer : buffers) args.push_back(buffer.data());
      args.push_back(output.data());
      (*entry)(args.data());
      const absl::Status match = ir::CompareTypedOutputs(expected, output, rtol, atol);
      EXPECT_TRUE(match.ok()) << match;
      ++checked;
    }
    EXPECT_GT(checked, 0);
    ASSERT_TRUE(jit_->Reset().ok());
  }

  static codegen::CpuJit* jit_;
  static target::HardwareInfo* hw_;
};

codegen::CpuJit* ConvAmxJitTest::jit_ = nullptr;
target::HardwareInfo* ConvAmxJitTest::hw_ = nullptr;

TEST_F(ConvAmxJitTest, KernelsMatchTheReference) {
  if (!HostRunsAmx()) GTEST_SKIP() << "host lacks AMX (amx_tile, amx_bf16): " << hw_->Summary();
  // A 3x3 with ResNet's padding on a plane whose grid ends mid-block; a 1x1; asymmetric pads
  // and two images; an epilogue (bias, residual, ReLU) on a 7 x 7 plane (63-pixel grid); stride
  // 2 (ResNet's downsampling 3x3s) on odd and even sizes, a strided 1x1, stride 3 with
  // asymmetric pads.
  CheckAllKernels(PairsConv(1, 64, 9, 11, 32, 3, 1, 1, 1, 1), 1);
  CheckAllKernels(PairsConv(1, 96, 10, 10, 48, 1, 0, 0, 0, 0), 2);
  CheckAllKernels(PairsConv(2, 32, 5, 6, 16, 3, 0, 2, 1, 0), 3);
  CheckAllKernels(
      testing::WithResidualRelu(testing::WithBias(PairsConv(1, 64, 7, 7, 64, 3, 1, 1, 1, 1))), 4);
  CheckAllKernels(PairsConv(1, 64, 14, 14, 32, 3, 1, 1, 1, 1, /*stride=*/2), 5);
  CheckAllKernels(testing::WithBias(PairsConv(2, 32, 9, 11, 16, 3, 1, 1, 1, 1, /*stride=*/2)), 6);
  CheckAllKernels(PairsConv(1, 32, 9, 8, 32, 1, 0, 0, 0, 0, /*stride=*/2), 7);
  CheckAllKernels(PairsConv(1, 32, 10, 11, 16, 3, 0, 2, 1, 0, /*stride=*/3), 8);
}

// The AVX-512 BF16 conv (vdpbf16ps) against the reference where the host has avx512_bf16.
TEST_F(ConvAmxJitTest, TheAvx512Bf16KernelsMatchTheReference) {
  if (jit_ == nullptr) GTEST_SKIP() << "no JIT on this host";
  if (const std::string missing = MissingCpuFeatures(*hw_, {"avx512f", "avx512_bf16"});
      !missing.empty()) {
    GTEST_SKIP() << "the AVX-512 BF16 conv " << missing << ": " << hw_->Summary();
  }
  const schedule::Sketch& sketch = ConvAvx512Bf16Sketch();
  // As the AMX cases, and channel counts no tile takes: K of 24 and 40 (mr 8, 6, 4, 2, 1), C of
  // 6; a 5 x 5 kernel (taps in a loop); a grid smaller than one vector (nr 1, no clamping).
  CheckAllKernels(PairsConv(1, 64, 9, 11, 32, 3, 1, 1, 1, 1), 1, sketch, 5);
  CheckAllKernels(PairsConv(1, 96, 10, 10, 48, 1, 0, 0, 0, 0), 2, sketch, 5);
  CheckAllKernels(PairsConv(2, 32, 5, 6, 24, 3, 0, 2, 1, 0), 3, sketch, 3);
  CheckAllKernels(
      testing::WithResidualRelu(testing::WithBias(PairsConv(1, 64, 7, 7, 64, 3, 1, 1, 1, 1))), 4,
      sketch, 5);
  CheckAllKernels(PairsConv(1, 64, 14, 14, 40, 3, 1, 1, 1, 1, /*stride=*/2), 5, sketch, 5);
  CheckAllKernels(testing::WithBias(PairsConv(2, 6, 9, 11, 16, 3, 1, 1, 1, 1, /*stride=*/2)), 6,
                  sketch, 3);
  CheckAllKernels(PairsConv(1, 32, 9, 8, 32, 1, 0, 0, 0, 0, /*stride=*/2), 7, sketch, 5);
  CheckAllKernels(PairsConv(1, 16, 12, 13, 16, 5, 2, 2, 2, 2), 8, sketch, 7);
  CheckAllKernels(PairsConv(1, 8, 3, 3, 8, 1, 0, 0, 0, 0), 9, sketch);
}

// The channels-in-lanes AVX-512 BF16 conv: only the output pixels computed, blocks of mp pixels
// (the last clamped) by nk vectors of 16 channels.
TEST_F(ConvAmxJitTest, TheChannelsBf16KernelsMatchTheReference) {
  if (jit_ == nullptr) GTEST_SKIP() << "no JIT on this host";
  if (const std::string missing = MissingCpuFeatures(*hw_, {"avx512f", "avx512_bf16"});
      !missing.empty()) {
    GTEST_SKIP() << "the AVX-512 BF16 conv " << missing << ": " << hw_->Summary();
  }
  const schedule::Sketch& sketch = ConvAvx512Bf16ChannelsSketch();
  // A 3x3 on a plane whose pixels end mid-block; a 1x1 of K = 48 (nk 3 and 1); asymmetric pads
  // and two images; bias, residual and ReLU on a 7 x 7 plane; stride 2 (odd and even sizes), a
  // strided 1x1, a 5 x 5 kernel (taps in a loop), a plane of fewer pixels than a block (2 x 2).
  CheckAllKernels(PairsConv(1, 64, 9, 11, 32, 3, 1, 1, 1, 1), 1, sketch, 5);
  CheckAllKernels(PairsConv(1, 96, 10, 10, 48, 1, 0, 0, 0, 0), 2, sketch, 5);
  CheckAllKernels(PairsConv(2, 32, 5, 6, 16, 3, 0, 2, 1, 0), 3, sketch, 3);
  CheckAllKernels(
      testing::WithResidualRelu(testing::WithBias(PairsConv(1, 64, 7, 7, 64, 3, 1, 1, 1, 1))), 4,
      sketch, 5);
  CheckAllKernels(PairsConv(1, 64, 14, 14, 32, 3, 1, 1, 1, 1, /*stride=*/2), 5, sketch, 5);
  CheckAllKernels(testing::WithBias(PairsConv(2, 6, 9, 11, 16, 3, 1, 1, 1, 1, /*stride=*/2)), 6,
                  sketch, 3);
  CheckAllKernels(PairsConv(1, 32, 9, 8, 32, 1, 0, 0, 0, 0, /*stride=*/2), 7, sketch, 5);
  CheckAllKernels(PairsConv(1, 16, 12, 13, 16, 5, 2, 2, 2, 2), 8, sketch, 7);
  CheckAllKernels(PairsConv(1, 8, 2, 2, 16, 1, 0, 0, 0, 0), 9, sketch);
}

TEST(ConvPairsTest, TheChannelsBf16WeightsArePackedInTheBlocksOrder) {
  const ir::Workload w = PairsConv(1, 4, 6, 7, 64, 3, 1, 1, 1, 1);
  const Trace trace{internal::kBf16ChannelsConvSketchName,
                    {{"mp", 4}, {"nk", 2}, {"order", 0}, {"tasks", 1}, {"pack_b", 2}}};
  std::vector<float> weights(64 * 4 * 9);
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<float>(i);
  absl::StatusOr<std::optional<PrepackedOperand>> packed = PrepackConstantB(w, trace, weights);
  ASSERT_TRUE(packed.ok()) << packed.status();
  ASSERT_TRUE(packed->has_value());
  EXPECT_EQ((*packed)->shape, (std::vector<int64_t>{64, 4 * 9}));
  // Block 1 (channels 32..63), pair 1 (channels 2, 3), tap 4, channel 45 (the block's 13th): the
  // word ((1 * 2 + 1) * 9 + 4) * 32 + 13, its values channels 2 and 3.
  const int64_t word = ((1 * 2 + 1) * 9 + 4) * 32 + 13;
  EXPECT_EQ((*packed)->data[2 * word], weights[(45 * 4 + 2) * 9 + 4]);
  EXPECT_EQ((*packed)->data[2 * word + 1], weights[(45 * 4 + 3) * 9 + 4]);
  // An nk whose 16 * nk channels do not divide K is refused; pack_b 1 does not lower; nor do
  // more pixels per block than the plane has, nor a K that is not a multiple of 16.
  Trace bad = trace;
  bad.decisions[1].second = 3;
  EXPECT_FALSE(PrepackConstantB(w, bad, weights).ok());
  Trace unpacked = trace;
  unpacked.decisions.back().second = 1;
  EXPECT_FALSE(LowerSchedule(w, unpacked, "kernel").ok());
  Trace too_many = trace;
  too_many.decisions[0].second = 8;
  EXPECT_FALSE(LowerSchedule(PairsConv(1, 4, 2, 2, 64, 1, 0, 0, 0, 0), too_many, "kernel").ok());
  EXPECT_NE(internal::Bf16ChannelsConvMismatch(PairsConv(1, 4, 6, 7, 24, 3, 1, 1, 1, 1))
                .find("not a multiple of 16"),
            std::string::npos);
  absl::StatusOr<ir::LoweredFunc> func = LowerSchedule(w, trace, "kernel");
  ASSERT_TRUE(func.ok()) << func.status();
  absl::StatusOr<std::string> llvm_ir = codegen::EmitLlvmIr(*func);
  ASSERT_TRUE(llvm_ir.ok()) << llvm_ir.status();
  EXPECT_NE(llvm_ir->find("@llvm.x86.avx512bf16.dpbf16ps.512"), std::string::npos);
}

TEST(ConvPairsTest, TheAvx512Bf16WeightsArePackedInTheBlocksOrder) {
  const ir::Workload w = PairsConv(1, 4, 6, 7, 6, 3, 1, 1, 1, 1);
  const Trace trace{internal::kBf16ConvSketchName,
                    {{"mr", 3}, {"nr", 1}, {"order", 0}, {"tasks", 1}, {"pack_b", 2}}};
  std::vector<float> weights(6 * 4 * 9);
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<float>(i);
  absl::StatusOr<std::optional<PrepackedOperand>> packed = PrepackConstantB(w, trace, weights);
  ASSERT_TRUE(packed.ok()) << packed.status();
  ASSERT_TRUE(packed->has_value());
  EXPECT_EQ((*packed)->shape, (std::vector<int64_t>{6, 4 * 9}));
  // Block 1 (channels 3..5), pair 1 (channels 2, 3), tap 4, channel 4 of the block (k = 4): the
  // word (((1 * 2 + 1) * 9 + 4) * 3 + 1), its values channels 2 and 3.
  const int64_t word = ((1 * 2 + 1) * 9 + 4) * 3 + 1;
  EXPECT_EQ((*packed)->data[2 * word], weights[(4 * 4 + 2) * 9 + 4]);
  EXPECT_EQ((*packed)->data[2 * word + 1], weights[(4 * 4 + 3) * 9 + 4]);
  // An mr that does not divide K is refused; pack_b 1 does not lower.
  Trace bad = trace;
  bad.decisions[0].second = 4;
  EXPECT_FALSE(PrepackConstantB(w, bad, weights).ok());
  Trace unpacked = trace;
  unpacked.decisions.back().second = 1;
  EXPECT_FALSE(LowerSchedule(w, unpacked, "kernel").ok());
  absl::StatusOr<ir::LoweredFunc> func = LowerSchedule(w, trace, "kernel");
  ASSERT_TRUE(func.ok()) << func.status();
  absl::StatusOr<std::string> llvm_ir = codegen::EmitLlvmIr(*func);
  ASSERT_TRUE(llvm_ir.ok()) << llvm_ir.status();
}

}  // namespace
}  // namespace gtco::kernels
