// Tests of the reference ONNX ops: rounding and Cast, element-wise math, reductions,
// normalization, linear algebra, convolutions and pooling, errors and the JSON form of nodes.
#include "runtime/reference_ops.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "tests/unit/runtime/reference_test_util.h"

namespace gtco::runtime::reference {
namespace {

using namespace reftest;  // NOLINT: the test helpers

const double kInf = std::numeric_limits<double>::infinity();

TEST(RoundToTest, Bf16RoundsToNearestEven) {
  EXPECT_EQ(RoundTo(ElemType::kBF16, 1 + std::ldexp(1, -8)), 1.0);  // tie: to even (down)
  EXPECT_EQ(RoundTo(ElemType::kBF16, 1 + 3 * std::ldexp(1, -8)), 1 + std::ldexp(1, -6));  // up
  EXPECT_EQ(RoundTo(ElemType::kBF16, 1 + std::ldexp(1, -8) + std::ldexp(1, -20)),
            1 + std::ldexp(1, -7));
  EXPECT_EQ(RoundTo(ElemType::kBF16, -3.0e38), -226 * std::ldexp(1, 120));
  EXPECT_EQ(RoundTo(ElemType::kBF16, 3.4e38), kInf);
  EXPECT_TRUE(std::isnan(RoundTo(ElemType::kBF16, NAN)));
}

TEST(RoundToTest, F16RoundsToNearestEvenWithOverflowAndSubnormals) {
  EXPECT_EQ(RoundTo(ElemType::kF16, 2049), 2048);
  EXPECT_EQ(RoundTo(ElemType::kF16, 2051), 2052);
  EXPECT_EQ(RoundTo(ElemType::kF16, 65519), 65504);
  EXPECT_EQ(RoundTo(ElemType::kF16, 65520), kInf);
  EXPECT_EQ(RoundTo(ElemType::kF16, std::ldexp(1, -25)), 0.0);  // tie between 0 and 2^-24
  EXPECT_EQ(RoundTo(ElemType::kF16, 3 * std::ldexp(1, -26)), std::ldexp(1, -24));
}

TEST(RoundToTest, F32AndIntegers) {
  EXPECT_EQ(RoundTo(ElemType::kF32, 0.1), static_cast<double>(0.1f));
  EXPECT_EQ(RoundTo(ElemType::kF32, 1e39), kInf);
  EXPECT_EQ(RoundTo(ElemType::kI32, 2.7), 2);
  EXPECT_EQ(RoundTo(ElemType::kI32, -2.7), -2);
  EXPECT_EQ(RoundTo(ElemType::kI32, NAN), 0);
  EXPECT_EQ(RoundTo(ElemType::kI32, 2147483648.0), -2147483648.0);  // wraps
  EXPECT_EQ(RoundTo(ElemType::kU8, 300), 44);
  EXPECT_EQ(RoundTo(ElemType::kU8, -1), 255);
  EXPECT_EQ(RoundTo(ElemType::kI8, 200), -56);
  EXPECT_EQ(RoundTo(ElemType::kBool, 0.5), 1);
  EXPECT_EQ(RoundTo(ElemType::kI64, -7.9), -7);
}

TEST(CastTest, RoundsToTheTargetType) {
  const Value x = F32({5}, {2.7, -2.7, -0.5, 1 + std::ldexp(1, -8), 1 + 3 * std::ldexp(1, -8)});
  const Value to_i32 = Run1(MakeNode("Cast", {{"to", IntAttr(6)}}), {&x});
  EXPECT_EQ(to_i32.dtype, ElemType::kI32);
  ExpectValue(to_i32, {5}, {2, -2, 0, 1, 1});
  const Value to_bf16 = Run1(MakeNode("Cast", {{"to", IntAttr(16)}}), {&x});
  EXPECT_EQ(to_bf16.dtype, ElemType::kBF16);
  ExpectValue(to_bf16, {5}, {2.703125, -2.703125, -0.5, 1, 1 + std::ldexp(1, -6)}, 0);
  const Value to_bool = Run1(MakeNode("Cast", {{"to", IntAttr(9)}}), {&x});
  ExpectValue(to_bool, {5}, {1, 1, 1, 1, 1});
  const Value like = Tensor(ElemType::kU8, {}, {0});
  const Value cast_like = Run1(MakeNode("CastLike"), {&x, &like});
  EXPECT_EQ(cast_like.dtype, ElemType::kU8);
  ExpectValue(cast_like, {5}, {2, 254, 0, 1, 1});
}

TEST(CastTest, DoubleIsUnsupported) {
  const Value x = F32({1}, {1});
  const auto result = RunOp(MakeNode("Cast", {{"to", IntAttr(11)}}), {&x}, 1);
  ASSERT_EQ(result.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(result.status().message().find("node_Cast"), std::string::npos);
}

TEST(ElementwiseTest, UnaryOps) {
  const Value x = F32({5}, {0.5, 1.5, 2.5, -0.5, -1.5});
  ExpectValue(Run1(MakeNode("Round"), {&x}), {5}, {0, 2, 2, -0.0, -2});
  ExpectValue(Run1(MakeNode("Sign"), {&x}), {5}, {1, 1, 1, -1, -1});
  ExpectValue(Run1(MakeNode("Relu"), {&x}), {5}, {0.5, 1.5, 2.5, 0, 0});
  ExpectValue(Run1(MakeNode("LeakyRelu"), {&x}), {5}, {0.5, 1.5, 2.5, -0.005, -0.015});
  ExpectValue(Run1(MakeNode("HardSigmoid"), {&x}), {5}, {0.6, 0.8, 1, 0.4, 0.2});
  const Value one = F32({1}, {1});
  ExpectValue(Run1(MakeNode("Gelu"), {&one}), {1}, {0.8413447460685429});
  ExpectValue(Run1(MakeNode("Gelu", {{"approximate", StringAttr("tanh")}}), {&one}), {1},
              {0.8411919906082768});
  ExpectValue(Run1(MakeNode("Sigmoid"), {&one}), {1}, {0.7310585786300049});
  ExpectValue(Run1(MakeNode("Softplus"), {&one}), {1}, {1.3132616875182228});
  const Value special = F32({3}, {NAN, kInf, -kInf});
  const Value is_nan = Run1(MakeNode("IsNaN"), {&special});
  EXPECT_EQ(is_nan.dtype, ElemType::kBool);
  ExpectValue(is_nan, {3}, {1, 0, 0});
  ExpectValue(Run1(MakeNode("IsInf", {{"detect_negative", IntAttr(0)}}), {&special}), {3},
              {0, 1, 0});
}

TEST(ElementwiseTest, ClipTakesAttributesBeforeOpset11AndInputsAfter) {
  const Value x = F32({4}, {-2, 0, 3, 9});
  ExpectValue(Run1(MakeNode("Clip", {{"min", FloatAttr(-1)}, {"max", FloatAttr(4)}}, 6), {&x}), {4},
              {-1, 0, 3, 4});
  const Value lo = F32({}, {0}), hi = F32({}, {5});
  ExpectValue(Run1(MakeNode("Clip"), {&x, &lo, &hi}), {4}, {0, 0, 3, 5});
  ExpectValue(Run1(MakeNode("Clip"), {&x, nullptr, &hi}), {4}, {-2, 0, 3, 5});
}

TEST(ElementwiseTest, BroadcastingArithmetic) {
  const Value a = F32({2, 1}, {1, 2}), b = F32({3}, {10, 20, 30});
  ExpectValue(Run1(MakeNode("Add"), {&a, &b}), {2, 3}, {11, 21, 31, 12, 22, 32});
  ExpectValue(Run1(MakeNode("Sub"), {&a, &b}), {2, 3}, {-9, -19, -29, -8, -18, -28});
  const Value ints = I64({4}, {7, -7, 7, -7}), divisors = I64({4}, {2, 2, -2, -2});
  ExpectValue(Run1(MakeNode("Div"), {&ints, &divisors}), {4}, {3, -3, -3, 3});
  ExpectValue(Run1(MakeNode("Mod"), {&ints, &divisors}), {4}, {1, 1, -1, -1});
  const Value fa = F32({2}, {-4, 7}), fb = F32({2}, {3, -3});
  ExpectValue(Run1(MakeNode("Mod", {{"fmod", IntAttr(1)}}), {&fa, &fb}), {2}, {-1, 1});
  ExpectValue(Run1(MakeNode("Pow"), {&fa, &fb}), {2}, {-64, 1.0 / 343}, 1e-9);
  const Value slope = F32({1}, {0.5});
  ExpectValue(Run1(MakeNode("PRelu"), {&fa, &slope}), {2}, {-2, 7});
  const Value c = F32({1}, {5});
  ExpectValue(Run1(MakeNode("Max"), {&a, &b, &c}), {2, 3}, {10, 20, 30, 10, 20, 30});
  ExpectValue(Run1(MakeNode("Min"), {&a, &c}), {2, 1}, {1, 2});
  ExpectValue(Run1(MakeNode("Sum"), {&a, &b, &c}), {2, 3}, {16, 26, 36, 17, 27, 37});
  ExpectValue(Run1(MakeNode("Mean"), {&a, &c}), {2, 1}, {3, 3.5});
}

TEST(ElementwiseTest, ComparisonsLogicAndWhere) {
  const Value a = F32({3}, {1, 2, 3}), b = F32({1}, {2});
  const Value less = Run1(MakeNode("Less"), {&a, &b});
  EXPECT_EQ(less.dtype, ElemType::kBool);
  ExpectValue(less, {3}, {1, 0, 0});
  ExpectValue(Run1(MakeNode("GreaterOrEqual"), {&a, &b}), {3}, {0, 1, 1});
  ExpectValue(Run1(MakeNode("Equal"), {&a, &b}), {3}, {0, 1, 0});
  const Value p = Tensor(ElemType::kBool, {2}, {1, 0}), q = Tensor(ElemType::kBool, {2, 1}, {1, 0});
  ExpectValue(Run1(MakeNode("Xor"), {&p, &q}), {2, 2}, {0, 1, 1, 0});
  ExpectValue(Run1(MakeNode("Where"), {&q, &a, &b}), {2, 3}, {1, 2, 3, 2, 2, 2});
}

TEST(ElementwiseTest, DropoutIsIdentityWithAllTrueMask) {
  const Value x = F32({2}, {1, 2});
  const std::vector<Value> out = RunAll(MakeNode("Dropout"), {&x}, 2);
  ExpectValue(out[0], {2}, {1, 2});
  EXPECT_EQ(out[1].dtype, ElemType::kBool);
  ExpectValue(out[1], {2}, {1, 1});
}

TEST(ReduceTest, MiddleAxesAttributeAndInputForms) {
  const Value x = Iota({2, 3, 2});
  ExpectValue(Run1(MakeNode("ReduceSum", {{"axes", IntsAttr({1})}}, 11), {&x}), {2, 1, 2},
              {6, 9, 24, 27});
  const Value axes = I64({1}, {1});
  ExpectValue(Run1(MakeNode("ReduceSum", {{"keepdims", IntAttr(0)}}, 13), {&x, &axes}), {2, 2},
              {6, 9, 24, 27});
  ExpectValue(Run1(MakeNode("ReduceMean", {{"keepdims", IntAttr(0)}}, 18), {&x, &axes}), {2, 2},
              {2, 3, 8, 9});
  ExpectValue(Run1(MakeNode("ReduceMax", {{"axes", IntsAttr({0, -1})}}, 17), {&x}), {1, 3, 1},
              {7, 9, 11});
  ExpectValue(Run1(MakeNode("ReduceMin", {{"keepdims", IntAttr(0)}}, 17), {&x}), {}, {0});
  ExpectValue(Run1(MakeNode("ReduceProd", {{"axes", IntsAttr({2})}}, 17), {&x}), {2, 3, 1},
              {0, 6, 20, 42, 72, 110});
  ExpectValue(Run1(MakeNode("ReduceL2", {{"axes", IntsAttr({1})}}, 17), {&x}), {2, 1, 2},
              {std::sqrt(20.0), std::sqrt(35.0), std::sqrt(200.0), std::sqrt(251.0)}, 1e-5);
  const Value pair = F32({2}, {1, 2});
  ExpectValue(Run1(MakeNode("ReduceLogSumExp", {}, 17), {&pair}), {1}, {2.3132616875182226}, 1e-6);
  // Empty axes with noop_with_empty_axes: the identity.
  const Value none = I64({0}, {});
  ExpectValue(Run1(MakeNode("ReduceSum", {{"noop_with_empty_axes", IntAttr(1)}}, 13), {&x, &none}),
              {2, 3, 2}, x.data);
}

TEST(ReduceTest, ArgMaxAndCumSum) {
  const Value x = F32({2, 3}, {1, 5, 5, 7, 2, 7});
  const Value first = Run1(MakeNode("ArgMax", {{"axis", IntAttr(1)}}), {&x});
  EXPECT_EQ(first.dtype, ElemType::kI64);
  ExpectValue(first, {2, 1}, {1, 0});
  ExpectValue(Run1(MakeNode("ArgMax", {{"axis", IntAttr(1)},
                                       {"select_last_index", IntAttr(1)},
                                       {"keepdims", IntAttr(0)}}),
                   {&x}),
              {2}, {2, 2});
  ExpectValue(Run1(MakeNode("ArgMin", {{"axis", IntAttr(0)}}), {&x}), {1, 3}, {0, 1, 0});
  const Value v = F32({4}, {1, 2, 3, 4}), axis = I64({}, {0});
  ExpectValue(Run1(MakeNode("CumSum"), {&v, &axis}), {4}, {1, 3, 6, 10});
  ExpectValue(
      Run1(MakeNode("CumSum", {{"exclusive", IntAttr(1)}, {"reverse", IntAttr(1)}}), {&v, &axis}),
      {4}, {9, 7, 4, 0});
}

TEST(NormalizationTest, SoftmaxAndLogSoftmax) {
  const Value x = F32({2, 3}, {1, 2, 3, 1, 1, 1});
  ExpectValue(
      Run1(MakeNode("Softmax"), {&x}), {2, 3},
      {0.09003057317038046, 0.24472847105479764, 0.6652409557748219, 1.0 / 3, 1.0 / 3, 1.0 / 3});
  ExpectValue(Run1(MakeNode("LogSoftmax"), {&x}), {2, 3},
              {-2.4076059644443806, -1.4076059644443806, -0.4076059644443806, -std::log(3.0),
               -std::log(3.0), -std::log(3.0)});
  // Opset 13 softmax along axis 0; opset 11 coerces to 2-D from axis 0: one row of 6.
  const Value column = F32({2, 1}, {0, std::log(3.0)});
  ExpectValue(Run1(MakeNode("Softmax", {{"axis", IntAttr(0)}}), {&column}), {2, 1}, {0.25, 0.75});
  const Value opset11 = Run1(MakeNode("Softmax", {{"axis", IntAttr(0)}}, 11), {&x});
  double total = 0;
  for (double v : opset11.data) total += v;
  EXPECT_NEAR(total, 1.0, 1e-6);
}

TEST(NormalizationTest, LayerNormalizationWithStatistics) {
  const Value x = F32({2, 3}, {1, 2, 3, 4, 6, 8});
  const Value scale = F32({3}, {1, 1, 1}), bias = F32({3}, {0, 0, 1});
  const std::vector<Value> out = RunAll(MakeNode("LayerNormalization"), {&x, &scale, &bias}, 3);
  ExpectValue(
      out[0], {2, 3},
      {-1.2247356859086223, 0, 2.2247356859086223, -1.2247425750014718, 0, 2.2247425750014718},
      1e-6);
  ExpectValue(out[1], {2, 1}, {2, 6});
  ExpectValue(out[2], {2, 1}, {1.2247356859086223, 0.6123712875007359}, 1e-6);
}

TEST(NormalizationTest, BatchInstanceGroupAndLpNormalization) {
  const Value x = F32({1, 2, 1, 2}, {1, 2, 3, 4});
  const Value scale = F32({2}, {1, 2}), bias = F32({2}, {0, 1});
  const Value mean = F32({2}, {1, 3}), var = F32({2}, {4, 1});
  ExpectValue(Run1(MakeNode("BatchNormalization", {{"epsilon", FloatAttr(0)}}),
                   {&x, &scale, &bias, &mean, &var}),
              {1, 2, 1, 2}, {0, 0.5, 1, 3});
  // Instance: channel 0 = {1, 2} (mean 1.5, var 0.25), channel 1 = {3, 4}.
  ExpectValue(
      Run1(MakeNode("InstanceNormalization", {{"epsilon", FloatAttr(0)}}), {&x, &scale, &bias}),
      {1, 2, 1, 2}, {-1, 1, -1, 3});
  // Groups of 2 channels: {0, 2} (mean 1, var 1) and {4, 4} (var 0).
  const Value g = F32({1, 4, 1, 1}, {0, 2, 4, 4});
  const double s = 1 / std::sqrt(1 + 1e-5);
  const Value per_group = F32({2}, {2, 3}), group_bias = F32({2}, {1, 1});
  ExpectValue(Run1(MakeNode("GroupNormalization",
                            {{"num_groups", IntAttr(2)}, {"epsilon", FloatAttr(1e-5)}}, 18),
                   {&g, &per_group, &group_bias}),
              {1, 4, 1, 1}, {1 - 2 * s, 1 + 2 * s, 1, 1}, 1e-5);
  const Value per_channel = F32({4}, {1, 2, 3, 4}), channel_bias = F32({4}, {0, 0, 0, 1});
  ExpectValue(Run1(MakeNode("GroupNormalization",
                            {{"num_groups", IntAttr(2)}, {"epsilon", FloatAttr(1e-5)}}, 21),
                   {&g, &per_channel, &channel_bias}),
              {1, 4, 1, 1}, {-s, 2 * s, 0, 1}, 1e-5);
  const Value v = F32({1, 2}, {3, 4});
  ExpectValue(Run1(MakeNode("LpNormalization"), {&v}), {1, 2}, {0.6, 0.8});
  ExpectValue(Run1(MakeNode("LpNormalization", {{"p", IntAttr(1)}}), {&v}), {1, 2},
              {3.0 / 7, 4.0 / 7});
}

TEST(LinalgTest, MatMulBroadcastsAndPromotesVectors) {
  const Value a = Iota({2, 2, 3}), b = Iota({3, 2});
  ExpectValue(Run1(MakeNode("MatMul"), {&a, &b}), {2, 2, 2}, {10, 13, 28, 40, 46, 67, 64, 94});
  const Value v = F32({3}, {1, 1, 1});
  ExpectValue(Run1(MakeNode("MatMul"), {&v, &b}), {2}, {6, 9});
  const Value m = Iota({2, 3});
  ExpectValue(Run1(MakeNode("MatMul"), {&m, &v}), {2}, {3, 12});
}

TEST(LinalgTest, GemmTransposesScalesAndBroadcastsC) {
  const Value a = F32({3, 2}, {1, 4, 2, 5, 3, 6});  // A^T = [[1, 2, 3], [4, 5, 6]]
  const Value b = F32({2, 3}, {1, 0, 1, 0, 1, 1});  // B^T = [[1, 0], [0, 1], [1, 1]]
  const Value c = F32({2}, {100, 200});
  ExpectValue(Run1(MakeNode("Gemm", {{"transA", IntAttr(1)},
                                     {"transB", IntAttr(1)},
                                     {"alpha", FloatAttr(2)},
                                     {"beta", FloatAttr(0.5)}}),
                   {&a, &b, &c}),
              {2, 2}, {58, 110, 70, 122});
}

TEST(LinalgTest, MatMulIntegerWithZeroPoints) {
  const Value a = Tensor(ElemType::kU8, {2, 2}, {3, 4, 5, 6});
  const Value b = Tensor(ElemType::kU8, {2, 2}, {1, 2, 3, 4});
  const Value a_zero = Tensor(ElemType::kU8, {}, {1}), b_zero = Tensor(ElemType::kU8, {2}, {1, 2});
  const Value out = Run1(MakeNode("MatMulInteger"), {&a, &b, &a_zero, &b_zero});
  EXPECT_EQ(out.dtype, ElemType::kI32);
  ExpectValue(out, {2, 2}, {6, 6, 10, 10});
}

TEST(LinalgTest, QuantizeDequantize) {
  const Value x = F32({6}, {0.5, 1.5, 2.5, -0.5, 300, -300});
  const Value scale = F32({}, {1});
  const Value u8_zero = Tensor(ElemType::kU8, {}, {0}), i8_zero = Tensor(ElemType::kI8, {}, {0});
  ExpectValue(Run1(MakeNode("QuantizeLinear"), {&x, &scale, &u8_zero}), {6}, {0, 2, 2, 0, 255, 0});
  const Value i8 = Run1(MakeNode("QuantizeLinear"), {&x, &scale, &i8_zero});
  EXPECT_EQ(i8.dtype, ElemType::kI8);
  ExpectValue(i8, {6}, {0, 2, 2, 0, 127, -128});
  const Value q = Tensor(ElemType::kI8, {2, 2}, {1, 2, 3, 4});
  const Value scales = F32({2}, {0.5, 2}), zeros = Tensor(ElemType::kI8, {2}, {1, 0});
  ExpectValue(Run1(MakeNode("DequantizeLinear", {{"axis", IntAttr(0)}}), {&q, &scales, &zeros}),
              {2, 2}, {0, 0.5, 6, 8});
  const Value d = F32({6}, {0, 2, -3, -2.5, 1.34, 0.5});
  const std::vector<Value> dq = RunAll(MakeNode("DynamicQuantizeLinear"), {&d}, 3);
  ExpectValue(dq[0], {6}, {153, 255, 0, 26, 221, 179});
  ExpectValue(dq[1], {}, {static_cast<double>(5.0f / 255.0f)}, 0);
  ExpectValue(dq[2], {}, {153});
}

TEST(LinalgTest, Einsum) {
  const Value a = Iota({2, 3}), b = Iota({3, 2});
  ExpectValue(Run1(MakeNode("Einsum", {{"equation", StringAttr("ij,jk->ik")}}), {&a, &b}), {2, 2},
              {10, 13, 28, 40});
  ExpectValue(Run1(MakeNode("Einsum", {{"equation", StringAttr("ij, jk")}}), {&a, &b}), {2, 2},
              {10, 13, 28, 40});  // implicit output: ik
  ExpectValue(Run1(MakeNode("Einsum", {{"equation", StringAttr("ij->ji")}}), {&a}), {3, 2},
              {0, 3, 1, 4, 2, 5});
  ExpectValue(Run1(MakeNode("Einsum", {{"equation", StringAttr("ij->")}}), {&a}), {}, {15});
  const Value square = Iota({3, 3});
  ExpectValue(Run1(MakeNode("Einsum", {{"equation", StringAttr("ii->i")}}), {&square}), {3},
              {0, 4, 8});
  ExpectValue(Run1(MakeNode("Einsum", {{"equation", StringAttr("ii")}}), {&square}), {}, {12});
  const Value u = F32({2}, {1, 2}), v = F32({3}, {1, 10, 100});
  ExpectValue(Run1(MakeNode("Einsum", {{"equation", StringAttr("i,j->ij")}}), {&u, &v}), {2, 3},
              {1, 10, 100, 2, 20, 200});
  const Value batch = Iota({2, 1, 2}), mats = Iota({2, 2});
  ExpectValue(
      Run1(MakeNode("Einsum", {{"equation", StringAttr("...ij,jk->...ik")}}), {&batch, &mats}),
      {2, 1, 2}, {2, 3, 6, 11});
}

TEST(ConvTest, PadsStridesDilationsAndGroups) {
  const Value x = Iota({1, 1, 5, 5}), ones = F32({1, 1, 3, 3}, std::vector<double>(9, 1));
  ExpectValue(Run1(MakeNode("Conv", {{"pads", IntsAttr({1, 1, 1, 1})}}), {&x, &ones}), {1, 1, 5, 5},
              {12,  21, 27, 33,  24,  33,  54,  63, 72,  51,  63,  99, 108,
               117, 81, 93, 144, 153, 162, 111, 72, 111, 117, 123, 84});
  ExpectValue(
      Run1(MakeNode("Conv", {{"pads", IntsAttr({1, 1, 1, 1})}, {"strides", IntsAttr({2, 2})}}),
           {&x, &ones}),
      {1, 1, 3, 3}, {12, 27, 24, 63, 108, 81, 72, 117, 84});
  // Two groups of one channel: out0 = 2 * x0 + 1, out1 = 3 * x1 - 1.
  const Value two = F32({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Value w = F32({2, 1, 1, 1}, {2, 3}), b = F32({2}, {1, -1});
  ExpectValue(Run1(MakeNode("Conv", {{"group", IntAttr(2)}}), {&two, &w, &b}), {1, 2, 2, 2},
              {3, 5, 7, 9, 14, 17, 20, 23});
  // 1-D with dilation 2: out[i] = x[i] + 10 * x[i + 2].
  const Value line = F32({1, 1, 5}, {1, 2, 3, 4, 5}), taps = F32({1, 1, 2}, {1, 10});
  ExpectValue(Run1(MakeNode("Conv", {{"dilations", IntsAttr({2})}}), {&line, &taps}), {1, 1, 3},
              {31, 42, 53});
  const Value pair = F32({1, 1, 4}, {1, 2, 3, 4}), box = F32({1, 1, 2}, {1, 1});
  ExpectValue(Run1(MakeNode("Conv", {{"auto_pad", StringAttr("SAME_UPPER")}}), {&pair, &box}),
              {1, 1, 4}, {3, 5, 7, 4});
  ExpectValue(Run1(MakeNode("Conv", {{"auto_pad", StringAttr("SAME_LOWER")}}), {&pair, &box}),
              {1, 1, 4}, {1, 3, 5, 7});
}

TEST(ConvTest, ConvTranspose) {
  const Value x = Iota({1, 1, 3, 3}), w = F32({1, 2, 3, 3}, std::vector<double>(18, 1));
  const std::vector<double> plane = {0,  1,  3, 3,  2,  3,  8,  15, 12, 7,  9,  21, 36,
                                     27, 15, 9, 20, 33, 24, 13, 6,  13, 21, 15, 8};
  std::vector<double> both = plane;
  both.insert(both.end(), plane.begin(), plane.end());
  ExpectValue(Run1(MakeNode("ConvTranspose"), {&x, &w}), {1, 2, 5, 5}, both);
  // 1-D, stride 2: [1, 2] spreads over [1, 1, 3, 2, 2].
  const Value line = F32({1, 1, 2}, {1, 2}), taps = F32({1, 1, 3}, {1, 1, 1});
  const Attr stride = IntsAttr({2});
  ExpectValue(Run1(MakeNode("ConvTranspose", {{"strides", stride}}), {&line, &taps}), {1, 1, 5},
              {1, 1, 3, 2, 2});
  ExpectValue(Run1(MakeNode("ConvTranspose", {{"strides", stride}, {"pads", IntsAttr({1, 1})}}),
                   {&line, &taps}),
              {1, 1, 3}, {1, 3, 2});
  ExpectValue(
      Run1(MakeNode("ConvTranspose", {{"strides", stride}, {"output_padding", IntsAttr({1})}}),
           {&line, &taps}),
      {1, 1, 6}, {1, 1, 3, 2, 2, 0});
  ExpectValue(
      Run1(MakeNode("ConvTranspose", {{"strides", stride}, {"output_shape", IntsAttr({6})}}),
           {&line, &taps}),
      {1, 1, 6}, {1, 1, 3, 2, 2, 0});
  // Two groups: W is (C, M / group, k).
  const Value channels = F32({1, 2, 1}, {1, 2}), grouped = F32({2, 1, 2}, {1, 2, 3, 4});
  ExpectValue(Run1(MakeNode("ConvTranspose", {{"group", IntAttr(2)}}), {&channels, &grouped}),
              {1, 2, 2}, {1, 2, 6, 8});
}

TEST(PoolTest, MaxAndAveragePools) {
  const Value x = Iota({1, 1, 4, 4}, 1);
  const Attr kernel3 = IntsAttr({3, 3}), stride2 = IntsAttr({2, 2});
  ExpectValue(
      Run1(MakeNode("MaxPool",
                    {{"kernel_shape", kernel3}, {"strides", stride2}, {"ceil_mode", IntAttr(1)}}),
           {&x}),
      {1, 1, 2, 2}, {11, 12, 15, 16});
  const std::vector<Value> with_indices =
      RunAll(MakeNode("MaxPool", {{"kernel_shape", kernel3}, {"strides", stride2}}), {&x}, 2);
  ExpectValue(with_indices[0], {1, 1, 1, 1}, {11});
  ExpectValue(with_indices[1], {1, 1, 1, 1}, {10});
  const Value small = F32({1, 1, 2, 2}, {1, 2, 3, 4});
  const Attr kernel2 = IntsAttr({2, 2}), pads = IntsAttr({1, 1, 1, 1});
  ExpectValue(Run1(MakeNode("AveragePool", {{"kernel_shape", kernel2}, {"pads", pads}}), {&small}),
              {1, 1, 3, 3}, {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4});
  ExpectValue(
      Run1(MakeNode("AveragePool",
                    {{"kernel_shape", kernel2}, {"pads", pads}, {"count_include_pad", IntAttr(1)}}),
           {&small}),
      {1, 1, 3, 3}, {0.25, 0.75, 0.5, 1, 2.5, 1.5, 0.75, 1.75, 1});
  // Ceil mode: the last window hangs past the input and averages what it covers.
  const Value row = F32({1, 1, 1, 3}, {1, 2, 3});
  ExpectValue(Run1(MakeNode("AveragePool", {{"kernel_shape", IntsAttr({1, 2})},
                                            {"strides", IntsAttr({1, 2})},
                                            {"ceil_mode", IntAttr(1)}}),
                   {&row}),
              {1, 1, 1, 2}, {1.5, 3});
  ExpectValue(Run1(MakeNode("GlobalAveragePool"), {&x}), {1, 1, 1, 1}, {8.5});
  ExpectValue(Run1(MakeNode("GlobalMaxPool"), {&x}), {1, 1, 1, 1}, {16});
}

TEST(ErrorTest, UnsupportedOpsAndAttributesNameTheNode) {
  const Value x = F32({1}, {1});
  Node nms = MakeNode("NonMaxSuppression");
  nms.name = "nms_1";
  absl::StatusOr<std::vector<Value>> result = RunOp(nms, {&x}, 1);
  ASSERT_EQ(result.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(result.status().message(),
            "reference: unsupported ONNX op 'NonMaxSuppression' at node 'nms_1'");
  EXPECT_FALSE(Supports("", "NonMaxSuppression"));
  EXPECT_TRUE(Supports("", "Conv"));
  EXPECT_TRUE(Supports("ai.onnx", "Conv"));
  EXPECT_FALSE(Supports("com.microsoft", "Conv"));
  Node foreign = MakeNode("FusedConv");
  foreign.domain = "com.microsoft";
  result = RunOp(foreign, {&x}, 1);
  ASSERT_EQ(result.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(result.status().message().find("com.microsoft.FusedConv"), std::string::npos);
  const Value image = Iota({1, 1, 2, 2}), scales = F32({4}, {1, 1, 2, 2});
  result = RunOp(MakeNode("Resize", {{"mode", StringAttr("area")}}), {&image, nullptr, &scales}, 1);
  ASSERT_EQ(result.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(result.status().message().find("mode='area'"), std::string::npos);
  EXPECT_NE(result.status().message().find("node_Resize"), std::string::npos);
}

TEST(ErrorTest, BadInputsAreInvalidArgumentsNamingTheNode) {
  const Value data = Iota({3}), index = I64({1}, {3});
  absl::StatusOr<std::vector<Value>> result = RunOp(MakeNode("Gather"), {&data, &index}, 1);
  ASSERT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("node_Gather"), std::string::npos);
  EXPECT_NE(result.status().message().find("out of range"), std::string::npos);
  const Value a = Iota({2, 3}), b = Iota({4});
  result = RunOp(MakeNode("Add"), {&a, &b}, 1);
  ASSERT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("node_Add"), std::string::npos);
  result = RunOp(MakeNode("MatMul"), {&a, &a}, 1);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  const Value bad_size = F32({2, 2}, {1, 2, 3});
  result = RunOp(MakeNode("Relu"), {&bad_size}, 1);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  result = RunOp(MakeNode("Relu"), {nullptr}, 1);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  const Value shape = I64({2}, {4, 4});
  result = RunOp(MakeNode("Reshape"), {&a, &shape}, 1);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  const Value tall = I64({3, 1}, {0, 0, 0});
  result = RunOp(MakeNode("GatherElements", {{"axis", IntAttr(1)}}), {&a, &tall}, 1);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  const Value image = Iota({1, 3, 2, 2}), filters = Iota({2, 2, 1, 1});
  result = RunOp(MakeNode("Conv"), {&image, &filters}, 1);
  ASSERT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("node_Conv"), std::string::npos);
}

TEST(JsonTest, NodeRoundTripsWithTensorsAndNonFiniteFloats) {
  Node node = MakeNode("Custom", {}, 13);
  node.domain = "ai.onnx";
  node.name = "n \"quoted\"";
  node.attrs["i"] = IntAttr(-(int64_t{1} << 62));
  node.attrs["f"] = FloatAttr(NAN);
  node.attrs["third"] = FloatAttr(1.0 / 3);
  node.attrs["s"] = StringAttr("half_pixel");
  node.attrs["ints"] = IntsAttr({1, -2, 3});
  node.attrs["floats"] = FloatsAttr({0.1, kInf, -kInf, -0.0});
  node.attrs["value"] = TensorAttr(Tensor(ElemType::kBF16, {2, 1}, {1.5, NAN}));
  const std::string json = NodeToJson(node);
  const absl::StatusOr<Node> back = NodeFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->op_type, "Custom");
  EXPECT_EQ(back->domain, "ai.onnx");
  EXPECT_EQ(back->name, node.name);
  EXPECT_EQ(back->opset, 13);
  ASSERT_EQ(back->attrs.size(), node.attrs.size());
  EXPECT_EQ(back->attrs.at("i").i, -(int64_t{1} << 62));
  EXPECT_EQ(back->attrs.at("f").kind, Attr::Kind::kFloat);
  EXPECT_TRUE(std::isnan(back->attrs.at("f").f));
  EXPECT_EQ(back->attrs.at("third").f, 1.0 / 3);
  EXPECT_EQ(back->attrs.at("s").s, "half_pixel");
  EXPECT_EQ(back->attrs.at("ints").ints, std::vector<int64_t>({1, -2, 3}));
  const std::vector<double>& floats = back->attrs.at("floats").floats;
  ASSERT_EQ(floats.size(), 4u);
  EXPECT_EQ(floats[0], 0.1);
  EXPECT_EQ(floats[1], kInf);
  EXPECT_EQ(floats[2], -kInf);
  EXPECT_TRUE(std::signbit(floats[3]));
  const Attr& value = back->attrs.at("value");
  ASSERT_EQ(value.kind, Attr::Kind::kTensor);
  ASSERT_EQ(value.tensor.size(), 1u);
  EXPECT_EQ(value.tensor[0].dtype, ElemType::kBF16);
  EXPECT_EQ(value.tensor[0].shape, std::vector<int64_t>({2, 1}));
  EXPECT_EQ(value.tensor[0].data[0], 1.5);
  EXPECT_TRUE(std::isnan(value.tensor[0].data[1]));
  EXPECT_EQ(NodeToJson(*back), json);
}

TEST(JsonTest, MalformedJsonIsInvalidArgument) {
  for (const char* text :
       {"not json", "[]", "{\"name\": \"n\"}", "{\"op_type\": 3}",
        "{\"op_type\": \"Relu\", \"attrs\": {\"a\": {\"kind\": \"int\", \"i\": 1.5}}}",
        "{\"op_type\": \"Relu\", \"attrs\": {\"a\": {\"kind\": \"blob\"}}}",
        "{\"op_type\": \"Relu\", \"attrs\": {\"a\": {\"kind\": \"tensor\", \"tensor\": "
        "{\"dtype\": \"f32\", \"shape\": [2], \"data\": [1]}}}}",
        "{\"op_type\": \"Relu\", \"attrs\": {\"a\": {\"kind\": \"float\", \"f\": \"x\"}}}"}) {
    const absl::StatusOr<Node> node = NodeFromJson(text);
    EXPECT_EQ(node.status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
}

TEST(SupportTest, ListsTheImplementedOps) {
  const std::vector<std::string> ops = SupportedOps();
  for (const char* op : {"Resize", "Einsum", "ConvTranspose", "GatherND", "ScatterND", "TopK",
                         "LayerNormalization", "GroupNormalization", "DynamicQuantizeLinear"}) {
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
  }
}

}  // namespace
}  // namespace gtco::runtime::reference
