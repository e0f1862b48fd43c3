// Tests of the runtime's fallback steps (runtime/reference_step.h): an f32 Resize or Upsample
// runs the reference's separable plan in float, on the runtime's threads, and gives the
// reference library's values; forms outside that plan (cubic) take the generic step.
// GatherElements, constant-mode Pad, ScatterND, And/Or/Xor, integer arithmetic and Cast read
// the artifact's buffers directly and give the library's values too.
#include "runtime/reference_step.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "gtest/gtest.h"
#include "runtime/parallel.h"
#include "tests/unit/runtime/reference_test_util.h"

namespace gtco::runtime {
namespace {

using reference::Node;
using reference::Value;
using namespace reference::reftest;  // NOLINT: the test helpers

/// A random f32 tensor of `shape` (values rounded to float).
Value RandomF32(const std::vector<int64_t>& shape, uint64_t seed) {
  Value value;
  value.dtype = ElemType::kF32;
  value.shape = shape;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  for (int64_t i = 0; i < value.NumElements(); ++i) value.data.push_back(uniform(rng));
  return value;
}

/// The bytes of `value` as the artifact holds them.
std::vector<char> Bytes(const Value& value) {
  std::vector<char> bytes(value.NumElements() * ElemSize(value.dtype));
  for (int64_t i = 0; i < value.NumElements(); ++i) {
    StoreElement(bytes.data(), value.dtype, i, value.data[i]);
  }
  return bytes;
}

TensorSpec SpecOf(const Value& value, const std::string& name) {
  TensorSpec spec;
  spec.name = name;
  spec.dtype = value.dtype;
  spec.shape = value.shape;
  return spec;
}

/// Runs `node` as a fallback step on `inputs` (null: omitted) and as the reference library
/// runs it; expects the same shape and values within `tolerance` relative to the largest
/// magnitude (exactly, NaN and infinities included, where `tolerance` is 0).
void ExpectStepMatchesTheReference(const Node& node, const std::vector<const Value*>& inputs,
                                   double tolerance) {
  SCOPED_TRACE(reference::NodeToJson(node));
  const Value expected = Run1(node, inputs);
  std::vector<TensorSpec> specs;
  std::vector<std::vector<char>> bytes;
  specs.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] == nullptr) continue;
    specs.push_back(SpecOf(*inputs[i], "in" + std::to_string(i)));
    bytes.push_back(Bytes(*inputs[i]));
  }
  std::vector<const TensorSpec*> input_specs;
  std::vector<const char*> input_data;
  for (size_t i = 0, next = 0; i < inputs.size(); ++i) {
    input_specs.push_back(inputs[i] == nullptr ? nullptr : &specs[next]);
    input_data.push_back(inputs[i] == nullptr ? nullptr : bytes[next].data());
    next += inputs[i] != nullptr;
  }
  const TensorSpec out_spec = SpecOf(expected, "out");
  std::vector<char> out(out_spec.Bytes());
  absl::Status status = RunReferenceStep(node, input_specs, input_data, {&out_spec}, {out.data()});
  ASSERT_TRUE(status.ok()) << status;
  double scale = 0;
  for (double v : expected.data) {
    if (std::isfinite(v)) scale = std::max(scale, std::fabs(v));
  }
  for (int64_t i = 0; i < expected.NumElements(); ++i) {
    const double got = LoadElement(out.data(), out_spec.dtype, i);
    const double want = expected.data[i];
    if (!std::isfinite(want) || tolerance == 0) {
      EXPECT_TRUE(got == want || (std::isnan(got) && std::isnan(want)))
          << "at " << i << ": " << got << " vs " << want;
    } else {
      ASSERT_LE(std::fabs(got - want), tolerance * scale) << "at " << i;
    }
  }
}

Node ResizeNode(const std::string& mode, const std::string& coordinates,
                const std::string& nearest = "round_prefer_floor") {
  return MakeNode("Resize", {{"mode", StringAttr(mode)},
                             {"coordinate_transformation_mode", StringAttr(coordinates)},
                             {"nearest_mode", StringAttr(nearest)}});
}

TEST(ReferenceStepTest, F32ResizeMatchesTheReference) {
  SetParallelThreads(2);
  // A segmentation head's upsampling (large enough for the threaded passes), by scales and by
  // sizes, in every mode and coordinate mapping the separable plan covers.
  const Value x = RandomF32({1, 5, 28, 28}, 7);
  const Value scales = F32({4}, {1, 1, 8, 8});
  const Value sizes = I64({4}, {1, 5, 224, 200});
  const Value down = I64({4}, {1, 5, 9, 14});
  for (const auto& [mode, coordinates] :
       std::vector<std::pair<std::string, std::string>>{{"linear", "half_pixel"},
                                                        {"linear", "align_corners"},
                                                        {"linear", "pytorch_half_pixel"},
                                                        {"linear", "asymmetric"},
                                                        {"nearest", "asymmetric"},
                                                        {"nearest", "half_pixel"},
                                                        {"nearest", "tf_half_pixel_for_nn"}}) {
    const Node node =
        ResizeNode(mode, coordinates, mode == "nearest" ? "floor" : "round_prefer_floor");
    ExpectStepMatchesTheReference(node, {&x, nullptr, &scales}, 1e-6);
    ExpectStepMatchesTheReference(node, {&x, nullptr, nullptr, &sizes}, 1e-6);
    ExpectStepMatchesTheReference(node, {&x, nullptr, nullptr, &down}, 1e-6);
  }
  // Nearest copies values: exact.
  ExpectStepMatchesTheReference(ResizeNode("nearest", "asymmetric", "floor"),
                                {&x, nullptr, &scales}, 0);
  // The deprecated Upsample (scales as an input since opset 9).
  const Value upsample_scales = F32({4}, {1, 1, 2, 3});
  ExpectStepMatchesTheReference(MakeNode("Upsample", {{"mode", StringAttr("linear")}}, 9),
                                {&x, &upsample_scales}, 1e-6);
}

TEST(ReferenceStepTest, F32ResizeReadsNoTapOfWeightZero) {
  // Infinities and NaN where an output's second tap has weight 0: the reference has them only
  // where a tap of nonzero weight reads them.
  Value x = RandomF32({1, 2, 4, 4}, 3);
  x.data[0] = std::numeric_limits<double>::infinity();
  x.data[5] = std::nan("");
  const Value scales = F32({4}, {1, 1, 2, 2});
  ExpectStepMatchesTheReference(ResizeNode("linear", "asymmetric"), {&x, nullptr, &scales}, 1e-6);
  ExpectStepMatchesTheReference(ResizeNode("nearest", "asymmetric", "floor"),
                                {&x, nullptr, &scales}, 0);
}

TEST(ReferenceStepTest, ResizeOutsideTheSeparablePlanTakesTheGenericStep) {
  const Value x = RandomF32({1, 2, 6, 6}, 5);
  const Value scales = F32({4}, {1, 1, 2, 2});
  // Cubic has four taps per axis: the reference library computes it, exactly as RunOp does.
  ExpectStepMatchesTheReference(ResizeNode("cubic", "half_pixel"), {&x, nullptr, &scales}, 0);
  // A wrong scales input fails naming the step.
  const Value bad = F32({3}, {1, 2, 2});
  const TensorSpec x_spec = SpecOf(x, "x"), bad_spec = SpecOf(bad, "scales");
  TensorSpec out_spec = SpecOf(x, "out");
  const std::vector<char> x_bytes = Bytes(x), bad_bytes = Bytes(bad);
  std::vector<char> out(out_spec.Bytes());
  absl::Status status =
      RunReferenceStep(ResizeNode("linear", "half_pixel"), {&x_spec, nullptr, &bad_spec},
                       {x_bytes.data(), nullptr, bad_bytes.data()}, {&out_spec}, {out.data()});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("fallback step 'node_Resize'"), std::string::npos) << status;
}

TEST(ReferenceStepTest, GatherElementsMatchesTheReference) {
  SetParallelThreads(2);
  // DeBERTa's relative-position gathers: [1, heads, queries, 2 * span] scores gathered along the
  // last axis; and along the other axes, indices smaller than the data off the axis, negative
  // ones, int32 ones.
  const Value scores = RandomF32({1, 3, 8, 16}, 11);
  std::mt19937_64 rng(5);
  const auto indices = [&](const std::vector<int64_t>& shape, int64_t extent, ElemType type) {
    Value value;
    value.dtype = type;
    value.shape = shape;
    std::uniform_int_distribution<int64_t> pick(-extent, extent - 1);
    for (int64_t i = 0; i < value.NumElements(); ++i) {
      value.data.push_back(static_cast<double>(pick(rng)));
    }
    return value;
  };
  const Node last = MakeNode("GatherElements", {{"axis", IntAttr(-1)}});
  const Value along_last = indices({1, 3, 8, 8}, 16, ElemType::kI64);
  ExpectStepMatchesTheReference(last, {&scores, &along_last}, 0);
  const Value rows = indices({1, 2, 5, 16}, 8, ElemType::kI32);
  ExpectStepMatchesTheReference(MakeNode("GatherElements", {{"axis", IntAttr(2)}}),
                                {&scores, &rows}, 0);
  const Value heads = indices({1, 4, 8, 3}, 3, ElemType::kI64);
  ExpectStepMatchesTheReference(MakeNode("GatherElements", {{"axis", IntAttr(1)}}),
                                {&scores, &heads}, 0);
  // Large enough to run in chunks over the runtime's threads (DeBERTa-base's 12 heads).
  const Value many_scores = RandomF32({1, 12, 64, 96}, 14);
  const Value many = indices({1, 12, 64, 48}, 96, ElemType::kI64);
  ExpectStepMatchesTheReference(last, {&many_scores, &many}, 0);
  // An index out of range fails naming the step and the index.
  Value bad = along_last;
  bad.data[7] = 16;
  const TensorSpec data_spec = SpecOf(scores, "scores"), index_spec = SpecOf(bad, "index");
  const TensorSpec out_spec = SpecOf(RandomF32({1, 3, 8, 8}, 1), "out");
  const std::vector<char> data_bytes = Bytes(scores), index_bytes = Bytes(bad);
  std::vector<char> out(out_spec.Bytes());
  absl::Status status =
      RunReferenceStep(last, {&data_spec, &index_spec}, {data_bytes.data(), index_bytes.data()},
                       {&out_spec}, {out.data()});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("fallback step 'node_GatherElements'"), std::string::npos)
      << status;
  EXPECT_NE(status.message().find("index 16"), std::string::npos) << status;
}

TEST(ReferenceStepTest, PadMatchesTheReference) {
  // MobileBERT's trigram embedding: [1, seq, hidden] shifted by one row either way.
  const Value embeddings = RandomF32({1, 6, 5}, 3);
  const Node pad = MakeNode("Pad", {});
  const Value after = I64({6}, {0, 0, 0, 0, 1, 0}), before = I64({6}, {0, 1, 0, 0, 0, 0});
  ExpectStepMatchesTheReference(pad, {&embeddings, &after}, 0);
  ExpectStepMatchesTheReference(pad, {&embeddings, &before}, 0);
  // Every axis padded, a constant other than zero, the axes input (negative axes too).
  const Value image = RandomF32({2, 3, 4, 5}, 4);
  const Value all = I64({8}, {1, 0, 2, 1, 0, 3, 1, 2});
  const Value minus_one = F32({}, {-1.5});
  ExpectStepMatchesTheReference(pad, {&image, &all, &minus_one}, 0);
  const Value two_axes = I64({4}, {1, 2, 3, 0}), axes = I64({2}, {-1, 1});
  ExpectStepMatchesTheReference(pad, {&image, &two_axes, &minus_one, &axes}, 0);
  // int64 data; a 1-D tensor.
  Value ids = I64({7}, {3, -1, 4, 1, -5, 9, 2});
  const Value ends = I64({2}, {2, 3});
  ExpectStepMatchesTheReference(pad, {&ids, &ends}, 0);
  // Forms the direct copy does not take (negative pads crop, reflect mode) give the same values
  // through the generic step.
  const Value crop = I64({8}, {0, 0, -1, 1, 0, 0, 1, -2});
  ExpectStepMatchesTheReference(pad, {&image, &crop}, 0);
  ExpectStepMatchesTheReference(MakeNode("Pad", {{"mode", StringAttr("reflect")}}), {&image, &all},
                                0);
}

TEST(ReferenceStepTest, ScatterNDMatchesTheReference) {
  // Llama's causal mask: a [1, 1, S, S] mask written back through full index tuples.
  const Value mask = RandomF32({1, 1, 3, 4}, 6);
  Value tuples = I64({1, 1, 3, 4, 4}, {});
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t c = 0; c < 4; ++c) {
      for (double v : {0.0, 0.0, static_cast<double>(r), static_cast<double>(c)}) {
        tuples.data.push_back(v);
      }
    }
  }
  const Value updates = RandomF32({1, 1, 3, 4}, 7);
  const Node scatter = MakeNode("ScatterND", {});
  ExpectStepMatchesTheReference(scatter, {&mask, &tuples, &updates}, 0);
  // Index tuples shorter than the rank write slices; negative indices count from the end.
  const Value rows = I64({2, 1}, {2, -3});
  const Value row_updates = RandomF32({2, 4}, 8);
  const Value matrix = RandomF32({3, 4}, 9);
  ExpectStepMatchesTheReference(scatter, {&matrix, &rows, &row_updates}, 0);
  // An index out of range fails naming the step and the index.
  const Value bad = I64({1, 1}, {3});
  const Value one_row = RandomF32({1, 4}, 10);
  const TensorSpec data_spec = SpecOf(matrix, "data"), index_spec = SpecOf(bad, "index"),
                   update_spec = SpecOf(one_row, "updates"), out_spec = SpecOf(matrix, "out");
  const std::vector<char> data_bytes = Bytes(matrix), index_bytes = Bytes(bad),
                          update_bytes = Bytes(one_row);
  std::vector<char> out(out_spec.Bytes());
  absl::Status status = RunReferenceStep(
      scatter, {&data_spec, &index_spec, &update_spec},
      {data_bytes.data(), index_bytes.data(), update_bytes.data()}, {&out_spec}, {out.data()});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("index 3"), std::string::npos) << status;
}

TEST(ReferenceStepTest, BoolLogicMatchesTheReference) {
  // Llama's padding mask: a [1, 1, S, S] mask And a [1, 1, 1, S] row, broadcast.
  std::mt19937_64 rng(12);
  const auto bools = [&](const std::vector<int64_t>& shape) {
    Value value = Tensor(ElemType::kBool, shape, {});
    for (int64_t i = 0; i < value.NumElements(); ++i) value.data.push_back(rng() % 2);
    return value;
  };
  const Value square = bools({1, 1, 5, 6}), row = bools({1, 1, 1, 6}), column = bools({5, 1});
  const Value scalar = bools({});
  for (const char* op : {"And", "Or", "Xor"}) {
    const Node node = MakeNode(op, {});
    ExpectStepMatchesTheReference(node, {&square, &row}, 0);
    ExpectStepMatchesTheReference(node, {&row, &square}, 0);
    ExpectStepMatchesTheReference(node, {&column, &row}, 0);
    ExpectStepMatchesTheReference(node, {&square, &scalar}, 0);
    ExpectStepMatchesTheReference(node, {&scalar, &scalar}, 0);
  }
}

TEST(ReferenceStepTest, IntegerArithmeticMatchesTheReference) {
  // DeBERTa's relative positions: a column of query positions minus a row of key positions.
  std::mt19937_64 rng(13);
  const auto ints = [&](ElemType type, const std::vector<int64_t>& shape) {
    Value value = Tensor(type, shape, {});
    for (int64_t i = 0; i < value.NumElements(); ++i) {
      value.data.push_back(static_cast<double>(static_cast<int64_t>(rng() % 2001) - 1000));
    }
    return value;
  };
  for (ElemType type : {ElemType::kI64, ElemType::kI32}) {
    const Value column = ints(type, {1, 6, 1}), row = ints(type, {1, 1, 7});
    const Value square = ints(type, {2, 6, 7}), scalar = ints(type, {});
    for (const char* op : {"Add", "Sub", "Mul", "Max", "Min"}) {
      const Node node = MakeNode(op, {});
      ExpectStepMatchesTheReference(node, {&column, &row}, 0);
      ExpectStepMatchesTheReference(node, {&square, &scalar}, 0);
      ExpectStepMatchesTheReference(node, {&row, &square}, 0);
    }
  }
}

TEST(ReferenceStepTest, CastMatchesTheReference) {
  const Value ids = I64({2, 5}, {0, 1, -3, 70000, 16777217, 2, -1, 5, 0, 9});
  const Value flags = Tensor(ElemType::kBool, {4}, {1, 0, 0, 1});
  const Value floats = F32({4}, {0.0, -0.5, 2.0, std::nan("")});
  Value narrow = ids;
  narrow.dtype = ElemType::kI32;
  for (int to : {1 /*float*/, 6 /*int32*/, 7 /*int64*/, 9 /*bool*/}) {
    const Node cast = MakeNode("Cast", {{"to", IntAttr(to)}});
    ExpectStepMatchesTheReference(cast, {&ids}, 0);
    ExpectStepMatchesTheReference(cast, {&narrow}, 0);
    ExpectStepMatchesTheReference(cast, {&flags}, 0);
  }
  ExpectStepMatchesTheReference(MakeNode("Cast", {{"to", IntAttr(9)}}), {&floats}, 0);
}

}  // namespace
}  // namespace gtco::runtime
