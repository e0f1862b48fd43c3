// End-to-end tests of the sketches: random traces of every workload class are lowered, compiled
// by the LLVM JIT and run on random inputs; the outputs must match the reference evaluator.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <set>

#include "absl/strings/match.h"
#include "common/codegen/llvm/jit.h"
#include "common/codegen/llvm/llvm_codegen.h"
#include "common/ir/attention.h"
#include "common/ir/conv.h"
#include "common/ir/pool.h"
#include "common/ir/reference.h"
#include "common/kernels/family.h"
#include "common/kernels/prepack.h"
#include "common/kernels/registry.h"
#include "common/schedule/space.h"
#include "tests/unit/schedule/test_workloads.h"

namespace gtco::kernels {
namespace {

using schedule::testing::Elementwise;
using schedule::testing::MatMul;
using schedule::testing::MatMulBiasGelu;
using schedule::testing::RowWorkload;

class ScheduleJitTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<codegen::CpuJit>> jit = codegen::CpuJit::Create();
    if (jit.ok()) {
      jit_ = jit->release();
    } else {
      jit_error_ = new std::string(jit.status().ToString());
    }
  }
  static void TearDownTestSuite() {
    delete jit_;
    jit_ = nullptr;
    delete jit_error_;
    jit_error_ = nullptr;
  }
  // Every x86-64 host GTCO runs on has an LLVM JIT: failing to create one is a bug, not a skip.
  void SetUp() override { ASSERT_NE(jit_, nullptr) << "no LLVM JIT: " << *jit_error_; }

  /// Lowers, compiles and runs (w, trace) on `inputs`; returns the output. Inputs are in w's
  /// layout and packed here for a trace reading pre-packed weights, unless `already_packed`.
  static absl::StatusOr<std::vector<float>> Run(const ir::Workload& w, const Trace& trace,
                                                std::vector<std::vector<float>>& inputs,
                                                bool already_packed = false) {
    absl::StatusOr<ir::LoweredFunc> func = LowerSchedule(w, trace, "kernel");
    if (!func.ok()) return func.status();
    absl::StatusOr<std::string> llvm_ir = codegen::EmitLlvmIr(*func);
    if (!llvm_ir.ok()) return llvm_ir.status();
    absl::StatusOr<codegen::KernelEntry> entry = jit_->Compile(*llvm_ir, "kernel");
    if (!entry.ok()) return entry.status();
    std::vector<float> output(w.output.NumElements(), NAN);
    // A trace reading its weights pre-packed gets them packed, as the worker and export do.
    std::vector<std::vector<float>> packed;
    if (!already_packed && ReadsPrepackedInput(trace)) {
      packed = inputs;
      absl::Status status = PackInputsForTrace(w, trace, &packed);
      if (!status.ok()) return status;
    }
    std::vector<void*> args;
    for (auto& input : packed.empty() ? inputs : packed) args.push_back(input.data());
    args.push_back(output.data());
    (*entry)(args.data());
    return output;
  }

  /// Checks `samples` random traces (plus the default trace) of `w` against the reference.
  static void CheckRandomTraces(const ir::Workload& w, int samples, uint64_t seed) {
    absl::StatusOr<SearchSpace> space = kernels::CreateSpace(w, target::DetectHostCpu());
    ASSERT_TRUE(space.ok()) << space.status();
    CheckSpace(*space, w, samples, seed);
  }

  /// Checks `samples` random traces (plus the default trace) of `space` against the reference.
  static void CheckSpace(const SearchSpace& space, const ir::Workload& w, int samples,
                         uint64_t seed) {
    const SearchSpace* const space_ptr = &space;
    std::vector<std::vector<float>> inputs = ir::RandomInputs(w, seed);
    const std::vector<float> expected = ir::ComputeReference(w, inputs);
    double rtol, atol;
    ir::DefaultTolerance(w, &rtol, &atol);
    std::mt19937_64 rng(seed);
    for (int sample = 0; sample <= samples; ++sample) {
      const Trace trace = sample == 0 ? space_ptr->DefaultTrace() : space_ptr->Sample(rng);
      absl::StatusOr<std::vector<float>> output = Run(w, trace, inputs);
      ASSERT_TRUE(output.ok()) << trace.ToString() << ": " << output.status();
      absl::Status match = ir::CompareOutputs(expected, *output, rtol, atol);
      EXPECT_TRUE(match.ok()) << trace.ToString() << ": " << match;
    }
    ASSERT_TRUE(jit_->Reset().ok());
  }

  static codegen::CpuJit* jit_;
  static std::string* jit_error_;  ///< why Create() failed, when it did
};

codegen::CpuJit* ScheduleJitTest::jit_ = nullptr;
std::string* ScheduleJitTest::jit_error_ = nullptr;

TEST_F(ScheduleJitTest, MatMulTinyAndOddShapes) {
  CheckRandomTraces(MatMul(1, 1, 1, 1), 10, 1);
  CheckRandomTraces(MatMul(1, 3, 5, 7), 20, 2);
  CheckRandomTraces(MatMul(1, 77, 197, 64), 20, 3);
}

TEST_F(ScheduleJitTest, MatMulBatchedHeadsWithBiasGelu) {
  CheckRandomTraces(MatMulBiasGelu(2, 197, 64, 197), 20, 4);
}

TEST_F(ScheduleJitTest, MatMulTransposedOperands) {
  CheckRandomTraces(MatMulBiasGelu(2, 197, 197, 64, /*trans_b=*/true), 12, 5);
  CheckRandomTraces(MatMul(1, 33, 40, 19, /*trans_a=*/true, /*trans_b=*/false), 12, 6);
  // One shared (unbatched) B across 3 batches of A.
  CheckRandomTraces(MatMul(3, 9, 35, 70, false, false, true, /*b_batched=*/false), 12, 7);
}

// pack_b = 2: the exporter stores a constant B in the panels the kernel streams
// (PrepackConstantB); every blocked schedule sampled, switched to read B that way, computes
// what it computes on the plain B (tails in M, N and K included).
TEST_F(ScheduleJitTest, MatMulReadsAPrepackedConstantB) {
  int prepacked = 0;
  for (const ir::Workload& w :
       {MatMul(1, 37, 100, 70), MatMul(1, 128, 768, 96), MatMulBiasGelu(1, 19, 45, 300),
        MatMul(3, 9, 35, 70, false, false, true, /*b_batched=*/false)}) {
    SCOPED_TRACE(w.Description());
    absl::StatusOr<SearchSpace> space = kernels::CreateSpace(w, target::DetectHostCpu());
    ASSERT_TRUE(space.ok()) << space.status();
    std::vector<std::vector<float>> inputs = ir::RandomInputs(w, 11);
    const std::vector<float> expected = ir::ComputeReference(w, inputs);
    double rtol, atol;
    ir::DefaultTolerance(w, &rtol, &atol);
    std::mt19937_64 rng(17);
    for (int sample = 0; sample < 24; ++sample) {
      const Trace trace = space->Sample(rng);
      absl::StatusOr<std::optional<kernels::PrepackedOperand>> packed =
          kernels::PrepackConstantB(w, trace, inputs[1]);
      ASSERT_TRUE(packed.ok()) << trace.ToString() << ": " << packed.status();
      if (!packed->has_value()) continue;  // not a blocked schedule: B is read as it is
      ++prepacked;
      EXPECT_EQ((*packed)->trace.Get("pack_b"), 2);
      EXPECT_EQ(static_cast<int64_t>((*packed)->data.size()),
                (*packed)->shape[0] * (*packed)->shape[1]);
      std::vector<std::vector<float>> with_packed = inputs;
      with_packed[1] = (*packed)->data;
      absl::StatusOr<std::vector<float>> output =
          Run(w, (*packed)->trace, with_packed, /*already_packed=*/true);
      ASSERT_TRUE(output.ok()) << (*packed)->trace.ToString() << ": " << output.status();
      absl::Status match = ir::CompareOutputs(expected, *output, rtol, atol);
      EXPECT_TRUE(match.ok()) << (*packed)->trace.ToString() << ": " << match;
    }
    ASSERT_TRUE(jit_->Reset().ok());
  }
  EXPECT_GT(prepacked, 10);
  // A transposed B is read as it is.
  const ir::Workload transposed = MatMulBiasGelu(2, 19, 19, 64, /*trans_b=*/true);
  absl::StatusOr<SearchSpace> space = kernels::CreateSpace(transposed, target::DetectHostCpu());
  ASSERT_TRUE(space.ok());
  absl::StatusOr<std::optional<kernels::PrepackedOperand>> none = kernels::PrepackConstantB(
      transposed, space->DefaultTrace(), ir::RandomInputs(transposed, 1)[1]);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_value());
}

TEST_F(ScheduleJitTest, MatMulResidualAndRowBroadcastEpilogue) {
  ir::Workload w = MatMul(2, 19, 45, 300);
  w.inputs.push_back(schedule::testing::Tensor({2, 19, 45}));  // residual, full shape
  w.inputs.push_back(schedule::testing::Tensor({19, 1}));      // per-row scale
  w.epilogue = {{ir::EwOp::kAdd, {schedule::testing::Acc(), schedule::testing::In(2)}},
                {ir::EwOp::kMul, {schedule::testing::Val(0), schedule::testing::In(3)}},
                {ir::EwOp::kTanh, {schedule::testing::Val(1)}}};
  CheckRandomTraces(w, 16, 8);
}

// GELU's tanh form (GPT-2, GPT-Neo): a cube by a constant exponent (lowered as multiplications),
// and constant exponents that stay pow calls.
TEST_F(ScheduleJitTest, MatMulEpilogueWithConstantPowers) {
  for (float exponent : {3.0f, 2.0f, 4.0f, 1.0f, 2.5f}) {
    ir::Workload w = MatMul(1, 19, 45, 30);
    w.inputs.push_back(schedule::testing::Tensor({45}));  // bias
    w.epilogue = {{ir::EwOp::kAdd, {schedule::testing::Acc(), schedule::testing::In(2)}},
                  {ir::EwOp::kSigmoid, {schedule::testing::Val(0)}},  // a positive base
                  {ir::EwOp::kPow, {schedule::testing::Val(1), schedule::testing::Const(exponent)}},
                  {ir::EwOp::kTanh, {schedule::testing::Val(2)}}};
    SCOPED_TRACE(exponent);
    CheckRandomTraces(w, 4, 8);
  }
}

/// The host, and on an AVX-512 host also the host without AVX-512 (so the avx2_fma mapping's
/// code runs here too).
std::vector<target::HardwareInfo> HostsToCheck() {
  std::vector<target::HardwareInfo> hosts = {target::DetectHostCpu()};
  if (hosts[0].HasFeature("avx512f")) {
    target::HardwareInfo avx2 = hosts[0];
    avx2.cpu_features.clear();
    for (const std::string& feature : hosts[0].cpu_features) {
      if (feature.rfind("avx512", 0) != 0) avx2.cpu_features.push_back(feature);
    }
    hosts.push_back(avx2);
  }
  return hosts;
}

TEST_F(ScheduleJitTest, EveryMatMulMappingSpaceMatchesTheReference) {
  ir::Workload residual = MatMul(2, 19, 45, 300);  // K blocked, full-shape epilogue input
  residual.inputs.push_back(schedule::testing::Tensor({2, 19, 45}));
  residual.epilogue = {{ir::EwOp::kAdd, {schedule::testing::Acc(), schedule::testing::In(2)}}};
  const std::vector<ir::Workload> workloads = {
      MatMul(1, 1, 1, 1),
      MatMul(1, 3, 5, 7),
      MatMul(1, 77, 197, 64),
      MatMulBiasGelu(2, 197, 64, 197),
      MatMulBiasGelu(2, 197, 197, 64, /*trans_b=*/true),
      MatMul(1, 33, 40, 19, /*trans_a=*/true, /*trans_b=*/false),
      MatMul(3, 9, 35, 70, false, false, true, /*b_batched=*/false),
      residual};
  uint64_t seed = 100;
  std::set<std::string> mappings_seen;
  for (const target::HardwareInfo& hw : HostsToCheck()) {
    for (const ir::Workload& w : workloads) {
      absl::StatusOr<std::vector<SearchSpace>> spaces = CreateMappingSpaces(w, hw);
      ASSERT_TRUE(spaces.ok()) << spaces.status();
      for (const SearchSpace& space : *spaces) {
        SCOPED_TRACE(space.mapping() + " " + w.Description());
        mappings_seen.insert(space.mapping());
        CheckSpace(space, w, 5, ++seed);
      }
    }
  }
  EXPECT_TRUE(mappings_seen.count("vector"));
  if (target::DetectHostCpu().HasFeature("avx2")) EXPECT_TRUE(mappings_seen.count("avx2_fma"));
}

TEST_F(ScheduleJitTest, FmaTilesWithRowAndColumnTailsMatchTheReference) {
  // Exact row tails (197 = 14 * 14 + 1, 6 * 32 + 5), masked column tails (197 = 3 * 64 + 5),
  // K blocks with partial sums, packed and unpacked A and B, split M and N blocks.
  const ir::Workload w = MatMulBiasGelu(1, 197, 197, 200);
  const bool avx512 = target::DetectHostCpu().HasFeature("avx512f");
  const std::string sketch = avx512 ? "mm_avx512_fma/v1" : "mm_avx2_fma/v1";
  std::vector<std::vector<float>> inputs = ir::RandomInputs(w, 5);
  const std::vector<float> expected = ir::ComputeReference(w, inputs);
  double rtol, atol;
  ir::DefaultTolerance(w, &rtol, &atol);
  for (const char* decisions : {"mr=14;nr=2;kc=64;mc=99;nc=96;par=1;unroll_k=4;pack_a=1;pack_b=1",
                                "mr=6;nr=4;kc=200;mc=197;nc=197;par=0;unroll_k=1;pack_a=0;pack_b=0",
                                "mr=4;nr=3;kc=104;mc=50;nc=128;par=1;unroll_k=4;pack_a=1;pack_b=0",
                                "mr=3;nr=1;kc=8;mc=6;nc=16;par=1;unroll_k=4;pack_a=0;pack_b=1"}) {
    absl::StatusOr<Trace> trace = Trace::Parse(sketch + ";" + decisions);
    ASSERT_TRUE(trace.ok());
    absl::StatusOr<std::vector<float>> output = Run(w, *trace, inputs);
    ASSERT_TRUE(output.ok()) << trace->ToString() << ": " << output.status();
    EXPECT_TRUE(ir::CompareOutputs(expected, *output, rtol, atol).ok()) << trace->ToString();
  }
}

TEST_F(ScheduleJitTest, Softmax) {
  CheckRandomTraces(RowWorkload(ir::AnchorKind::kSoftmax, 3, 77), 20, 9);
  CheckRandomTraces(RowWorkload(ir::AnchorKind::kSoftmax, 12, 197), 20, 10);
  CheckRandomTraces(RowWorkload(ir::AnchorKind::kSoftmax, 1, 1), 6, 11);
  ir::Workload scaled = RowWorkload(ir::AnchorKind::kSoftmax, 64, 130);
  scaled.epilogue = {{ir::EwOp::kMul, {schedule::testing::Acc(), schedule::testing::Const(3.0f)}}};
  CheckRandomTraces(scaled, 10, 12);
}

TEST_F(ScheduleJitTest, LayerNorm) {
  CheckRandomTraces(RowWorkload(ir::AnchorKind::kLayerNorm, 197, 768), 12, 13);
  CheckRandomTraces(RowWorkload(ir::AnchorKind::kLayerNorm, 5, 3), 12, 14);
  ir::Workload residual = RowWorkload(ir::AnchorKind::kLayerNorm, 10, 37);
  residual.inputs.push_back(schedule::testing::Tensor({10, 37}));
  residual.epilogue = {{ir::EwOp::kAdd, {schedule::testing::Acc(), schedule::testing::In(3)}},
                       {ir::EwOp::kSigmoid, {schedule::testing::Val(0)}}};
  CheckRandomTraces(residual, 10, 15);
}

TEST_F(ScheduleJitTest, ReduceMean) {
  CheckRandomTraces(RowWorkload(ir::AnchorKind::kReduceMean, 7, 197), 12, 16);
  CheckRandomTraces(RowWorkload(ir::AnchorKind::kReduceMean, 1, 1000), 8, 17);
  CheckRandomTraces(RowWorkload(ir::AnchorKind::kReduceMean, 300, 3), 8, 18);
}

TEST_F(ScheduleJitTest, ElementwiseBroadcasting) {
  CheckRandomTraces(Elementwise({2, 3, 77}), 16, 19);
  CheckRandomTraces(Elementwise({5}), 8, 20);
  CheckRandomTraces(Elementwise({64, 1000}), 12, 21);
  // Full-shape inputs collapse to one flat dimension; [2,1,77] needs general index math.
  ir::Workload w;
  w.anchor = ir::AnchorKind::kNone;
  w.inputs = {schedule::testing::Tensor({2, 3, 7000}), schedule::testing::Tensor({2, 1, 7000}),
              schedule::testing::Tensor({1, 3, 1})};
  w.output = schedule::testing::Tensor({2, 3, 7000});
  w.epilogue = {{ir::EwOp::kMul, {schedule::testing::In(0), schedule::testing::In(1)}},
                {ir::EwOp::kMax, {schedule::testing::Val(0), schedule::testing::In(2)}},
                {ir::EwOp::kExp, {schedule::testing::Val(1)}}};
  CheckRandomTraces(w, 12, 22);
}

/// Checks a hand-picked trace of `w` and prints its best-of-10 GFLOP/s (informative only).
void CheckAndTime(codegen::CpuJit* jit, const ir::Workload& w, const std::string& text) {
  absl::StatusOr<Trace> trace = Trace::Parse(text);
  ASSERT_TRUE(trace.ok());
  std::vector<std::vector<float>> inputs = ir::RandomInputs(w, 99);
  absl::StatusOr<ir::LoweredFunc> func = LowerSchedule(w, *trace, "mm");
  ASSERT_TRUE(func.ok()) << func.status();
  absl::StatusOr<std::string> llvm_ir = codegen::EmitLlvmIr(*func);
  ASSERT_TRUE(llvm_ir.ok()) << llvm_ir.status();
  absl::StatusOr<codegen::KernelEntry> entry = jit->Compile(*llvm_ir, "mm");
  ASSERT_TRUE(entry.ok()) << entry.status();
  std::vector<float> output(w.output.NumElements());
  std::vector<void*> args = {inputs[0].data(), inputs[1].data(), output.data()};
  (*entry)(args.data());
  double rtol, atol;
  ir::DefaultTolerance(w, &rtol, &atol);
  EXPECT_TRUE(ir::CompareOutputs(ir::ComputeReference(w, inputs), output, rtol, atol).ok());
  double best_seconds = 1e9;
  for (int run = 0; run < 10; ++run) {
    const auto start = std::chrono::steady_clock::now();
    (*entry)(args.data());
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    best_seconds = std::min(best_seconds, elapsed.count());
  }
  std::printf("%s %s: %.1f GFLOP/s\n", w.matmul.trans_b ? "matmul^T" : "matmul", text.c_str(),
              2.0 * w.matmul.m * w.matmul.n * w.matmul.k / best_seconds * 1e-9);
}

TEST_F(ScheduleJitTest, MatMul512HandPickedTraces) {
  const bool avx512 = target::DetectHostCpu().MaxFloatLanes() >= 16;
  const std::string tile = avx512 ? "mr=6;nr=4;vw=16" : "mr=6;nr=2;vw=8";
  for (bool trans_b : {false, true}) {
    const ir::Workload w = MatMul(1, 512, 512, 512, false, trans_b);
    for (const char* pack : {"0", "1"}) {
      CheckAndTime(
          jit_, w,
          "mm_tiled/v1;mc=64;nc=512;kc=256;" + tile + ";par=2;order=0;unroll_k=4;pack_b=" + pack);
    }
    // The FMA mapping's sketch: two N blocks, one per core.
    const std::string fma = avx512 ? "mm_avx512_fma/v1;mr=6;nr=4" : "mm_avx2_fma/v1;mr=6;nr=2";
    CheckAndTime(jit_, w, fma + ";kc=256;mc=512;nc=256;par=1;unroll_k=4;pack_a=0;pack_b=1");
  }
}

/// A conv workload: X [n, c, h, w], W [k, c/groups, r, s]; pads top, left, bottom, right.
ir::Workload Conv(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r, int64_t s,
                  int64_t stride, std::vector<int64_t> pads, int64_t groups = 1,
                  int64_t dilation_h = 1, int64_t dilation_w = 1) {
  ir::ConvParams p;
  p.batch = n;
  p.in_channels = c;
  p.in_h = h;
  p.in_w = w;
  p.out_channels = k;
  p.kernel_h = r;
  p.kernel_w = s;
  p.stride_h = p.stride_w = stride;
  p.pad_top = pads[0];
  p.pad_left = pads[1];
  p.pad_bottom = pads[2];
  p.pad_right = pads[3];
  p.groups = groups;
  p.dilation_h = dilation_h;
  p.dilation_w = dilation_w;
  return ir::MakeConvWorkload(p);
}

/// Random traces of every conv mapping the host has (avx512_fma, avx2_fma) against the reference.
void CheckEveryConvMapping(
    const ir::Workload& w, int samples, uint64_t seed,
    const std::function<void(const SearchSpace&, const ir::Workload&, int, uint64_t)>& check) {
  ASSERT_TRUE(w.Validate().ok()) << w.Validate();
  absl::StatusOr<std::vector<SearchSpace>> spaces =
      kernels::CreateMappingSpaces(w, target::DetectHostCpu());
  ASSERT_TRUE(spaces.ok()) << spaces.status();
  for (const SearchSpace& space : *spaces) {
    SCOPED_TRACE(space.mapping() + " " + w.Description());
    check(space, w, samples, seed);
  }
}

TEST_F(ScheduleJitTest, ConvImplicitGemmShapesOfRealModels) {
  const auto check = [](const SearchSpace& space, const ir::Workload& w, int samples,
                        uint64_t seed) { CheckSpace(space, w, samples, seed); };
  // ResNet's 3x3 stride-1 pad-1, its 7x7 stride-2 stem (odd image), its 1x1 projections
  // (stride 1 and the stride-2 downsample), MobileNet's depthwise 3x3 stride 2.
  CheckEveryConvMapping(Conv(1, 8, 10, 10, 16, 3, 3, 1, {1, 1, 1, 1}), 8, 11, check);
  CheckEveryConvMapping(Conv(1, 3, 23, 23, 8, 7, 7, 2, {3, 3, 3, 3}), 6, 12, check);
  CheckEveryConvMapping(Conv(2, 16, 7, 7, 24, 1, 1, 1, {0, 0, 0, 0}), 6, 13, check);
  CheckEveryConvMapping(Conv(1, 8, 9, 9, 16, 1, 1, 2, {0, 0, 0, 0}), 6, 14, check);
  CheckEveryConvMapping(Conv(1, 12, 11, 11, 12, 3, 3, 2, {1, 1, 1, 1}, /*groups=*/12), 6, 15,
                        check);
}

TEST_F(ScheduleJitTest, ConvGroupsDilationAsymmetricPadsAndEpilogue) {
  const auto check = [](const SearchSpace& space, const ir::Workload& w, int samples,
                        uint64_t seed) { CheckSpace(space, w, samples, seed); };
  // Grouped (4 groups of 2 -> 3 channels), dilated rows, pads only on some sides, a 3x2 kernel.
  CheckEveryConvMapping(Conv(2, 8, 12, 9, 12, 3, 2, 1, {2, 0, 1, 1}, 4, 2, 1), 8, 21, check);
  // Unpadded stride 2 (no masked reads), then bias + residual + ReLU as ResNet's blocks end.
  CheckEveryConvMapping(Conv(1, 4, 9, 9, 8, 3, 3, 2, {0, 0, 0, 0}), 6, 22, check);
  ir::Workload w = Conv(1, 16, 14, 14, 32, 3, 3, 1, {1, 1, 1, 1});
  w.inputs.push_back(schedule::testing::Tensor({32, 1, 1}));       // bias per channel
  w.inputs.push_back(schedule::testing::Tensor({1, 32, 14, 14}));  // residual
  w.epilogue = {{ir::EwOp::kAdd, {schedule::testing::Acc(), schedule::testing::In(2)}},
                {ir::EwOp::kAdd, {schedule::testing::Val(0), schedule::testing::In(3)}},
                {ir::EwOp::kRelu, {schedule::testing::Val(1)}}};
  CheckEveryConvMapping(w, 8, 23, check);
}

// The channel-vectorized conv's staged image band (pack_a 2): blocks of pixels starting
// anywhere in an output row and spanning several, strides 2 and 3, dilation, pads on some sides
// only (and rows or columns of the band past the image), several images, 1x3 and 5x5 kernels,
// K in several blocks of whole channels (the taps' order within a block matching the packed
// weights, the last block shorter), a band row wider than one vector loop takes (602 columns).
// Staged schedules sampled (and one fixed) are run against the reference.
TEST_F(ScheduleJitTest, ConvStagedImageBandEveryLayout) {
  const target::HardwareInfo hw = target::DetectHostCpu();
  for (const ir::Workload& w :
       {Conv(1, 8, 7, 7, 16, 3, 3, 1, {1, 1, 1, 1}), Conv(1, 20, 30, 30, 24, 3, 3, 1, {1, 1, 1, 1}),
        Conv(2, 6, 15, 13, 40, 3, 3, 2, {1, 0, 1, 2}), Conv(1, 3, 20, 20, 8, 5, 5, 3, {2, 2, 2, 2}),
        Conv(1, 4, 12, 12, 8, 3, 3, 1, {2, 2, 2, 2}, 1, 2, 2),
        Conv(1, 5, 9, 40, 4, 1, 3, 1, {0, 1, 0, 1}), Conv(1, 64, 14, 14, 32, 3, 3, 1, {1, 1, 1, 1}),
        Conv(1, 2, 4, 600, 16, 3, 3, 1, {1, 1, 1, 1})}) {
    ASSERT_TRUE(w.Validate().ok()) << w.Validate();
    std::vector<std::vector<float>> inputs = ir::RandomInputs(w, 7);
    const std::vector<float> expected = ir::ComputeReference(w, inputs);
    double rtol, atol;
    ir::DefaultTolerance(w, &rtol, &atol);
    std::mt19937_64 rng(31);
    for (const char* mapping : {"avx512_fma_channels", "avx2_fma_channels"}) {
      absl::StatusOr<SearchSpace> space = kernels::CreateSpaceForMapping(w, hw, mapping);
      if (!space.ok()) continue;  // the host lacks the mapping's ISA
      SCOPED_TRACE(std::string(mapping) + " " + w.Description());
      std::vector<Trace> staged;
      for (int attempt = 0; attempt < 400 && staged.size() < 6; ++attempt) {
        Trace trace = attempt == 0 ? space->DefaultTrace() : space->Sample(rng);
        if (trace.Get("pack_a") == 2) staged.push_back(trace);
      }
      ASSERT_GE(staged.size(), 3u);
      if (w.conv.in_channels == 64) {
        // Whatever was sampled: blocks of 128 pixels (the second starting mid-row), a
        // candidate value, with K blocks of 16 channels (a candidate: they divide C) and of 13
        // (the last one of 12, shorter: no longer offered, as K blocks divide C now, but a
        // database's records from before still replay it).
        for (int64_t kc : {144, 117}) {
          Trace fixed = staged[0];
          for (auto& [name, value] : fixed.decisions) {
            if (name == "kc") value = kc;
            if (name == "mc") value = 128;
          }
          EXPECT_EQ(space->Contains(fixed), kc == 144) << fixed.ToString();
          staged.push_back(fixed);
        }
      }
      for (const Trace& sampled : staged) {
        // Weights pre-packed in the block's tap-major order, and packed at run time (pack_b 1,
        // as an export runs a weight it cannot pre-pack), reading W in that order.
        for (const Trace& trace : {sampled, kernels::WithPackB(sampled, 1)}) {
          absl::StatusOr<std::vector<float>> output = Run(w, trace, inputs);
          ASSERT_TRUE(output.ok()) << trace.ToString() << ": " << output.status();
          absl::Status match = ir::CompareOutputs(expected, *output, rtol, atol);
          EXPECT_TRUE(match.ok()) << trace.ToString() << ": " << match;
        }
      }
      ASSERT_TRUE(jit_->Reset().ok());
    }
  }
}

// Packed B panels of a conv are gathered one output row at a time (PatchRowPacker): panels wider
// and narrower than an output row, rows split across panels, the zero-padded tail panel, strides
// 2 and 3 (strided runs), dilation, pads on some sides only, several images and groups. Every
// sampled schedule is forced to pack B so that each shape goes through the packer.
TEST_F(ScheduleJitTest, ConvPackedPatchPanelsEveryRowLayout) {
  for (const ir::Workload& w :
       {Conv(1, 8, 7, 7, 16, 3, 3, 1, {1, 1, 1, 1}), Conv(1, 4, 30, 30, 8, 3, 3, 1, {1, 1, 1, 1}),
        Conv(2, 6, 15, 13, 8, 3, 3, 2, {1, 0, 1, 2}, 2),
        Conv(1, 3, 20, 20, 8, 5, 5, 3, {2, 2, 2, 2}),
        Conv(1, 4, 12, 12, 8, 3, 3, 1, {2, 2, 2, 2}, 1, 2, 2),
        Conv(1, 5, 9, 40, 4, 1, 3, 1, {0, 1, 0, 1})}) {
    ASSERT_TRUE(w.Validate().ok()) << w.Validate();
    absl::StatusOr<std::vector<SearchSpace>> spaces =
        kernels::CreateMappingSpaces(w, target::DetectHostCpu());
    ASSERT_TRUE(spaces.ok()) << spaces.status();
    std::vector<std::vector<float>> inputs = ir::RandomInputs(w, 5);
    const std::vector<float> expected = ir::ComputeReference(w, inputs);
    double rtol, atol;
    ir::DefaultTolerance(w, &rtol, &atol);
    std::mt19937_64 rng(29);
    for (const SearchSpace& space : *spaces) {
      if (space.mapping() == "direct") continue;
      SCOPED_TRACE(space.mapping() + " " + w.Description());
      // The channel-vectorized mapping packs the same patch rows as A's columns (pack_a).
      const bool channels = absl::EndsWith(space.mapping(), "_channels");
      const std::string knob = channels ? "pack_a" : "pack_b";
      for (int sample = 0; sample < 10; ++sample) {
        std::string text = space.Sample(rng).ToString();
        for (const char* other : {"=0", "=2"}) {
          const size_t at = text.find(knob + other);
          if (at != std::string::npos) text.replace(at, knob.size() + 2, knob + "=1");
        }
        absl::StatusOr<Trace> trace = Trace::Parse(text);
        ASSERT_TRUE(trace.ok()) << text << ": " << trace.status();
        ASSERT_EQ(trace->Get(knob), 1) << text;
        absl::StatusOr<std::vector<float>> output = Run(w, *trace, inputs);
        ASSERT_TRUE(output.ok()) << text << ": " << output.status();
        absl::Status match = ir::CompareOutputs(expected, *output, rtol, atol);
        EXPECT_TRUE(match.ok()) << text << ": " << match;
      }
      ASSERT_TRUE(jit_->Reset().ok());
    }
  }
}

/// A 3x3 conv of two images, 32 -> 40 channels on 9x9, with a per-channel bias, a residual
/// and a ReLU as ResNet's blocks end.
ir::Workload ResidualConv() {
  ir::Workload residual = Conv(2, 32, 9, 9, 40, 3, 3, 1, {1, 1, 1, 1});
  residual.inputs.push_back(schedule::testing::Tensor({40, 1, 1}));
  residual.inputs.push_back(schedule::testing::Tensor({2, 40, 9, 9}));
  residual.epilogue = {{ir::EwOp::kAdd, {schedule::testing::Acc(), schedule::testing::In(2)}},
                       {ir::EwOp::kAdd, {schedule::testing::Val(0), schedule::testing::In(3)}},
                       {ir::EwOp::kRelu, {schedule::testing::Val(1)}}};
  return residual;
}

/// The host's widest FMA conv mapping with `suffix` ("channels": avx512_fma_channels or
/// avx2_fma_channels).
std::string FmaMapping(const target::HardwareInfo& host, const std::string& suffix) {
  return (host.HasFeature("avx512f") ? "avx512_fma_" : "avx2_fma_") + suffix;
}

// The channel-vectorized conv (output channels in the vector lanes, pixels in the register
// tile's rows, weights pre-packed): channel tails (K not a multiple of the lanes), pixel tails,
// K blocks whose partial sums stay in the task's own buffer (a K of 288 in blocks of 96..144),
// two images, the residual epilogue stored a plane apart per lane. Every sampled schedule also
// runs with pack_b=1, the weights packed at run time (what export falls back to when the
// weights are not a constant), and neither reading the weights in place (pack_b=0) nor a
// grouped conv lowers.
TEST_F(ScheduleJitTest, ConvChannelsVectorizedPrepackedOrPackedAtRunTime) {
  const target::HardwareInfo host = target::DetectHostCpu();
  if (!host.HasFeature("avx2") || !host.HasFeature("fma")) {
    GTEST_SKIP() << "the channel-vectorized conv needs avx2+fma: " << host.Summary();
  }
  const std::string mapping = FmaMapping(host, "channels");
  const ir::Workload residual = ResidualConv();
  std::mt19937_64 rng(41);
  int k_blocked = 0;
  for (const ir::Workload& w : {residual, Conv(1, 24, 7, 7, 16, 1, 1, 1, {0, 0, 0, 0}),
                                Conv(1, 3, 23, 23, 20, 7, 7, 2, {3, 3, 3, 3})}) {
    SCOPED_TRACE(w.Description());
    absl::StatusOr<SearchSpace> space = CreateSpaceForMapping(w, host, mapping);
    ASSERT_TRUE(space.ok()) << space.status();
    std::vector<std::vector<float>> inputs = ir::RandomInputs(w, 43);
    const std::vector<float> expected = ir::ComputeReference(w, inputs);
    double rtol, atol;
    ir::DefaultTolerance(w, &rtol, &atol);
    for (int sample = 0; sample <= 12; ++sample) {
      const Trace searched = sample == 0 ? space->DefaultTrace() : space->Sample(rng);
      ASSERT_EQ(searched.Get("pack_b"), 2) << searched.ToString();
      k_blocked += searched.Get("kc") < 288 && w.conv.in_channels == 32 ? 1 : 0;
      std::string text = searched.ToString();
      text.replace(text.find("pack_b=2"), 8, "pack_b=1");
      for (const std::string& variant : {searched.ToString(), text}) {
        absl::StatusOr<Trace> trace = Trace::Parse(variant);
        ASSERT_TRUE(trace.ok()) << trace.status();
        absl::StatusOr<std::vector<float>> output = Run(w, *trace, inputs);
        ASSERT_TRUE(output.ok()) << variant << ": " << output.status();
        absl::Status match = ir::CompareOutputs(expected, *output, rtol, atol);
        EXPECT_TRUE(match.ok()) << variant << ": " << match;
      }
    }
    std::string in_place = space->DefaultTrace().ToString();
    in_place.replace(in_place.find("pack_b=2"), 8, "pack_b=0");
    absl::StatusOr<Trace> trace = Trace::Parse(in_place);
    ASSERT_TRUE(trace.ok());
    EXPECT_FALSE(LowerSchedule(w, *trace, "conv").ok()) << in_place;
    ASSERT_TRUE(jit_->Reset().ok());
  }
  EXPECT_GT(k_blocked, 0);  // some sampled schedule split K
  const ir::Workload grouped = Conv(1, 8, 9, 9, 8, 3, 3, 1, {1, 1, 1, 1}, /*groups=*/2);
  absl::StatusOr<SearchSpace> refused = CreateSpaceForMapping(grouped, host, mapping);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("groups"), std::string::npos) << refused.status();
}

// Winograd F(2x2, 3x3) (3x3 convs of stride 1): even and odd output sides (tiles cut by the
// edge), pads on some sides only and none, several images (blocks of tiles crossing from one
// image into the next), channel tails (K not a multiple of the lanes), K blocks whose partial
// sums are reloaded from the task's results, a 1x1 output, the bias + residual + ReLU epilogue
// in the output transform. Sampled schedules run with U pre-packed and with pack_b 1 (the
// kernel transforms W itself), against the reference; other convs are refused with the reason.
TEST_F(ScheduleJitTest, ConvWinogradMatchesTheReference) {
  const target::HardwareInfo host = target::DetectHostCpu();
  if (!host.HasFeature("avx2") || !host.HasFeature("fma")) {
    GTEST_SKIP() << "the Winograd conv needs avx2+fma: " << host.Summary();
  }
  const std::string mapping = FmaMapping(host, "winograd");
  const ir::Workload residual = ResidualConv();
  std::mt19937_64 rng(47);
  int k_blocked = 0;
  for (const ir::Workload& w :
       {residual, Conv(1, 8, 10, 10, 16, 3, 3, 1, {1, 1, 1, 1}),
        Conv(3, 6, 9, 7, 20, 3, 3, 1, {1, 0, 1, 2}), Conv(1, 5, 3, 3, 4, 3, 3, 1, {0, 0, 0, 0}),
        Conv(1, 64, 28, 28, 64, 3, 3, 1, {1, 1, 1, 1}),
        Conv(1, 3, 4, 70, 16, 3, 3, 1, {1, 1, 1, 1})}) {
    SCOPED_TRACE(w.Description());
    ASSERT_TRUE(w.Validate().ok()) << w.Validate();
    absl::StatusOr<SearchSpace> space = CreateSpaceForMapping(w, host, mapping);
    ASSERT_TRUE(space.ok()) << space.status();
    std::vector<std::vector<float>> inputs = ir::RandomInputs(w, 43);
    const std::vector<float> expected = ir::ComputeReference(w, inputs);
    double rtol, atol;
    ir::DefaultTolerance(w, &rtol, &atol);
    for (int sample = 0; sample <= 8; ++sample) {
      const Trace searched = sample == 0 ? space->DefaultTrace() : space->Sample(rng);
      ASSERT_EQ(searched.Get("pack_b"), 2) << searched.ToString();
      k_blocked += searched.Get("kc") < w.conv.in_channels ? 1 : 0;
      for (const Trace& trace : {searched, kernels::WithPackB(searched, 1)}) {
        absl::StatusOr<std::vector<float>> output = Run(w, trace, inputs);
        ASSERT_TRUE(output.ok()) << trace.ToString() << ": " << output.status();
        absl::Status match = ir::CompareOutputs(expected, *output, rtol, atol);
        EXPECT_TRUE(match.ok()) << trace.ToString() << ": " << match;
      }
    }
    ASSERT_TRUE(jit_->Reset().ok());
  }
  EXPECT_GT(k_blocked, 0);  // some sampled schedule split K
  for (const ir::Workload& other : {Conv(1, 8, 9, 9, 8, 3, 3, 2, {1, 1, 1, 1}),
                                    Conv(1, 8, 9, 9, 8, 3, 3, 1, {1, 1, 1, 1}, /*groups=*/2),
                                    Conv(1, 8, 9, 9, 8, 5, 5, 1, {2, 2, 2, 2})}) {
    absl::StatusOr<SearchSpace> refused = CreateSpaceForMapping(other, host, mapping);
    ASSERT_FALSE(refused.ok()) << other.Description();
    EXPECT_NE(refused.status().message().find("3x3 kernels of stride 1"), std::string::npos)
        << refused.status();
  }
}

/// The extents of the vectorized loops over `var` in `stmt`.
void VectorExtents(const ir::Stmt& stmt, const std::string& var, std::vector<int64_t>* extents) {
  if (stmt == nullptr) return;
  if (stmt->kind == ir::StmtKind::kFor && stmt->name == var &&
      stmt->for_kind == ir::ForKind::kVectorized) {
    const ir::Expr& extent = stmt->operands[1];
    extents->push_back(extent->kind == ir::ExprKind::kIntImm ? extent->int_value : -1);
  }
  for (const ir::Stmt& child : stmt->body) VectorExtents(child, var, extents);
}

// A packed patch panel narrower than an output row but not a power of two wide (nr = 3: 48
// columns of a 56-wide image) is copied in 64 masked lanes, not 48: the 48-lane masked vectors
// legalized into code that ran the whole conv at a fifth of the speed (78 against 308 GFLOP/s
// on a Zen 5 for ResNet's 64 -> 64 3x3 layer). Every packer vector is a power of two wide, and
// such panels compute the conv (a 6x6 output's 36 columns: the zero-padded tail panel too).
TEST_F(ScheduleJitTest, ConvPatchPanelVectorsArePowersOfTwoWide) {
  const bool avx512 = target::DetectHostCpu().MaxFloatLanes() >= 16;
  const std::string sketch = avx512 ? "conv_avx512_fma/v1" : "conv_avx2_fma/v1";
  for (const ir::Workload& w :
       {Conv(1, 8, 56, 56, 16, 3, 3, 1, {1, 1, 1, 1}), Conv(1, 4, 28, 28, 8, 3, 3, 1, {1, 1, 1, 1}),
        Conv(1, 4, 7, 7, 8, 3, 3, 1, {1, 1, 1, 1}), Conv(1, 4, 6, 6, 8, 3, 3, 1, {1, 1, 1, 1})}) {
    for (const char* nr : {"1", "2", "3"}) {
      const std::string text =
          sketch + ";mr=4;nr=" + nr + ";kc=72;mc=16;nc=4096;par=0;unroll_k=1;pack_a=0;pack_b=1";
      SCOPED_TRACE(w.Description() + " " + text);
      absl::StatusOr<Trace> trace = Trace::Parse(text);
      ASSERT_TRUE(trace.ok()) << trace.status();
      absl::StatusOr<ir::LoweredFunc> func = LowerSchedule(w, *trace, "conv");
      ASSERT_TRUE(func.ok()) << func.status();
      std::vector<int64_t> extents;
      VectorExtents(func->body, "ppc", &extents);
      ASSERT_FALSE(extents.empty());
      for (int64_t extent : extents) {
        EXPECT_GT(extent, 0);
        EXPECT_EQ(extent & (extent - 1), 0) << extent << " lanes";
      }
      std::vector<std::vector<float>> inputs = ir::RandomInputs(w, 61);
      const std::vector<float> expected = ir::ComputeReference(w, inputs);
      double rtol, atol;
      ir::DefaultTolerance(w, &rtol, &atol);
      absl::StatusOr<std::vector<float>> output = Run(w, *trace, inputs);
      ASSERT_TRUE(output.ok()) << output.status();
      EXPECT_TRUE(ir::CompareOutputs(expected, *output, rtol, atol).ok());
    }
  }
}

ir::Workload CpuAttention(int64_t batch, int64_t seq_q, int64_t seq_k, int64_t head_dim,
                          int64_t value_dim, int64_t mask_groups, float scale = 0.125f) {
  ir::AttentionParams p;
  p.batch = batch;
  p.seq_q = seq_q;
  p.seq_k = seq_k;
  p.head_dim = head_dim;
  p.value_dim = value_dim;
  p.scale = scale;
  p.k_transposed = true;
  p.mask_groups = mask_groups;
  return ir::MakeAttentionWorkload(p);
}

// The fused CPU attention (cpu/attention): BERT's masked heads, ViT's 197 tokens (key and
// query tails), odd small shapes, a mask per group of heads, and an epilogue on the output.
TEST_F(ScheduleJitTest, CpuFusedAttentionMatchesTheReference) {
  for (const ir::Workload& w :
       {CpuAttention(2, 128, 128, 64, 64, 1), CpuAttention(2, 197, 197, 64, 64, 0),
        CpuAttention(4, 5, 37, 16, 8, 2, 0.25f), CpuAttention(1, 1, 3, 4, 16, 1, 1.0f)}) {
    SCOPED_TRACE(w.Description());
    ASSERT_TRUE(w.Validate().ok()) << w.Validate();
    absl::StatusOr<std::vector<SearchSpace>> spaces =
        kernels::CreateMappingSpaces(w, target::DetectHostCpu());
    ASSERT_TRUE(spaces.ok()) << spaces.status();
    ASSERT_EQ(spaces->front().mapping(), "rows");
    CheckSpace(spaces->front(), w, 8, 31);
  }
  ir::Workload with_epilogue = CpuAttention(2, 9, 20, 8, 16, 1);
  with_epilogue.inputs.push_back(schedule::testing::Tensor({2, 9, 16}));  // residual
  with_epilogue.epilogue = {{ir::EwOp::kAdd, {schedule::testing::Acc(), schedule::testing::In(4)}}};
  ASSERT_TRUE(with_epilogue.Validate().ok()) << with_epilogue.Validate();
  CheckRandomTraces(with_epilogue, 8, 32);
  // A mask of BERT's kind: -FLT_MAX on padded keys, so those keys get no weight.
  ir::Workload padded = CpuAttention(2, 16, 24, 8, 8, 1);
  std::vector<std::vector<float>> inputs = ir::RandomInputs(padded, 33);
  for (int key = 16; key < 24; ++key) inputs[3][key] = -3.4028234663852886e38f;
  const std::vector<float> expected = ir::ComputeReference(padded, inputs);
  absl::StatusOr<SearchSpace> space = kernels::CreateSpace(padded, target::DetectHostCpu());
  ASSERT_TRUE(space.ok()) << space.status();
  absl::StatusOr<std::vector<float>> output = Run(padded, space->DefaultTrace(), inputs);
  ASSERT_TRUE(output.ok()) << output.status();
  double rtol, atol;
  ir::DefaultTolerance(padded, &rtol, &atol);
  EXPECT_TRUE(ir::CompareOutputs(expected, *output, rtol, atol).ok());
  // K not transposed: no CPU mapping applies (the planner keeps such patterns unfused).
  ir::AttentionParams plain = CpuAttention(1, 4, 4, 8, 8, 0).attention;
  plain.k_transposed = false;
  EXPECT_FALSE(
      kernels::CreateSpace(ir::MakeAttentionWorkload(plain), target::DetectHostCpu()).ok());
}

TEST_F(ScheduleJitTest, DepthwiseConvHasADirectMappingToo) {
  const auto check = [](const SearchSpace& space, const ir::Workload& w, int samples,
                        uint64_t seed) { CheckSpace(space, w, samples, seed); };
  // MobileNetV2's depthwise 3x3 (stride 1 and 2), a channel multiplier of 2, an unpadded
  // dilated one, EfficientNet's 5x5 stride 2, and images so narrow that no output column has
  // every tap inside (the direct sketch's border columns only); each on the direct mapping and
  // the implicit-GEMM ones.
  for (const ir::Workload& w : {Conv(1, 16, 14, 14, 16, 3, 3, 1, {1, 1, 1, 1}, 16),
                                Conv(2, 8, 15, 15, 8, 3, 3, 2, {1, 1, 1, 1}, 8),
                                Conv(1, 4, 9, 10, 8, 3, 3, 1, {1, 0, 2, 1}, 4),
                                Conv(1, 4, 13, 13, 4, 3, 3, 1, {0, 0, 0, 0}, 4, 2, 2),
                                Conv(1, 6, 11, 11, 6, 5, 5, 2, {2, 2, 2, 2}, 6),
                                Conv(1, 4, 3, 2, 4, 3, 3, 1, {1, 1, 1, 1}, 4),
                                Conv(1, 3, 5, 3, 3, 5, 5, 1, {2, 2, 2, 2}, 3)}) {
    absl::StatusOr<std::vector<SearchSpace>> spaces =
        kernels::CreateMappingSpaces(w, target::DetectHostCpu());
    ASSERT_TRUE(spaces.ok()) << spaces.status();
    EXPECT_EQ(spaces->front().mapping(), "direct");
    CheckEveryConvMapping(w, 6, 51, check);
  }
  // Both forms of the direct kernel by name (in place with scalar border columns, or from a
  // zero-padded copy of each plane), and a schedule stored before the stage knob ("/v1").
  const ir::Workload dw = Conv(2, 6, 9, 11, 6, 5, 5, 1, {2, 3, 2, 1}, 6);
  std::vector<std::vector<float>> inputs = ir::RandomInputs(dw, 17);
  const std::vector<float> expected = ir::ComputeReference(dw, inputs);
  double rtol, atol;
  ir::DefaultTolerance(dw, &rtol, &atol);
  for (const char* text :
       {"conv_dw_direct/v2;vw=8;unroll=1;par=1;stage=0",
        "conv_dw_direct/v2;vw=16;unroll=1;par=0;stage=1",
        "conv_dw_direct/v2;vw=4;unroll=2;par=1;stage=1", "conv_dw_direct/v1;vw=4;unroll=1;par=1"}) {
    absl::StatusOr<schedule::Trace> trace = schedule::Trace::Parse(text);
    ASSERT_TRUE(trace.ok()) << trace.status();
    absl::StatusOr<std::vector<float>> output = Run(dw, *trace, inputs);
    ASSERT_TRUE(output.ok()) << text << ": " << output.status();
    EXPECT_TRUE(ir::CompareOutputs(expected, *output, rtol, atol).ok()) << text;
  }
  // Not depthwise: no direct mapping.
  absl::StatusOr<std::vector<SearchSpace>> dense = kernels::CreateMappingSpaces(
      Conv(1, 8, 10, 10, 16, 3, 3, 1, {1, 1, 1, 1}), target::DetectHostCpu());
  ASSERT_TRUE(dense.ok()) << dense.status();
  for (const SearchSpace& space : *dense) EXPECT_NE(space.mapping(), "direct");
}

TEST_F(ScheduleJitTest, ConvEpilogueBroadcastingOverOneSpatialDimIsRefused) {
  ir::Workload w = Conv(1, 4, 6, 6, 8, 3, 3, 1, {1, 1, 1, 1});
  w.inputs.push_back(schedule::testing::Tensor({6}));  // broadcasts over rows only
  w.epilogue = {{ir::EwOp::kAdd, {schedule::testing::Acc(), schedule::testing::In(2)}}};
  ASSERT_TRUE(w.Validate().ok());
  absl::StatusOr<SearchSpace> space = kernels::CreateSpace(w, target::DetectHostCpu());
  ASSERT_FALSE(space.ok());
  EXPECT_EQ(space.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(space.status().message().find("one spatial dim"), std::string::npos) << space.status();
}

TEST_F(ScheduleJitTest, ConvResNetStageDefaultTrace) {
  // One of ResNet-50's 3x3 convs at batch 1 (56x56, 64 -> 64) by its default trace.
  const ir::Workload w = Conv(1, 64, 56, 56, 64, 3, 3, 1, {1, 1, 1, 1});
  absl::StatusOr<SearchSpace> space = kernels::CreateSpace(w, target::DetectHostCpu());
  ASSERT_TRUE(space.ok()) << space.status();
  std::vector<std::vector<float>> inputs = ir::RandomInputs(w, 31);
  const std::vector<float> expected = ir::ComputeReference(w, inputs);
  double rtol, atol;
  ir::DefaultTolerance(w, &rtol, &atol);
  absl::StatusOr<std::vector<float>> output = Run(w, space->DefaultTrace(), inputs);
  ASSERT_TRUE(output.ok()) << output.status();
  EXPECT_TRUE(ir::CompareOutputs(expected, *output, rtol, atol).ok());
}

ir::Workload Pool(bool max, int64_t c, int64_t h, int64_t w, int64_t kernel, int64_t stride,
                  std::vector<int64_t> pads, bool ceil_mode = false, bool include_pad = false,
                  int64_t dilation = 1) {
  ir::PoolParams p;
  p.max = max;
  p.batch = 2;
  p.channels = c;
  p.in_h = h;
  p.in_w = w;
  p.kernel_h = p.kernel_w = kernel;
  p.stride_h = p.stride_w = stride;
  p.pad_top = pads[0];
  p.pad_left = pads[1];
  p.pad_bottom = pads[2];
  p.pad_right = pads[3];
  p.ceil_mode = ceil_mode;
  p.count_include_pad = include_pad;
  p.dilation_h = p.dilation_w = dilation;
  return ir::MakePoolWorkload(p);
}

TEST_F(ScheduleJitTest, PoolMaxAndAverageWithPadsCeilModeAndEpilogue) {
  // ResNet's stem max pool (3x3 s2 p1), average pools with and without counting the padding,
  // ceil_mode windows that hang over the end, a dilated window, an unpadded 2x2 one.
  CheckRandomTraces(Pool(true, 3, 17, 17, 3, 2, {1, 1, 1, 1}), 6, 41);
  CheckRandomTraces(Pool(false, 3, 10, 13, 3, 2, {1, 1, 1, 1}), 6, 42);
  CheckRandomTraces(Pool(false, 3, 10, 13, 3, 2, {1, 0, 1, 2}, false, true), 6, 43);
  CheckRandomTraces(Pool(true, 2, 11, 11, 3, 2, {0, 0, 0, 0}, /*ceil_mode=*/true), 6, 44);
  CheckRandomTraces(Pool(false, 2, 11, 12, 2, 3, {1, 1, 1, 1}, true, true), 6, 45);
  CheckRandomTraces(Pool(true, 2, 12, 12, 3, 1, {2, 2, 2, 2}, false, false, /*dilation=*/2), 6, 46);
  CheckRandomTraces(Pool(false, 4, 8, 8, 2, 2, {0, 0, 0, 0}), 6, 47);
  // Rows wide enough for whole 16-lane vectors of interior columns, read as stride-2 and
  // stride-3 spans (one load and a shuffle), beside the clamped border columns.
  CheckRandomTraces(Pool(true, 2, 6, 75, 3, 2, {1, 1, 1, 1}), 6, 49);
  CheckRandomTraces(Pool(false, 2, 5, 100, 3, 3, {1, 1, 1, 1}, false, true), 6, 50);
  ir::Workload w = Pool(true, 3, 9, 9, 3, 2, {1, 1, 1, 1});
  w.inputs.push_back(schedule::testing::Tensor({3, 1, 1}));
  w.epilogue = {{ir::EwOp::kMul, {schedule::testing::Acc(), schedule::testing::In(1)}},
                {ir::EwOp::kRelu, {schedule::testing::Val(0)}}};
  CheckRandomTraces(w, 6, 48);
}

}  // namespace
}  // namespace gtco::kernels
