// Tests for ir::Workload: canonical text round trip, keys, validation, cost figures.
#include "common/ir/workload.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "gtest/gtest.h"

namespace gtco::ir {
namespace {

TensorDesc F32(std::vector<int64_t> shape) {
  TensorDesc desc;
  desc.shape = std::move(shape);
  return desc;
}

Operand Acc() { return Operand{}; }
Operand In(int index) { return Operand{Operand::Kind::kInput, index, 0.0f}; }
Operand Val(int index) { return Operand{Operand::Kind::kValue, index, 0.0f}; }
Operand Imm(float value) { return Operand{Operand::Kind::kConst, 0, value}; }

/// Batched attention scores: [12, 197, 64] x [12, 64, 197] / 8 + mask[197].
Workload AttentionScores() {
  Workload w;
  w.anchor = AnchorKind::kMatMul;
  w.matmul = MatMulParams{12, 197, 197, 64, true, true, false, false};
  w.inputs = {F32({12, 197, 64}), F32({12, 64, 197}), F32({197})};
  w.num_anchor_inputs = 2;
  w.epilogue = {EwInstr{EwOp::kDiv, {Acc(), Imm(8.0f)}}, EwInstr{EwOp::kAdd, {Val(0), In(2)}}};
  w.output = F32({12, 197, 197});
  return w;
}

Workload LayerNorm() {
  Workload w;
  w.anchor = AnchorKind::kLayerNorm;
  w.row.rows = 197;
  w.row.cols = 768;
  w.row.epsilon = 1e-6f;
  w.inputs = {F32({197, 768}), F32({768}), F32({768}), F32({197, 768})};
  w.num_anchor_inputs = 3;
  w.epilogue = {EwInstr{EwOp::kAdd, {Acc(), In(3)}}};
  w.output = F32({197, 768});
  return w;
}

uint32_t Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

TEST(WorkloadTest, CanonicalStringRoundTripsExactly) {
  for (const Workload& original : {AttentionScores(), LayerNorm()}) {
    ASSERT_TRUE(original.Validate().ok()) << original.Validate();
    auto parsed = ParseWorkload(original.CanonicalString());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->CanonicalString(), original.CanonicalString());
    EXPECT_EQ(parsed->Key(), original.Key());
    EXPECT_EQ(parsed->anchor, original.anchor);
    EXPECT_EQ(parsed->inputs.size(), original.inputs.size());
    EXPECT_EQ(parsed->epilogue.size(), original.epilogue.size());
    EXPECT_EQ(Bits(parsed->row.epsilon), Bits(original.row.epsilon));
  }
}

TEST(WorkloadTest, ImmediatesSurviveBitExact) {
  const float values[] = {0.1f,
                          1.0f / std::sqrt(2.0f),
                          -0.0f,
                          1e-40f /* subnormal */,
                          std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::infinity(),
                          -3.0e38f};
  for (float value : values) {
    Workload w = AttentionScores();
    w.epilogue[0].args[1] = Imm(value);
    auto parsed = ParseWorkload(w.CanonicalString());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(Bits(parsed->epilogue[0].args[1].value), Bits(value)) << value;
  }
}

TEST(WorkloadTest, CanonicalTextHasTheDocumentedForm) {
  const std::string text = AttentionScores().CanonicalString();
  EXPECT_EQ(text,
            "gtco-workload v1\n"
            "anchor matmul\n"
            "matmul batch=12 m=197 n=197 k=64 a_batched=1 b_batched=1 trans_a=0 trans_b=0\n"
            "anchor_inputs 2\n"
            "input f32 [12,197,64]\n"
            "input f32 [12,64,197]\n"
            "input f32 [197]\n"
            "output f32 [12,197,197]\n"
            "ew div acc c:0x1p+3\n"
            "ew add v:0 in:2\n");
}

TEST(WorkloadTest, KeyIsStableAndSensitiveToMathAndShapes) {
  const std::string key = AttentionScores().Key();
  ASSERT_EQ(key.rfind("matmul-", 0), 0u) << key;
  EXPECT_EQ(key.size(), std::string("matmul-").size() + 32);
  EXPECT_EQ(AttentionScores().Key(), key);

  Workload other_shape = AttentionScores();
  other_shape.matmul.k = 32;
  other_shape.inputs[0].shape[2] = 32;
  other_shape.inputs[1].shape[1] = 32;
  EXPECT_NE(other_shape.Key(), key);

  Workload other_const = AttentionScores();
  other_const.epilogue[0].args[1] = Imm(std::nextafter(8.0f, 9.0f));
  EXPECT_NE(other_const.Key(), key);

  Workload other_op = AttentionScores();
  other_op.epilogue[1].op = EwOp::kSub;
  EXPECT_NE(other_op.Key(), key);

  EXPECT_EQ(LayerNorm().Key().rfind("layernorm-", 0), 0u);
}

TEST(WorkloadTest, DescriptionFlopsAndBytes) {
  Workload w = AttentionScores();
  EXPECT_EQ(w.Description(), "matmul 12x197x197x64 (b x m x n x k) +div+add");
  const int64_t outputs = 12 * 197 * 197;
  EXPECT_EQ(w.Flops(), 2LL * 12 * 197 * 197 * 64 + 2 * outputs);
  EXPECT_EQ(w.MinBytes(), 4 * (12 * 197 * 64 * 2 + 197 + outputs));
  EXPECT_EQ(LayerNorm().Description(), "layernorm 197x768 +add");
}

TEST(WorkloadTest, ValidateRejectsInconsistentShapes) {
  Workload bad_a = AttentionScores();
  bad_a.inputs[0].shape = {12, 64, 197};
  EXPECT_EQ(bad_a.Validate().code(), absl::StatusCode::kInvalidArgument);

  Workload transposed = AttentionScores();  // trans_b flips B's expected layout
  transposed.matmul.trans_b = true;
  EXPECT_FALSE(transposed.Validate().ok());
  transposed.inputs[1].shape = {12, 197, 64};
  EXPECT_TRUE(transposed.Validate().ok()) << transposed.Validate();

  Workload unbatched_b = AttentionScores();
  unbatched_b.matmul.b_batched = false;
  EXPECT_FALSE(unbatched_b.Validate().ok());
  unbatched_b.inputs[1].shape[0] = 1;
  EXPECT_TRUE(unbatched_b.Validate().ok());

  Workload bad_extra = AttentionScores();
  bad_extra.inputs[2].shape = {64};
  EXPECT_FALSE(bad_extra.Validate().ok());

  Workload bad_scale = LayerNorm();
  bad_scale.inputs[1].shape = {767};
  EXPECT_FALSE(bad_scale.Validate().ok());

  Workload bad_output = LayerNorm();
  bad_output.output.shape = {197, 1};
  EXPECT_FALSE(bad_output.Validate().ok());
}

// Found by fuzzing (tests/fuzz/fuzz_workload_text): huge but consistent shapes passed
// Validate() and Flops() then overflowed int64 (undefined behaviour).
TEST(WorkloadTest, ValidateRejectsSizesWhoseCountsOverflow) {
  const int64_t huge = int64_t{1} << 40;
  absl::StatusOr<Workload> softmax = ParseWorkload(
      "gtco-workload v1\nanchor softmax\nrow rows=1099511627776 cols=1099511627776\n"
      "anchor_inputs 1\ninput f32 [1099511627776,1099511627776]\n"
      "output f32 [1099511627776,1099511627776]\n");
  ASSERT_TRUE(softmax.ok()) << softmax.status();
  EXPECT_EQ(softmax->Validate().code(), absl::StatusCode::kInvalidArgument);

  Workload matmul = AttentionScores();  // 2^40-element tensors are the largest accepted
  matmul.matmul = MatMulParams{1, huge, 1, 1, false, false, false, false};
  matmul.inputs = {F32({1, huge, 1}), F32({1, 1, 1}), F32({1})};
  matmul.output = F32({1, huge, 1});
  EXPECT_TRUE(matmul.Validate().ok()) << matmul.Validate();
  EXPECT_EQ(matmul.Flops(), 2 * huge + 2 * huge);
  matmul.matmul.m = huge * 2;
  matmul.inputs[0].shape[1] = matmul.output.shape[1] = huge * 2;
  EXPECT_EQ(matmul.Validate().code(), absl::StatusCode::kInvalidArgument);

  Workload long_epilogue = AttentionScores();
  long_epilogue.epilogue.resize((size_t{1} << 16) + 1, EwInstr{EwOp::kRelu, {Acc()}});
  EXPECT_EQ(long_epilogue.Validate().code(), absl::StatusCode::kInvalidArgument);
}

TEST(WorkloadTest, ValidateRejectsBadOperands) {
  Workload anchor_input = AttentionScores();  // kInput may only name extra inputs
  anchor_input.epilogue[1].args[1] = In(1);
  EXPECT_FALSE(anchor_input.Validate().ok());

  Workload out_of_range = AttentionScores();
  out_of_range.epilogue[1].args[1] = In(3);
  EXPECT_FALSE(out_of_range.Validate().ok());

  Workload forward_value = AttentionScores();
  forward_value.epilogue[0].args[0] = Val(1);
  EXPECT_FALSE(forward_value.Validate().ok());

  Workload arity = AttentionScores();
  arity.epilogue[0].op = EwOp::kRelu;
  EXPECT_FALSE(arity.Validate().ok());

  Workload wrong_anchor_inputs = AttentionScores();
  wrong_anchor_inputs.num_anchor_inputs = 3;
  EXPECT_FALSE(wrong_anchor_inputs.Validate().ok());
}

TEST(WorkloadTest, AnchorlessWorkloads) {
  Workload w;
  w.inputs = {F32({16, 64}), F32({64})};
  w.epilogue = {EwInstr{EwOp::kAdd, {In(0), In(1)}}, EwInstr{EwOp::kRelu, {Val(0)}}};
  w.output = F32({16, 64});
  EXPECT_TRUE(w.Validate().ok()) << w.Validate();
  EXPECT_EQ(w.Key().rfind("none-", 0), 0u);
  EXPECT_EQ(w.Flops(), 2 * 16 * 64);
  auto parsed = ParseWorkload(w.CanonicalString());
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->CanonicalString(), w.CanonicalString());

  Workload uses_acc = w;
  uses_acc.epilogue[1].args[0] = Acc();
  EXPECT_FALSE(uses_acc.Validate().ok());
  Workload empty = w;
  empty.epilogue.clear();
  EXPECT_FALSE(empty.Validate().ok());
}

TEST(WorkloadTest, ParseRejectsMalformedText) {
  EXPECT_EQ(ParseWorkload("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(ParseWorkload("hello\nworld\n").ok());
  std::string text = AttentionScores().CanonicalString();
  EXPECT_FALSE(ParseWorkload(text + "ew frobnicate acc\n").ok());
  EXPECT_FALSE(ParseWorkload(text + "ew add acc c:zz\n").ok());
  EXPECT_FALSE(ParseWorkload(text + "input f32 [1,x]\n").ok());
  EXPECT_FALSE(ParseWorkload(text + "input q7 [1]\n").ok());
  EXPECT_FALSE(ParseWorkload(text + "matmul batch=1 colour=2\n").ok());
}

TEST(WorkloadTest, NamesAndScalarSemantics) {
  EXPECT_STREQ(DTypeName(DType::kBF16), "bf16");
  EXPECT_EQ(*ParseDType("i64"), DType::kI64);
  EXPECT_STREQ(AnchorKindName(AnchorKind::kReduceMean), "reduce_mean");
  EXPECT_EQ(EwOpArity(EwOp::kPow), 2);
  EXPECT_EQ(EwOpArity(EwOp::kErf), 1);
  EXPECT_FLOAT_EQ(EvalEwOp(EwOp::kRelu, -2.0f, 0.0f), 0.0f);
  EXPECT_FLOAT_EQ(EvalEwOp(EwOp::kRelu, 2.5f, 0.0f), 2.5f);
  EXPECT_FLOAT_EQ(EvalEwOp(EwOp::kSigmoid, 0.0f, 0.0f), 0.5f);
  EXPECT_FLOAT_EQ(EvalEwOp(EwOp::kErf, 1.0f, 0.0f), std::erf(1.0f));
  EXPECT_FLOAT_EQ(EvalEwOp(EwOp::kPow, 2.0f, 10.0f), 1024.0f);
  EXPECT_FLOAT_EQ(EvalEwOp(EwOp::kSub, 2.0f, 5.0f), -3.0f);
  EXPECT_FLOAT_EQ(EvalEwOp(EwOp::kMax, 2.0f, 5.0f), 5.0f);
  EXPECT_FLOAT_EQ(EvalEwOp(EwOp::kMin, 2.0f, 5.0f), 2.0f);
  EXPECT_FLOAT_EQ(EvalEwOp(EwOp::kNeg, 2.0f, 0.0f), -2.0f);
}

}  // namespace
}  // namespace gtco::ir
