// End-to-end tests of the sketches: random traces of every workload class are lowered, compiled
// by the LLVM JIT and run on random inputs; the outputs must match the reference evaluator.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "common/codegen/llvm/jit.h"
#include "common/codegen/llvm/llvm_codegen.h"
#include "common/ir/reference.h"
#include "common/schedule/space.h"
#include "tests/unit/schedule/test_workloads.h"

namespace gtco::schedule {
namespace {

using testing::Elementwise;
using testing::MatMul;
using testing::MatMulBiasGelu;
using testing::RowWorkload;

class ScheduleJitTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<codegen::CpuJit>> jit = codegen::CpuJit::Create();
    if (jit.ok()) jit_ = jit->release();
  }
  static void TearDownTestSuite() {
    delete jit_;
    jit_ = nullptr;
  }
  void SetUp() override {
    if (jit_ == nullptr) GTEST_SKIP() << "no LLVM JIT for this host";
  }

  /// Lowers, compiles and runs (w, trace) on `inputs`; returns the output.
  static absl::StatusOr<std::vector<float>> Run(const ir::Workload& w, const Trace& trace,
                                                std::vector<std::vector<float>>& inputs) {
    absl::StatusOr<ir::LoweredFunc> func = LowerSchedule(w, trace, "kernel");
    if (!func.ok()) return func.status();
    absl::StatusOr<std::string> llvm_ir = codegen::EmitLlvmIr(*func);
    if (!llvm_ir.ok()) return llvm_ir.status();
    absl::StatusOr<codegen::KernelEntry> entry = jit_->Compile(*llvm_ir, "kernel");
    if (!entry.ok()) return entry.status();
    std::vector<float> output(w.output.NumElements(), NAN);
    std::vector<void*> args;
    for (auto& input : inputs) args.push_back(input.data());
    args.push_back(output.data());
    (*entry)(args.data());
    return output;
  }

  /// Checks `samples` random traces (plus the default trace) of `w` against the reference.
  static void CheckRandomTraces(const ir::Workload& w, int samples, uint64_t seed) {
    absl::StatusOr<SearchSpace> space = SearchSpace::Create(w, target::DetectHostCpu());
    ASSERT_TRUE(space.ok()) << space.status();
    std::vector<std::vector<float>> inputs = ir::RandomInputs(w, seed);
    const std::vector<float> expected = ir::ComputeReference(w, inputs);
    double rtol, atol;
    ir::DefaultTolerance(w, &rtol, &atol);
    std::mt19937_64 rng(seed);
    for (int sample = 0; sample <= samples; ++sample) {
      const Trace trace = sample == 0 ? space->DefaultTrace() : space->Sample(rng);
      absl::StatusOr<std::vector<float>> output = Run(w, trace, inputs);
      ASSERT_TRUE(output.ok()) << trace.ToString() << ": " << output.status();
      absl::Status match = ir::CompareOutputs(expected, *output, rtol, atol);
      EXPECT_TRUE(match.ok()) << trace.ToString() << ": " << match;
    }
    ASSERT_TRUE(jit_->Reset().ok());
  }

  static codegen::CpuJit* jit_;
};

codegen::CpuJit* ScheduleJitTest::jit_ = nullptr;

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

TEST_F(ScheduleJitTest, MatMulResidualAndRowBroadcastEpilogue) {
  ir::Workload w = MatMul(2, 19, 45, 300);
  w.inputs.push_back(testing::Tensor({2, 19, 45}));  // residual, full shape
  w.inputs.push_back(testing::Tensor({19, 1}));      // per-row scale
  w.epilogue = {{ir::EwOp::kAdd, {testing::Acc(), testing::In(2)}},
                {ir::EwOp::kMul, {testing::Val(0), testing::In(3)}},
                {ir::EwOp::kTanh, {testing::Val(1)}}};
  CheckRandomTraces(w, 16, 8);
}

TEST_F(ScheduleJitTest, Softmax) {
  CheckRandomTraces(RowWorkload(ir::AnchorKind::kSoftmax, 3, 77), 20, 9);
  CheckRandomTraces(RowWorkload(ir::AnchorKind::kSoftmax, 12, 197), 20, 10);
  CheckRandomTraces(RowWorkload(ir::AnchorKind::kSoftmax, 1, 1), 6, 11);
  ir::Workload scaled = RowWorkload(ir::AnchorKind::kSoftmax, 64, 130);
  scaled.epilogue = {{ir::EwOp::kMul, {testing::Acc(), testing::Const(3.0f)}}};
  CheckRandomTraces(scaled, 10, 12);
}

TEST_F(ScheduleJitTest, LayerNorm) {
  CheckRandomTraces(RowWorkload(ir::AnchorKind::kLayerNorm, 197, 768), 12, 13);
  CheckRandomTraces(RowWorkload(ir::AnchorKind::kLayerNorm, 5, 3), 12, 14);
  ir::Workload residual = RowWorkload(ir::AnchorKind::kLayerNorm, 10, 37);
  residual.inputs.push_back(testing::Tensor({10, 37}));
  residual.epilogue = {{ir::EwOp::kAdd, {testing::Acc(), testing::In(3)}},
                       {ir::EwOp::kSigmoid, {testing::Val(0)}}};
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
  w.inputs = {testing::Tensor({2, 3, 7000}), testing::Tensor({2, 1, 7000}),
              testing::Tensor({1, 3, 1})};
  w.output = testing::Tensor({2, 3, 7000});
  w.epilogue = {{ir::EwOp::kMul, {testing::In(0), testing::In(1)}},
                {ir::EwOp::kMax, {testing::Val(0), testing::In(2)}},
                {ir::EwOp::kExp, {testing::Val(1)}}};
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
  }
}

}  // namespace
}  // namespace gtco::schedule
