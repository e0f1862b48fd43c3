// The runner child isolates candidates: a crash, a hang or a wrong result is a failed result,
// and the next candidate is measured normally by a fresh child.
#include "worker/runner.h"

#include <gtest/gtest.h>

#include "common/ir/conv.h"
#include "common/ir/workload.h"
#include "worker/measure.h"

namespace gtco::worker {
namespace {

constexpr const char* kWorker = GTCO_BINARY_DIR "/worker/gtco-worker";

/// out[i] = in0[i] + 1 over 64 elements.
ir::Workload AddOne() {
  ir::Workload workload;
  workload.anchor = ir::AnchorKind::kNone;
  workload.inputs = {ir::TensorDesc{ir::DType::kF32, {64}}};
  workload.output = ir::TensorDesc{ir::DType::kF32, {64}};
  ir::EwInstr add;
  add.op = ir::EwOp::kAdd;
  add.args = {ir::Operand{ir::Operand::Kind::kInput, 0, 0.0f},
              ir::Operand{ir::Operand::Kind::kConst, 0, 1.0f}};
  workload.epilogue = {add};
  return workload;
}

/// A hand-written kernel body for `void gtco_kernel(ptr args)`.
gtco::v1::Candidate MakeCandidate(const std::string& id, const std::string& body) {
  gtco::v1::Candidate candidate;
  candidate.set_candidate_id(id);
  candidate.set_workload_key("test-add-one");
  candidate.set_workload(AddOne().CanonicalString());
  candidate.set_entry("gtco_kernel");
  candidate.set_program("define void @gtco_kernel(ptr %args) {\n" + body + "\n}\n");
  return candidate;
}

// Correct: loops i in [0,64): out[i] = in[i] + 1.
constexpr const char* kCorrect = R"(entry:
  %in = load ptr, ptr %args
  %outp = getelementptr ptr, ptr %args, i64 1
  %out = load ptr, ptr %outp
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %src = getelementptr float, ptr %in, i64 %i
  %x = load float, ptr %src
  %y = fadd float %x, 1.0
  %dst = getelementptr float, ptr %out, i64 %i
  store float %y, ptr %dst
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, 64
  br i1 %done, label %exit, label %loop
exit:
  ret void)";

TEST(RunnerTest, MeasuresACorrectKernel) {
  RunnerProcess runner(kWorker, RunnerConfig{target::Target::kCpu, 1, 0});
  gtco::v1::MeasureResult result = runner.Run(MakeCandidate("ok", kCorrect), 30);
  EXPECT_TRUE(result.ok()) << result.error();
  EXPECT_TRUE(result.verified());
  EXPECT_GT(result.median_seconds(), 0);
  EXPECT_GE(result.repeats(), 5);
  EXPECT_LE(result.min_seconds(), result.median_seconds());
  EXPECT_GE(result.max_seconds(), result.median_seconds());
}

TEST(RunnerTest, CrashIsAResultAndTheNextCandidateRuns) {
  RunnerProcess runner(kWorker, RunnerConfig{target::Target::kCpu, 1, 0});
  gtco::v1::MeasureResult crashed = runner.Run(
      MakeCandidate("crash", "entry:\n  store volatile float 0.0, ptr null\n  ret void"), 30);
  EXPECT_FALSE(crashed.ok());
  EXPECT_EQ(crashed.error_kind(), gtco::v1::ERROR_KIND_CRASH);
  EXPECT_NE(crashed.error().find("signal"), std::string::npos) << crashed.error();
  gtco::v1::MeasureResult next = runner.Run(MakeCandidate("after-crash", kCorrect), 30);
  EXPECT_TRUE(next.ok()) << next.error();
}

TEST(RunnerTest, HangIsKilledAfterTheTimeout) {
  RunnerProcess runner(kWorker, RunnerConfig{target::Target::kCpu, 1, 0});
  gtco::v1::MeasureResult hung = runner.Run(
      MakeCandidate("hang",
                    "entry:\n  br label %spin\nspin:\n  store volatile float 0.0, ptr %args\n"
                    "  br label %spin"),
      1.5);
  EXPECT_FALSE(hung.ok());
  EXPECT_EQ(hung.error_kind(), gtco::v1::ERROR_KIND_TIMEOUT);
  gtco::v1::MeasureResult next = runner.Run(MakeCandidate("after-hang", kCorrect), 30);
  EXPECT_TRUE(next.ok()) << next.error();
}

TEST(RunnerTest, WrongResultIsNeverTimed) {
  RunnerProcess runner(kWorker, RunnerConfig{target::Target::kCpu, 1, 0});
  gtco::v1::MeasureResult wrong = runner.Run(MakeCandidate("noop", "entry:\n  ret void"), 30);
  EXPECT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error_kind(), gtco::v1::ERROR_KIND_WRONG_RESULT);
  EXPECT_FALSE(wrong.verified());
  EXPECT_EQ(wrong.median_seconds(), 0);
}

TEST(RunnerTest, CompileErrorIsAResult) {
  RunnerProcess runner(kWorker, RunnerConfig{target::Target::kCpu, 1, 0});
  gtco::v1::MeasureResult bad = runner.Run(MakeCandidate("bad-ir", "entry:\n  this is not IR"), 30);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.error_kind(), gtco::v1::ERROR_KIND_COMPILE);
}

// A candidate's trace tells the worker how the kernel reads its inputs (pre-packed weights): one
// that does not parse is refused with the parser's reason, not run on unpacked inputs.
TEST(RunnerTest, UnparsableTraceIsAResult) {
  RunnerProcess runner(kWorker, RunnerConfig{target::Target::kCpu, 1, 0});
  gtco::v1::Candidate candidate = MakeCandidate("bad-trace", kCorrect);
  candidate.set_trace("no sketch here");
  gtco::v1::MeasureResult bad = runner.Run(candidate, 30);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.error_kind(), gtco::v1::ERROR_KIND_COMPILE);
  EXPECT_NE(bad.error().find("trace does not parse"), std::string::npos) << bad.error();
}

// What a timed run starts with out of the caches: weights and biases; the activation input, a
// residual (an epilogue input of the output's size) and the output buffer stay where they were.
TEST(ColdArgumentsTest, WeightsAndBiasesAreColdActivationsAndTheOutputAreNot) {
  ir::ConvParams p;
  p.in_channels = 64;
  p.in_h = p.in_w = 56;
  p.out_channels = 256;
  p.kernel_h = p.kernel_w = 1;
  ir::Workload conv = ir::MakeConvWorkload(p);
  using K = ir::Operand::Kind;
  conv.inputs.push_back({ir::DType::kF32, {256, 1, 1}});  // bias
  conv.inputs.push_back(conv.output);                     // residual
  conv.epilogue.push_back({ir::EwOp::kAdd, {{K::kAcc, 0, 0}, {K::kInput, 2, 0}}});
  conv.epilogue.push_back({ir::EwOp::kAdd, {{K::kValue, 0, 0}, {K::kInput, 3, 0}}});
  ASSERT_TRUE(conv.Validate().ok()) << conv.Validate();
  // X, W, bias, residual, output.
  EXPECT_EQ(ColdArguments(conv), (std::vector<bool>{false, true, true, false, false}));

  // A batched matmul of two activations (attention's Q.K^T): its second anchor input is evicted
  // like a weight (a workload does not say which inputs are constants).
  ir::Workload matmul;
  matmul.anchor = ir::AnchorKind::kMatMul;
  matmul.matmul.m = 16;
  matmul.matmul.n = 32;
  matmul.matmul.k = 8;
  matmul.inputs = {{ir::DType::kF32, {1, 16, 8}}, {ir::DType::kF32, {1, 8, 32}}};
  matmul.num_anchor_inputs = 2;
  matmul.output = {ir::DType::kF32, {1, 16, 32}};
  ASSERT_TRUE(matmul.Validate().ok()) << matmul.Validate();
  EXPECT_EQ(ColdArguments(matmul), (std::vector<bool>{false, true, false}));
}

}  // namespace
}  // namespace gtco::worker
