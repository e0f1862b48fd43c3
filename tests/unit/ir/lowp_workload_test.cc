// Tests of bf16 and integer (MatMulInteger) matmul workloads: canonical text and keys (f32 text
// unchanged), validation, random inputs, typed buffers and the exact reference.
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/ir/reference.h"
#include "common/ir/workload.h"
#include "gtest/gtest.h"

namespace gtco::ir {
namespace {

Workload MatMulOf(int64_t m, int64_t n, int64_t k, DType a, DType b, DType out, int32_t za = 0,
                  int32_t zb = 0) {
  Workload w;
  w.anchor = AnchorKind::kMatMul;
  w.matmul.m = m;
  w.matmul.n = n;
  w.matmul.k = k;
  w.matmul.a_zero_point = za;
  w.matmul.b_zero_point = zb;
  w.inputs = {{a, {1, m, k}}, {b, {1, k, n}}};
  w.num_anchor_inputs = 2;
  w.output = {out, {1, m, n}};
  return w;
}

TEST(LowpWorkloadTest, F32TextIsUnchangedAndLowpTextCarriesDtypesAndZeroPoints) {
  const Workload f32 = MatMulOf(2, 3, 4, DType::kF32, DType::kF32, DType::kF32);
  EXPECT_EQ(f32.CanonicalString(),
            "gtco-workload v1\nanchor matmul\nmatmul batch=1 m=2 n=3 k=4 a_batched=0 "
            "b_batched=0 trans_a=0 trans_b=0\nanchor_inputs 2\ninput f32 [1,2,4]\n"
            "input f32 [1,4,3]\noutput f32 [1,2,3]\n");
  const Workload bf16 = MatMulOf(2, 3, 4, DType::kBF16, DType::kBF16, DType::kF32);
  EXPECT_NE(bf16.CanonicalString().find("input bf16 [1,2,4]"), std::string::npos);
  EXPECT_EQ(bf16.CanonicalString().find("zero_point"), std::string::npos);
  const Workload int8 = MatMulOf(2, 3, 4, DType::kU8, DType::kI8, DType::kI32, 5, -3);
  const std::string text = int8.CanonicalString();
  EXPECT_NE(text.find("a_zero_point=5 b_zero_point=-3"), std::string::npos) << text;
  EXPECT_NE(text.find("input u8 [1,2,4]\ninput i8 [1,4,3]\noutput i32 [1,2,3]"), std::string::npos)
      << text;
  // Distinct keys for every dtype / zero-point change; parsing round-trips.
  std::set<std::string> keys = {
      f32.Key(), bf16.Key(), int8.Key(),
      MatMulOf(2, 3, 4, DType::kU8, DType::kI8, DType::kI32, 5, 0).Key(),
      MatMulOf(2, 3, 4, DType::kI8, DType::kI8, DType::kI32, 5, -3).Key()};
  EXPECT_EQ(keys.size(), 5u);
  absl::StatusOr<Workload> parsed = ParseWorkload(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->CanonicalString(), text);
  EXPECT_EQ(parsed->matmul.a_zero_point, 5);
  EXPECT_EQ(parsed->inputs[0].dtype, DType::kU8);
  EXPECT_TRUE(int8.Validate().ok());
  EXPECT_TRUE(bf16.Validate().ok());
  EXPECT_TRUE(IsLowPrecisionMatMul(int8));
  EXPECT_FALSE(IsLowPrecisionMatMul(f32));
  EXPECT_NE(int8.Description().find("u8*i8->i32"), std::string::npos) << int8.Description();
  EXPECT_EQ(int8.MinBytes(), 8 + 12 + 6 * 4);
}

TEST(LowpWorkloadTest, ValidationRejectsInconsistentDtypes) {
  auto expect_invalid = [](const Workload& w, const std::string& fragment) {
    const absl::Status status = w.Validate();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << fragment;
    EXPECT_NE(status.message().find(fragment), std::string::npos) << status;
  };
  expect_invalid(MatMulOf(2, 2, 2, DType::kU8, DType::kI8, DType::kBF16), "produce i32 or f32");
  EXPECT_TRUE(MatMulOf(2, 2, 2, DType::kU8, DType::kI8, DType::kF32).Validate().ok());
  Workload i32_epilogue = MatMulOf(2, 2, 2, DType::kU8, DType::kI8, DType::kI32);
  i32_epilogue.epilogue.push_back({EwOp::kRelu, {Operand{}}});
  expect_invalid(i32_epilogue, "epilogues need an f32 output");
  // A run-time zero point: a third anchor input, one element of A's dtype, a_zero_point 0.
  Workload run_time = MatMulOf(2, 2, 2, DType::kU8, DType::kI8, DType::kF32);
  run_time.matmul.a_zero_point_input = true;
  expect_invalid(run_time, "takes 3 inputs");
  run_time.inputs.insert(run_time.inputs.begin() + 2, TensorDesc{DType::kI8, {1}});
  run_time.num_anchor_inputs = 3;
  expect_invalid(run_time, "one element of A's dtype");
  run_time.inputs[2].dtype = DType::kU8;
  EXPECT_TRUE(run_time.Validate().ok()) << run_time.Validate();
  const std::string text = run_time.CanonicalString();
  EXPECT_NE(text.find("a_zero_point=0 b_zero_point=0 a_zero_point_input=1"), std::string::npos)
      << text;
  absl::StatusOr<Workload> parsed = ParseWorkload(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->matmul.a_zero_point_input);
  EXPECT_EQ(parsed->Key(), run_time.Key());
  EXPECT_NE(run_time.Key(), MatMulOf(2, 2, 2, DType::kU8, DType::kI8, DType::kF32).Key());
  run_time.matmul.a_zero_point = 3;
  expect_invalid(run_time, "a_zero_point must be 0");
  Workload float_zero = MatMulOf(2, 2, 2, DType::kF32, DType::kF32, DType::kF32);
  float_zero.matmul.a_zero_point_input = true;
  float_zero.inputs.insert(float_zero.inputs.begin() + 2, TensorDesc{DType::kF32, {1}});
  float_zero.num_anchor_inputs = 3;
  expect_invalid(float_zero, "only allowed for integer");
  expect_invalid(MatMulOf(2, 2, 2, DType::kU8, DType::kI8, DType::kI32, 256, 0),
                 "a_zero_point 256");
  expect_invalid(MatMulOf(2, 2, 2, DType::kI8, DType::kI8, DType::kI32, 0, -129),
                 "b_zero_point -129");
  expect_invalid(MatMulOf(2, 2, 2, DType::kBF16, DType::kBF16, DType::kF32, 1, 0),
                 "only allowed for integer");
  expect_invalid(MatMulOf(2, 2, 2, DType::kBF16, DType::kBF16, DType::kI32), "f32 or bf16");
  expect_invalid(MatMulOf(2, 2, 2, DType::kBF16, DType::kF32, DType::kF32), "unsupported");
  Workload epilogue = MatMulOf(2, 2, 2, DType::kBF16, DType::kBF16, DType::kBF16);
  epilogue.epilogue.push_back({EwOp::kRelu, {Operand{}}});
  expect_invalid(epilogue, "need an f32 output");
  epilogue.output.dtype = DType::kF32;
  EXPECT_TRUE(epilogue.Validate().ok());
  Workload softmax;
  softmax.anchor = AnchorKind::kSoftmax;
  softmax.row = {2, 3};
  softmax.inputs = {{DType::kBF16, {2, 3}}};
  softmax.num_anchor_inputs = 1;
  softmax.output = {DType::kF32, {2, 3}};
  expect_invalid(softmax, "input 0 must be f32");
}

TEST(LowpWorkloadTest, RandomInputsHoldValuesOfTheirDtype) {
  const Workload w = MatMulOf(16, 64, 64, DType::kU8, DType::kI8, DType::kI32);
  const std::vector<std::vector<float>> inputs = RandomInputs(w, 7);
  float a_min = 1e9, a_max = -1e9, b_min = 1e9, b_max = -1e9;
  for (float value : inputs[0]) {
    EXPECT_EQ(value, std::floor(value));
    a_min = std::min(a_min, value);
    a_max = std::max(a_max, value);
  }
  for (float value : inputs[1]) {
    EXPECT_EQ(value, std::floor(value));
    b_min = std::min(b_min, value);
    b_max = std::max(b_max, value);
  }
  EXPECT_EQ(a_min, 0.0f);
  EXPECT_EQ(a_max, 255.0f);
  EXPECT_EQ(b_min, -128.0f);
  EXPECT_EQ(b_max, 127.0f);
  const Workload bf16 = MatMulOf(4, 4, 64, DType::kBF16, DType::kBF16, DType::kF32);
  const std::vector<std::vector<float>> bf16_inputs = RandomInputs(bf16, 7);
  for (float value : bf16_inputs[0]) {
    EXPECT_EQ(value, BF16ToFloat(FloatToBF16(value)));
    EXPECT_LE(std::fabs(value), 1.0f);
  }
  // The typed view holds the same values.
  const std::vector<TypedBuffer> typed = RandomTypedInputs(w, 7);
  ASSERT_EQ(typed.size(), 2u);
  EXPECT_EQ(typed[0].dtype(), DType::kU8);
  EXPECT_EQ(typed[0].ToFloats(), inputs[0]);
  EXPECT_EQ(typed[1].ToFloats(), inputs[1]);
}

TEST(LowpWorkloadTest, TypedBuffersStoreEachDtype) {
  TypedBuffer u8(DType::kU8, 3), i8(DType::kI8, 2), i32(DType::kI32, 2), bf16(DType::kBF16, 2);
  u8.Set(0, 255);
  u8.Set(1, 256);  // wraps to 0
  u8.Set(2, -1);   // wraps to 255
  EXPECT_EQ(u8.Get(0), 255);
  EXPECT_EQ(u8.Get(1), 0);
  EXPECT_EQ(u8.Get(2), 255);
  i8.Set(0, -128);
  i8.Set(1, 128);  // wraps to -128
  EXPECT_EQ(i8.Get(0), -128);
  EXPECT_EQ(i8.Get(1), -128);
  i32.Set(0, 2147483648.0);  // wraps to INT32_MIN
  i32.Set(1, -7);
  EXPECT_EQ(i32.Get(0), -2147483648.0);
  EXPECT_EQ(static_cast<const int32_t*>(i32.data())[1], -7);
  bf16.Set(0, 1.00390625);  // a tie: rounds to even (1.0)
  bf16.Set(1, -3.0);
  EXPECT_EQ(bf16.Get(0), 1.0);
  EXPECT_EQ(static_cast<const uint16_t*>(bf16.data())[1], 0xC040);
}

TEST(LowpWorkloadTest, IntegerReferenceIsExactWithZeroPointsAndWrapAround) {
  Workload w = MatMulOf(1, 2, 3, DType::kU8, DType::kI8, DType::kI32, 1, -1);
  // A = [[1, 2, 3]], B = [[1, 0], [-2, 5], [3, -1]]: out_j = sum_k (a - 1) (b + 1).
  std::vector<TypedBuffer> inputs = {TypedBuffer::FromValues(DType::kU8, {1, 2, 3}),
                                     TypedBuffer::FromValues(DType::kI8, {1, 0, -2, 5, 3, -1})};
  TypedBuffer out = ComputeTypedReference(w, inputs);
  ASSERT_EQ(out.dtype(), DType::kI32);
  EXPECT_EQ(out.Get(0), 0 * 2 + 1 * -1 + 2 * 4);
  EXPECT_EQ(out.Get(1), 0 * 1 + 1 * 6 + 2 * 0);

  // The same zero point read at run time (a third input), the result converted to f32 and
  // scaled by an epilogue: (out_j) * 0.5.
  Workload run_time = MatMulOf(1, 2, 3, DType::kU8, DType::kI8, DType::kF32, 0, -1);
  run_time.matmul.a_zero_point_input = true;
  run_time.inputs.insert(run_time.inputs.begin() + 2, TensorDesc{DType::kU8, {1}});
  run_time.num_anchor_inputs = 3;
  run_time.epilogue.push_back({EwOp::kMul, {Operand{}, Operand{Operand::Kind::kConst, 0, 0.5f}}});
  ASSERT_TRUE(run_time.Validate().ok()) << run_time.Validate();
  std::vector<TypedBuffer> with_zero = inputs;
  with_zero.push_back(TypedBuffer::FromValues(DType::kU8, {1}));
  TypedBuffer scaled = ComputeTypedReference(run_time, with_zero);
  ASSERT_EQ(scaled.dtype(), DType::kF32);
  EXPECT_EQ(scaled.Get(0), (0 * 2 + 1 * -1 + 2 * 4) * 0.5);
  EXPECT_EQ(scaled.Get(1), (0 * 1 + 1 * 6 + 2 * 0) * 0.5);
  with_zero[2] = TypedBuffer::FromValues(DType::kU8, {3});  // (a - 3) (b + 1)
  EXPECT_EQ(ComputeTypedReference(run_time, with_zero).Get(0), (-2 * 2 + -1 * -1 + 0 * 4) * 0.5);

  // 255 * (-128 - 127) * 40000 = -2601000000 wraps to 1693967296 in int32.
  const int64_t k = 40000;
  Workload big = MatMulOf(1, 1, k, DType::kU8, DType::kI8, DType::kI32, 0, 127);
  std::vector<TypedBuffer> extreme = {
      TypedBuffer::FromValues(DType::kU8, std::vector<float>(k, 255.0f)),
      TypedBuffer::FromValues(DType::kI8, std::vector<float>(k, -128.0f))};
  EXPECT_EQ(ComputeTypedReference(big, extreme).Get(0), 1693967296.0);
  double rtol = 1, atol = 1;
  DefaultTolerance(big, &rtol, &atol);
  EXPECT_EQ(rtol, 0.0);
  EXPECT_EQ(atol, 0.0);

  // Exact comparison: one unit off is a mismatch.
  TypedBuffer off = ComputeTypedReference(w, inputs);
  off.Set(1, off.Get(1) + 1);
  const absl::Status status = CompareTypedOutputs(ComputeTypedReference(w, inputs), off, 0, 0);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("index 1"), std::string::npos) << status;
}

TEST(LowpWorkloadTest, Bf16ReferenceAccumulatesExactlyAndRoundsTheOutput) {
  // 1 + 2^-9 is not a bf16 value, but sum of bf16 products: 1 * 1 + 2^-8 * 2^-1 = 1 + 2^-9.
  Workload w = MatMulOf(1, 1, 2, DType::kBF16, DType::kBF16, DType::kF32);
  std::vector<TypedBuffer> inputs = {TypedBuffer::FromValues(DType::kBF16, {1.0f, 0.00390625f}),
                                     TypedBuffer::FromValues(DType::kBF16, {1.0f, 0.5f})};
  EXPECT_EQ(ComputeTypedReference(w, inputs).Get(0), 1.001953125);
  w.output.dtype = DType::kBF16;  // rounds to nearest even: 1.0
  EXPECT_EQ(ComputeTypedReference(w, inputs).Get(0), 1.0);
  // The float API agrees with the typed one.
  const std::vector<float> floats =
      ComputeReference(w, {inputs[0].ToFloats(), inputs[1].ToFloats()});
  EXPECT_EQ(floats[0], 1.0f);
  double rtol = 0, atol = 0;
  DefaultTolerance(w, &rtol, &atol);
  EXPECT_GT(rtol, 1.0 / 256);  // allows one bf16 rounding step
}

}  // namespace
}  // namespace gtco::ir
