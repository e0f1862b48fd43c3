// Tests for fused attention workloads (kAttention): canonical text, keys, validation, the
// reference against a naive evaluation, and the f16 conversions and buffers it relies on.
#include <cmath>
#include <cstring>
#include <limits>

#include "common/ir/attention.h"
#include "common/ir/reference.h"
#include "gtest/gtest.h"

namespace gtco::ir {
namespace {

AttentionParams Params(int64_t batch, int64_t seq_q, int64_t seq_k, int64_t head_dim,
                       int64_t value_dim, float scale, bool k_transposed = false) {
  AttentionParams p;
  p.batch = batch;
  p.seq_q = seq_q;
  p.seq_k = seq_k;
  p.head_dim = head_dim;
  p.value_dim = value_dim;
  p.scale = scale;
  p.k_transposed = k_transposed;
  return p;
}

Workload Vit() { return MakeAttentionWorkload(Params(12, 197, 197, 64, 64, 0.125f)); }

uint32_t Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

TEST(AttentionWorkloadTest, CanonicalTextHasTheDocumentedForm) {
  EXPECT_EQ(Vit().CanonicalString(),
            "gtco-workload v1\n"
            "anchor attention\n"
            "attention batch=12 seq_q=197 seq_k=197 head_dim=64 value_dim=64 scale=0x1p-3 "
            "k_transposed=0\n"
            "anchor_inputs 3\n"
            "input f32 [12,197,64]\n"
            "input f32 [12,197,64]\n"
            "input f32 [12,197,64]\n"
            "output f32 [12,197,64]\n");
}

TEST(AttentionWorkloadTest, CanonicalStringRoundTripsExactly) {
  Workload with_epilogue = MakeAttentionWorkload(Params(2, 50, 77, 32, 16, 0.17677669f, true));
  with_epilogue.inputs.push_back({DType::kF32, {16}});
  with_epilogue.epilogue = {
      EwInstr{EwOp::kAdd, {Operand{}, Operand{Operand::Kind::kInput, 3, 0.0f}}}};
  const Workload half =
      MakeAttentionWorkload(Params(4, 128, 128, 64, 64, 0.125f), DType::kF16, DType::kF16);
  const Workload bf16 = MakeAttentionWorkload(Params(1, 3, 5, 7, 9, -2.5f), DType::kBF16);
  for (const Workload& original : {Vit(), with_epilogue, half, bf16}) {
    ASSERT_TRUE(original.Validate().ok()) << original.Validate();
    absl::StatusOr<Workload> parsed = ParseWorkload(original.CanonicalString());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->CanonicalString(), original.CanonicalString());
    EXPECT_EQ(parsed->Key(), original.Key());
    EXPECT_EQ(parsed->anchor, AnchorKind::kAttention);
    EXPECT_EQ(parsed->attention.batch, original.attention.batch);
    EXPECT_EQ(parsed->attention.seq_q, original.attention.seq_q);
    EXPECT_EQ(parsed->attention.seq_k, original.attention.seq_k);
    EXPECT_EQ(parsed->attention.head_dim, original.attention.head_dim);
    EXPECT_EQ(parsed->attention.value_dim, original.attention.value_dim);
    EXPECT_EQ(parsed->attention.k_transposed, original.attention.k_transposed);
    EXPECT_EQ(Bits(parsed->attention.scale), Bits(original.attention.scale));
    EXPECT_TRUE(parsed->Validate().ok()) << parsed->Validate();
  }
}

TEST(AttentionWorkloadTest, KeyIsSensitiveToEveryParam) {
  const std::string key = Vit().Key();
  ASSERT_EQ(key.rfind("attention-", 0), 0u) << key;
  EXPECT_EQ(key.size(), std::string("attention-").size() + 32);
  Workload other_scale = Vit();
  other_scale.attention.scale = std::nextafter(0.125f, 1.0f);
  EXPECT_NE(other_scale.Key(), key);
  EXPECT_NE(MakeAttentionWorkload(Params(12, 197, 197, 64, 64, 0.125f, true)).Key(), key);
  EXPECT_NE(MakeAttentionWorkload(Params(12, 197, 196, 64, 64, 0.125f)).Key(), key);
  EXPECT_NE(MakeAttentionWorkload(Params(12, 197, 197, 64, 64, 0.125f), DType::kF16).Key(), key);
}

TEST(AttentionWorkloadTest, DescriptionFlopsAndBytes) {
  const Workload w = Vit();
  EXPECT_EQ(w.Description(), "attention 12x197x197x64 scale=0.125");
  const int64_t scores = 12LL * 197 * 197;
  EXPECT_EQ(w.Flops(), 2 * scores * (64 + 64) + 5 * scores);
  EXPECT_EQ(w.MinBytes(), 4LL * 4 * 12 * 197 * 64);
  Workload other =
      MakeAttentionWorkload(Params(2, 50, 77, 32, 16, 0.25f, true), DType::kBF16, DType::kBF16);
  EXPECT_EQ(other.Description(), "attention 2x50x77x32 v=16 scale=0.25 k_transposed bf16->bf16");
  EXPECT_EQ(other.MinBytes(), 2LL * (2 * 50 * 32 + 2 * 32 * 77 + 2 * 77 * 16 + 2 * 50 * 16));
  other.output.dtype = DType::kF32;
  other.inputs.push_back({DType::kF32, {2, 50, 16}});
  other.epilogue = {EwInstr{EwOp::kMul, {Operand{}, Operand{Operand::Kind::kInput, 3, 0.0f}}}};
  EXPECT_EQ(other.Description(),
            "attention 2x50x77x32 v=16 scale=0.25 k_transposed bf16->f32 +mul");
  EXPECT_EQ(other.Flops(), 2LL * 2 * 50 * 77 * (32 + 16) + 5LL * 2 * 50 * 77 + 2 * 50 * 16);
}

TEST(AttentionWorkloadTest, ValidateRejectsInconsistentWorkloads) {
  auto expect_invalid = [](const Workload& w, const std::string& mention) {
    const absl::Status status = w.Validate();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << mention;
    EXPECT_NE(status.message().find(mention), std::string::npos) << status;
  };
  Workload bad_k = Vit();
  bad_k.attention.k_transposed = true;  // K stays [batch, seq_k, head_dim]
  expect_invalid(bad_k, "input K has shape [12,197,64], expected [12,64,197]");
  Workload bad_v = Vit();
  bad_v.inputs[2].shape = {12, 196, 64};
  expect_invalid(bad_v, "input V");
  Workload bad_out = Vit();
  bad_out.output.shape = {12, 197, 197};
  expect_invalid(bad_out, "output has shape");
  Workload bad_q = Vit();
  bad_q.inputs[0].shape = {197, 64};
  expect_invalid(bad_q, "input Q");
  Workload zero = Vit();
  zero.attention.seq_k = 0;
  expect_invalid(zero, "sizes must be positive");
  Workload nan_scale = Vit();
  nan_scale.attention.scale = std::numeric_limits<float>::quiet_NaN();
  expect_invalid(nan_scale, "is not finite");
  Workload inf_scale = Vit();
  inf_scale.attention.scale = std::numeric_limits<float>::infinity();
  expect_invalid(inf_scale, "is not finite");
  Workload two_inputs = Vit();
  two_inputs.num_anchor_inputs = 2;
  expect_invalid(two_inputs, "anchor attention takes 3 inputs, not 2");
  Workload missing = Vit();
  missing.inputs.pop_back();
  expect_invalid(missing, "fewer inputs than its anchor needs");
  Workload mixed = Vit();
  mixed.inputs[1].dtype = DType::kF16;
  expect_invalid(mixed, "Q, K and V must share one dtype");
  expect_invalid(MakeAttentionWorkload(Params(1, 2, 2, 2, 2, 1.0f), DType::kI8, DType::kF32),
                 "must be f32, f16 or bf16");
  expect_invalid(MakeAttentionWorkload(Params(1, 2, 2, 2, 2, 1.0f), DType::kF16, DType::kBF16),
                 "the output must be f32 or the inputs' dtype");
  Workload half_epilogue =
      MakeAttentionWorkload(Params(1, 2, 2, 2, 2, 1.0f), DType::kF16, DType::kF16);
  half_epilogue.epilogue = {EwInstr{EwOp::kRelu, {Operand{}}}};
  expect_invalid(half_epilogue, "epilogues need an f32 output");
  Workload f16_extra = Vit();
  f16_extra.inputs.push_back({DType::kF16, {64}});
  f16_extra.epilogue = {EwInstr{EwOp::kAdd, {Operand{}, Operand{Operand::Kind::kInput, 3, 0.0f}}}};
  expect_invalid(f16_extra, "input 3 must be f32");
  // Every tensor is small, but the score matrix would need more than 2^62 flops.
  expect_invalid(
      MakeAttentionWorkload(Params(1, int64_t{1} << 24, int64_t{1} << 24, 16384, 1, 1.0f)),
      "more than 2^62 flops");
  absl::StatusOr<Workload> unknown_field =
      ParseWorkload("gtco-workload v1\nanchor attention\nattention heads=2\n");
  EXPECT_EQ(unknown_field.status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<Workload> bad_scale =
      ParseWorkload("gtco-workload v1\nanchor attention\nattention scale=0x1p-3x\n");
  EXPECT_EQ(bad_scale.status().code(), absl::StatusCode::kInvalidArgument);
}

/// softmax(scale * Q K^T) V the obvious way, in float with a separate softmax pass.
std::vector<float> NaiveAttention(const AttentionParams& p, const std::vector<float>& q,
                                  const std::vector<float>& k, const std::vector<float>& v) {
  std::vector<float> out;
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t i = 0; i < p.seq_q; ++i) {
      std::vector<float> scores(p.seq_k);
      for (int64_t j = 0; j < p.seq_k; ++j) {
        float dot = 0.0f;
        for (int64_t d = 0; d < p.head_dim; ++d) {
          const int64_t k_index = p.k_transposed ? (b * p.head_dim + d) * p.seq_k + j
                                                 : (b * p.seq_k + j) * p.head_dim + d;
          dot += q[(b * p.seq_q + i) * p.head_dim + d] * k[k_index];
        }
        scores[j] = p.scale * dot;
      }
      float max_score = scores[0];
      for (float score : scores) max_score = std::max(max_score, score);
      float sum = 0.0f;
      for (float& score : scores) sum += (score = std::exp(score - max_score));
      for (int64_t c = 0; c < p.value_dim; ++c) {
        float acc = 0.0f;
        for (int64_t j = 0; j < p.seq_k; ++j) {
          acc += scores[j] / sum * v[(b * p.seq_k + j) * p.value_dim + c];
        }
        out.push_back(acc);
      }
    }
  }
  return out;
}

TEST(AttentionWorkloadTest, ReferenceMatchesANaiveEvaluation) {
  const AttentionParams cases[] = {Params(2, 5, 7, 8, 8, 0.35355339f),
                                   Params(3, 9, 4, 6, 5, 1.5f, true), Params(1, 1, 1, 3, 2, 0.0f),
                                   Params(2, 17, 33, 16, 24, -0.25f, true)};
  for (const AttentionParams& p : cases) {
    const Workload w = MakeAttentionWorkload(p);
    ASSERT_TRUE(w.Validate().ok()) << w.Validate();
    const std::vector<std::vector<float>> inputs = RandomInputs(w, 11);
    const std::vector<float> expected = NaiveAttention(p, inputs[0], inputs[1], inputs[2]);
    const std::vector<float> actual = ComputeReference(w, inputs);
    EXPECT_TRUE(CompareOutputs(expected, actual, 1e-5, 1e-6).ok())
        << w.Description() << ": " << CompareOutputs(expected, actual, 1e-5, 1e-6);
    double rtol = 0, atol = 0;
    DefaultTolerance(w, &rtol, &atol);
    EXPECT_GT(atol, 0.0);
    EXPECT_GT(rtol, 0.0);
  }
  // One key: the output row is that key's V row.
  const Workload single = MakeAttentionWorkload(Params(1, 2, 1, 4, 3, 0.5f));
  const std::vector<std::vector<float>> inputs = RandomInputs(single, 3);
  const std::vector<float> out = ComputeReference(single, inputs);
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t c = 0; c < 3; ++c) EXPECT_FLOAT_EQ(out[i * 3 + c], inputs[2][c]);
  }
}

TEST(AttentionWorkloadTest, ReferenceAppliesTheEpilogueAndRoundsLowPrecisionOutputs) {
  Workload w = MakeAttentionWorkload(Params(2, 6, 9, 8, 4, 0.3f));
  w.inputs.push_back({DType::kF32, {4}});
  w.epilogue = {EwInstr{EwOp::kAdd, {Operand{}, Operand{Operand::Kind::kInput, 3, 0.0f}}}};
  ASSERT_TRUE(w.Validate().ok()) << w.Validate();
  const std::vector<std::vector<float>> inputs = RandomInputs(w, 5);
  const std::vector<float> with_bias = ComputeReference(w, inputs);
  const Workload plain = MakeAttentionWorkload(w.attention);
  const std::vector<float> without =
      ComputeReference(plain, std::vector<std::vector<float>>(inputs.begin(), inputs.begin() + 3));
  for (size_t flat = 0; flat < without.size(); ++flat) {
    EXPECT_FLOAT_EQ(with_bias[flat], without[flat] + inputs[3][flat % 4]);
  }
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    const Workload low = MakeAttentionWorkload(w.attention, dtype, dtype);
    const std::vector<TypedBuffer> typed = RandomTypedInputs(low, 5);
    const TypedBuffer out = ComputeTypedReference(low, typed);
    EXPECT_EQ(out.dtype(), dtype);
    const std::vector<float> values = ComputeReference(low, RandomInputs(low, 5));
    for (int64_t flat = 0; flat < out.size(); ++flat) {
      const float value = values[flat];
      const float rounded =
          dtype == DType::kF16 ? F16ToFloat(FloatToF16(value)) : BF16ToFloat(FloatToBF16(value));
      EXPECT_EQ(value, rounded);
      EXPECT_EQ(out.Get(flat), value);
    }
  }
}

TEST(AttentionWorkloadTest, F16ConversionsRoundToNearestEven) {
  EXPECT_EQ(FloatToF16(1.0f), 0x3C00);
  EXPECT_EQ(FloatToF16(-2.0f), 0xC000);
  EXPECT_EQ(FloatToF16(0.0f), 0x0000);
  EXPECT_EQ(FloatToF16(-0.0f), 0x8000);
  EXPECT_EQ(FloatToF16(65504.0f), 0x7BFF);                      // largest finite
  EXPECT_EQ(FloatToF16(65519.0f), 0x7BFF);                      // below the tie
  EXPECT_EQ(FloatToF16(65520.0f), 0x7C00);                      // tie rounds to even: infinity
  EXPECT_EQ(FloatToF16(std::ldexp(1.0f, -24)), 0x0001);         // smallest subnormal
  EXPECT_EQ(FloatToF16(std::ldexp(1.0f, -25)), 0x0000);         // tie to even: zero
  EXPECT_EQ(FloatToF16(std::ldexp(3.0f, -25)), 0x0002);         // 1.5 ulp: tie to even (2)
  EXPECT_EQ(FloatToF16(std::ldexp(1.0f, -14)), 0x0400);         // smallest normal
  EXPECT_EQ(FloatToF16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie to even (down)
  EXPECT_EQ(FloatToF16(1.0f + std::ldexp(3.0f, -11)), 0x3C02);  // tie to even (up)
  EXPECT_EQ(FloatToF16(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(FloatToF16(-std::numeric_limits<float>::infinity()), 0xFC00);
  EXPECT_TRUE(std::isnan(F16ToFloat(FloatToF16(std::numeric_limits<float>::quiet_NaN()))));
  // Every non-NaN half survives a round trip through float exactly.
  for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const float value = F16ToFloat(static_cast<uint16_t>(bits));
    if (std::isnan(value)) continue;
    ASSERT_EQ(FloatToF16(value), bits) << std::hex << bits;
  }
  EXPECT_EQ(F16ToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(F16ToFloat(0x3555), 0.333251953125f);
}

TEST(AttentionWorkloadTest, F16BuffersAndRandomInputs) {
  TypedBuffer half(DType::kF16, 2);
  half.Set(0, 1.0 + std::ldexp(1.0, -11));  // a tie: rounds to even (1.0)
  half.Set(1, -3.0);
  EXPECT_EQ(half.Get(0), 1.0);
  EXPECT_EQ(static_cast<const uint16_t*>(half.data())[1], 0xC200);
  const Workload w = MakeAttentionWorkload(Params(2, 8, 8, 16, 16, 0.25f), DType::kF16);
  const std::vector<std::vector<float>> inputs = RandomInputs(w, 9);
  for (const std::vector<float>& input : inputs) {
    for (float value : input) {
      EXPECT_EQ(value, F16ToFloat(FloatToF16(value)));
      EXPECT_LE(std::fabs(value), 1.0f);
    }
  }
  const std::vector<TypedBuffer> typed = RandomTypedInputs(w, 9);
  ASSERT_EQ(typed.size(), 3u);
  EXPECT_EQ(typed[0].dtype(), DType::kF16);
  EXPECT_EQ(typed[0].ToFloats(), inputs[0]);
}

}  // namespace
}  // namespace gtco::ir
