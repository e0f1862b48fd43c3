// Tests of the reference ONNX data-movement ops: shapes, slicing, padding, resizing, gathers and
// scatters, TopK and the tensor generators.
#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "runtime/reference_ops.h"
#include "tests/unit/runtime/reference_test_util.h"

namespace gtco::runtime::reference {
namespace {

using namespace reftest;  // NOLINT: the test helpers

TEST(ShapeOpsTest, ReshapeTransposeFlatten) {
  const Value x = Iota({2, 3, 4});
  const Value shape = I64({2}, {0, -1});
  ExpectValue(Run1(MakeNode("Reshape"), {&x, &shape}), {2, 12}, x.data);
  const Value empty = F32({0, 3}, {}), zero_shape = I64({2}, {3, 0});
  EXPECT_EQ(Run1(MakeNode("Reshape", {{"allowzero", IntAttr(1)}}), {&empty, &zero_shape}).shape,
            std::vector<int64_t>({3, 0}));
  const Value m = Iota({2, 3});
  ExpectValue(Run1(MakeNode("Transpose"), {&m}), {3, 2}, {0, 3, 1, 4, 2, 5});
  ExpectValue(
      Run1(MakeNode("Transpose", {{"perm", IntsAttr({1, 2, 0})}}), {&x}), {3, 4, 2},
      {0, 12, 1, 13, 2, 14, 3, 15, 4, 16, 5, 17, 6, 18, 7, 19, 8, 20, 9, 21, 10, 22, 11, 23});
  EXPECT_EQ(Run1(MakeNode("Flatten", {{"axis", IntAttr(0)}}), {&x}).shape,
            std::vector<int64_t>({1, 24}));
  EXPECT_EQ(Run1(MakeNode("Flatten", {{"axis", IntAttr(-1)}}), {&x}).shape,
            std::vector<int64_t>({6, 4}));
}

TEST(ShapeOpsTest, SqueezeAndUnsqueezeAcrossOpsets) {
  const Value x = Iota({1, 3, 1});
  EXPECT_EQ(Run1(MakeNode("Squeeze", {{"axes", IntsAttr({0})}}, 11), {&x}).shape,
            std::vector<int64_t>({3, 1}));
  EXPECT_EQ(Run1(MakeNode("Squeeze", {}, 13), {&x}).shape, std::vector<int64_t>({3}));
  const Value last = I64({1}, {-1});
  EXPECT_EQ(Run1(MakeNode("Squeeze", {}, 13), {&x, &last}).shape, std::vector<int64_t>({1, 3}));
  const Value middle = I64({1}, {1});
  EXPECT_EQ(RunOp(MakeNode("Squeeze", {}, 13), {&x, &middle}, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  const Value m = Iota({2, 3});
  EXPECT_EQ(Run1(MakeNode("Unsqueeze", {{"axes", IntsAttr({0, 3})}}, 11), {&m}).shape,
            std::vector<int64_t>({1, 2, 3, 1}));
  EXPECT_EQ(Run1(MakeNode("Unsqueeze", {}, 13), {&m, &last}).shape,
            std::vector<int64_t>({2, 3, 1}));
}

TEST(ShapeOpsTest, ConcatAndSplit) {
  const Value a = F32({2, 1}, {1, 2}), b = F32({2, 2}, {3, 4, 5, 6});
  ExpectValue(Run1(MakeNode("Concat", {{"axis", IntAttr(1)}}), {&a, &b}), {2, 3},
              {1, 3, 4, 2, 5, 6});
  const Value x = Iota({7}, 1);
  std::vector<Value> parts = RunAll(MakeNode("Split", {{"num_outputs", IntAttr(3)}}, 18), {&x}, 3);
  ExpectValue(parts[0], {3}, {1, 2, 3});
  ExpectValue(parts[1], {3}, {4, 5, 6});
  ExpectValue(parts[2], {1}, {7});
  const Value sizes = I64({2}, {2, 5});
  parts = RunAll(MakeNode("Split", {}, 13), {&x, &sizes}, 2);
  ExpectValue(parts[0], {2}, {1, 2});
  ExpectValue(parts[1], {5}, {3, 4, 5, 6, 7});
  parts = RunAll(MakeNode("Split", {{"split", IntsAttr({3, 4})}}, 11), {&x}, 2);
  ExpectValue(parts[1], {4}, {4, 5, 6, 7});
  const Value m = Iota({2, 4});
  parts = RunAll(MakeNode("Split", {{"axis", IntAttr(1)}}, 13), {&m}, 2);
  ExpectValue(parts[0], {2, 2}, {0, 1, 4, 5});
  ExpectValue(parts[1], {2, 2}, {2, 3, 6, 7});
}

TEST(ShapeOpsTest, SliceWithNegativeStepsAndClamping) {
  const Value x = Iota({10});
  const Value start = I64({1}, {-1}), end = I64({1}, {-1000}), step = I64({1}, {-2});
  ExpectValue(Run1(MakeNode("Slice"), {&x, &start, &end, nullptr, &step}), {5}, {9, 7, 5, 3, 1});
  const Value one = I64({1}, {1}), max = I64({1}, {9.2233720368547758e18});
  ExpectValue(Run1(MakeNode("Slice"), {&x, &one, &max}), {9}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Value m = Iota({3, 4});
  const Value starts = I64({2}, {-1, 10}), ends = I64({2}, {-4, -5});
  const Value axes = I64({2}, {0, 1}), steps = I64({2}, {-1, -2});
  ExpectValue(Run1(MakeNode("Slice"), {&m, &starts, &ends, &axes, &steps}), {3, 2},
              {11, 9, 7, 5, 3, 1});
  ExpectValue(
      Run1(MakeNode("Slice",
                    {{"starts", IntsAttr({1})}, {"ends", IntsAttr({3})}, {"axes", IntsAttr({1})}},
                    9),
           {&m}),
      {3, 2}, {1, 2, 5, 6, 9, 10});
  const Value empty_start = I64({1}, {5}), empty_end = I64({1}, {2});
  EXPECT_EQ(Run1(MakeNode("Slice"), {&x, &empty_start, &empty_end}).shape,
            std::vector<int64_t>({0}));
}

TEST(ShapeOpsTest, ExpandTileDepthToSpace) {
  const Value column = F32({3, 1}, {1, 2, 3}), shape = I64({2}, {1, 2});
  ExpectValue(Run1(MakeNode("Expand"), {&column, &shape}), {3, 2}, {1, 1, 2, 2, 3, 3});
  const Value m = F32({2, 2}, {1, 2, 3, 4});
  const Value across = I64({2}, {1, 2}), down = I64({2}, {2, 1});
  ExpectValue(Run1(MakeNode("Tile"), {&m, &across}), {2, 4}, {1, 2, 1, 2, 3, 4, 3, 4});
  ExpectValue(Run1(MakeNode("Tile"), {&m, &down}), {4, 2}, {1, 2, 3, 4, 1, 2, 3, 4});
  const Value depth = Iota({1, 8, 1, 1});
  ExpectValue(Run1(MakeNode("DepthToSpace", {{"blocksize", IntAttr(2)}}), {&depth}), {1, 2, 2, 2},
              {0, 2, 4, 6, 1, 3, 5, 7});
  ExpectValue(
      Run1(MakeNode("DepthToSpace", {{"blocksize", IntAttr(2)}, {"mode", StringAttr("CRD")}}),
           {&depth}),
      {1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  const Value space = F32({1, 2, 2, 2}, {0, 2, 4, 6, 1, 3, 5, 7});
  ExpectValue(Run1(MakeNode("SpaceToDepth", {{"blocksize", IntAttr(2)}}), {&space}), {1, 8, 1, 1},
              {0, 1, 2, 3, 4, 5, 6, 7});
}

TEST(PadTest, ConstantReflectEdgeWrap) {
  const Value x = F32({3}, {1, 2, 3});
  const Value pads = I64({2}, {2, 1}), nine = F32({}, {9});
  ExpectValue(Run1(MakeNode("Pad"), {&x, &pads, &nine}), {6}, {9, 9, 1, 2, 3, 9});
  ExpectValue(Run1(MakeNode("Pad", {{"mode", StringAttr("edge")}}), {&x, &pads}), {6},
              {1, 1, 1, 2, 3, 3});
  ExpectValue(Run1(MakeNode("Pad", {{"mode", StringAttr("wrap")}}, 19), {&x, &pads}), {6},
              {2, 3, 1, 2, 3, 1});
  const Value wide = I64({2}, {2, 2});
  ExpectValue(Run1(MakeNode("Pad", {{"mode", StringAttr("reflect")}}), {&x, &wide}), {7},
              {3, 2, 1, 2, 3, 2, 1});
  const Value m = F32({3, 2}, {1.0, 1.2, 2.3, 3.4, 4.5, 5.7});
  const Value left = I64({4}, {0, 2, 0, 0});
  ExpectValue(Run1(MakeNode("Pad", {{"mode", StringAttr("reflect")}}), {&m, &left}), {3, 4},
              {1.0, 1.2, 1.0, 1.2, 2.3, 3.4, 2.3, 3.4, 4.5, 5.7, 4.5, 5.7}, 1e-6);
  const Value crop = I64({2}, {-1, 1});
  const Value four = F32({4}, {1, 2, 3, 4});
  ExpectValue(Run1(MakeNode("Pad"), {&four, &crop}), {4}, {2, 3, 4, 0});
  // Opset 18: pads for the listed axes only.
  const Value axis = I64({1}, {1}), one_side = I64({2}, {1, 0});
  ExpectValue(Run1(MakeNode("Pad", {}, 18), {&m, &one_side, nullptr, &axis}), {3, 3},
              {0, 1.0, 1.2, 0, 2.3, 3.4, 0, 4.5, 5.7}, 1e-6);
  // Before opset 11: pads and value are attributes.
  ExpectValue(
      Run1(MakeNode("Pad", {{"pads", IntsAttr({1, 0})}, {"value", FloatAttr(-1)}}, 2), {&x}), {4},
      {-1, 1, 2, 3});
}

TEST(ResizeTest, NearestModesAndCoordinateTransforms) {
  const Value x = F32({1, 1, 2, 2}, {1, 2, 3, 4});
  const Value twice = F32({4}, {1, 1, 2, 2});
  ExpectValue(Run1(MakeNode("Resize", {{"coordinate_transformation_mode", StringAttr("asymmetric")},
                                       {"nearest_mode", StringAttr("floor")}}),
                   {&x, nullptr, &twice}),
              {1, 1, 4, 4}, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
  const Value wide = F32({4}, {1, 1, 2, 3});  // half_pixel, round_prefer_floor (defaults)
  ExpectValue(Run1(MakeNode("Resize"), {&x, nullptr, &wide}), {1, 1, 4, 6},
              {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
  // Asymmetric, scale 2: sources 0, 0.5, 1, 1.5; the ties at .5 go down or up per nearest_mode.
  const Value row = F32({1, 1, 1, 2}, {10, 20}), sizes = I64({4}, {1, 1, 1, 4});
  const Attr asymmetric = StringAttr("asymmetric");
  ExpectValue(Run1(MakeNode("Resize", {{"coordinate_transformation_mode", asymmetric}}),
                   {&row, nullptr, nullptr, &sizes}),
              {1, 1, 1, 4}, {10, 10, 20, 20});
  ExpectValue(Run1(MakeNode("Resize", {{"coordinate_transformation_mode", asymmetric},
                                       {"nearest_mode", StringAttr("round_prefer_ceil")}}),
                   {&row, nullptr, nullptr, &sizes}),
              {1, 1, 1, 4}, {10, 20, 20, 20});
  const Value grid = Iota({1, 1, 4, 4}, 1), eight = I64({4}, {1, 1, 8, 8});
  const Value up = Run1(MakeNode("Resize", {{"nearest_mode", StringAttr("ceil")}}),
                        {&grid, nullptr, nullptr, &eight});
  ASSERT_EQ(up.shape, std::vector<int64_t>({1, 1, 8, 8}));
  EXPECT_EQ(std::vector<double>(up.data.begin(), up.data.begin() + 8),
            std::vector<double>({1, 2, 2, 3, 3, 4, 4, 4}));
  // Opset 18 axes with keep_aspect_ratio_policy: one scale for both axes.
  const Value tall = Iota({1, 1, 2, 4}), target = I64({2}, {4, 4});
  EXPECT_EQ(Run1(MakeNode("Resize",
                          {{"axes", IntsAttr({2, 3})},
                           {"keep_aspect_ratio_policy", StringAttr("not_smaller")}},
                          18),
                 {&tall, nullptr, nullptr, &target})
                .shape,
            std::vector<int64_t>({1, 1, 4, 8}));
  EXPECT_EQ(Run1(MakeNode("Resize",
                          {{"axes", IntsAttr({2, 3})},
                           {"keep_aspect_ratio_policy", StringAttr("not_larger")}},
                          18),
                 {&tall, nullptr, nullptr, &target})
                .shape,
            std::vector<int64_t>({1, 1, 2, 4}));
}

TEST(ResizeTest, LinearCubicAndCrop) {
  const Value x = F32({1, 1, 2, 2}, {1, 2, 3, 4});
  const Value twice = F32({4}, {1, 1, 2, 2});
  ExpectValue(Run1(MakeNode("Resize", {{"mode", StringAttr("linear")}}), {&x, nullptr, &twice}),
              {1, 1, 4, 4},
              {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4});
  const double third = 1.0 / 3;
  ExpectValue(
      Run1(MakeNode("Resize", {{"mode", StringAttr("linear")},
                               {"coordinate_transformation_mode", StringAttr("align_corners")}}),
           {&x, nullptr, &twice}),
      {1, 1, 4, 4},
      {1, 1 + third, 1 + 2 * third, 2, 1 + 2 * third, 2, 2 + third, 2 + 2 * third, 2 + third,
       2 + 2 * third, 3, 3 + third, 3, 3 + third, 3 + 2 * third, 4},
      1e-6);
  // align_corners uses the unrounded output length (scale * 4 = 2.4): x = 1 maps to 3 / 1.4.
  const Value eight = Iota({1, 1, 2, 4}, 1), shrink = F32({4}, {1, 1, 0.6f, 0.6f});
  ExpectValue(
      Run1(MakeNode("Resize", {{"mode", StringAttr("linear")},
                               {"coordinate_transformation_mode", StringAttr("align_corners")}}),
           {&eight, nullptr, &shrink}),
      {1, 1, 1, 2}, {1, 3.142857142857143}, 1e-5);
  const Value grid = Iota({1, 1, 4, 4}, 1);
  const Value cubic =
      Run1(MakeNode("Resize", {{"mode", StringAttr("cubic")}}), {&grid, nullptr, &twice});
  ASSERT_EQ(cubic.shape, std::vector<int64_t>({1, 1, 8, 8}));
  ExpectValue(
      F32({8}, std::vector<double>(cubic.data.begin(), cubic.data.begin() + 8)), {8},
      {0.47265625, 0.76953125, 1.24609375, 1.875, 2.28125, 2.91015625, 3.38671875, 3.68359375});
  const Value down = F32({4}, {1, 1, 0.8f, 0.8f});
  ExpectValue(
      Run1(MakeNode("Resize", {{"mode", StringAttr("cubic")},
                               {"exclude_outside", IntAttr(1)},
                               {"cubic_coeff_a", FloatAttr(-0.5)}}),
           {&grid, nullptr, &down}),
      {1, 1, 3, 3},
      {1.3681267, 2.6695013, 4.0133367, 6.573625, 7.875, 9.218835, 11.948966, 13.250341, 14.594176},
      1e-5);
  // Antialiased linear downsampling by 2 of [1, 2, 3, 4]: a 4-tap triangle filter.
  const Value line = F32({1, 1, 1, 4}, {1, 2, 3, 4}), half = I64({4}, {1, 1, 1, 2});
  ExpectValue(
      Run1(MakeNode("Resize", {{"mode", StringAttr("linear")}, {"antialias", IntAttr(1)}}, 18),
           {&line, nullptr, nullptr, &half}),
      {1, 1, 1, 2}, {1.625, 3.375});
  const Value shrink_line = F32({4}, {1, 1, 1, 0.6f});
  ExpectValue(
      Run1(MakeNode("Resize",
                    {{"mode", StringAttr("linear")},
                     {"coordinate_transformation_mode", StringAttr("half_pixel_symmetric")}},
                    19),
           {&line, nullptr, &shrink_line}),
      {1, 1, 1, 2}, {5.0 / 3, 10.0 / 3}, 1e-5);
  // tf_crop_and_resize: rows 1.2, 2.4, 3.6 and columns 1.8, 3.45, 5.1 of a linear ramp; past
  // the input is the extrapolation value.
  const Value roi = F32({8}, {0, 0, 0.4f, 0.6f, 1, 1, 1.2f, 1.7f});
  const Value three = I64({4}, {1, 1, 3, 3});
  ExpectValue(
      Run1(MakeNode("Resize", {{"mode", StringAttr("linear")},
                               {"coordinate_transformation_mode", StringAttr("tf_crop_and_resize")},
                               {"extrapolation_value", FloatAttr(10)}}),
           {&grid, &roi, nullptr, &three}),
      {1, 1, 3, 3}, {7.6, 10, 10, 12.4, 10, 10, 10, 10, 10}, 1e-5);
}

TEST(ResizeTest, OpsetTenAndUpsample) {
  const Value x = F32({1, 1, 2, 2}, {1, 2, 3, 4});
  const Value scales = F32({4}, {1, 1, 2, 2});
  const std::vector<double> nearest = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
  ExpectValue(Run1(MakeNode("Resize", {}, 10), {&x, &scales}), {1, 1, 4, 4}, nearest);
  ExpectValue(Run1(MakeNode("Upsample", {}, 9), {&x, &scales}), {1, 1, 4, 4}, nearest);
  ExpectValue(Run1(MakeNode("Upsample", {{"scales", FloatsAttr({1, 1, 2, 2})}}, 7), {&x}),
              {1, 1, 4, 4}, nearest);
  // Linear, asymmetric: x / 2 with the last sources clamped to the edge.
  ExpectValue(Run1(MakeNode("Upsample", {{"mode", StringAttr("linear")}}, 9), {&x, &scales}),
              {1, 1, 4, 4}, {1, 1.5, 2, 2, 2, 2.5, 3, 3, 3, 3.5, 4, 4, 3, 3.5, 4, 4});
}

TEST(IndexTest, GatherFamily) {
  const Value m = Iota({2, 3}), indices = I64({1, 2}, {-1, 0});
  ExpectValue(Run1(MakeNode("Gather", {{"axis", IntAttr(1)}}), {&m, &indices}), {2, 1, 2},
              {2, 0, 5, 3});
  const Value data = F32({2, 2}, {1, 2, 3, 4}), picks = I64({2, 2}, {0, 0, 1, 0});
  ExpectValue(Run1(MakeNode("GatherElements", {{"axis", IntAttr(1)}}), {&data, &picks}), {2, 2},
              {1, 1, 4, 3});
  const Value g = F32({2, 2}, {0, 1, 2, 3});
  const Value pairs = I64({2, 2}, {0, 0, 1, 1}), rows = I64({2, 1}, {1, 0});
  ExpectValue(Run1(MakeNode("GatherND"), {&g, &pairs}), {2}, {0, 3});
  ExpectValue(Run1(MakeNode("GatherND"), {&g, &rows}), {2, 2}, {2, 3, 0, 1});
  const Value batched = Iota({2, 2, 2});
  ExpectValue(Run1(MakeNode("GatherND", {{"batch_dims", IntAttr(1)}}), {&batched, &rows}), {2, 2},
              {2, 3, 4, 5});
}

TEST(IndexTest, ScatterFamily) {
  const Value data = Iota({8}, 1), indices = I64({4, 1}, {4, 3, 1, 7});
  const Value updates = F32({4}, {9, 10, 11, 12});
  ExpectValue(Run1(MakeNode("ScatterND"), {&data, &indices, &updates}), {8},
              {1, 11, 3, 10, 9, 6, 7, 12});
  ExpectValue(Run1(MakeNode("ScatterND", {{"reduction", StringAttr("add")}}, 16),
                   {&data, &indices, &updates}),
              {8}, {1, 13, 3, 14, 14, 6, 7, 20});
  const Value rows = Iota({2, 2}), which = I64({1, 1}, {1}), row = F32({1, 2}, {-1, -2});
  ExpectValue(Run1(MakeNode("ScatterND"), {&rows, &which, &row}), {2, 2}, {0, 1, -1, -2});
  const Value zeros = F32({3, 3}, std::vector<double>(9, 0));
  const Value where = I64({2, 3}, {1, 0, 2, 0, 2, 1});
  const Value values = F32({2, 3}, {1.0, 1.1, 1.2, 2.0, 2.1, 2.2});
  ExpectValue(Run1(MakeNode("ScatterElements"), {&zeros, &where, &values}), {3, 3},
              {2.0, 1.1, 0.0, 1.0, 0.0, 2.2, 0.0, 2.1, 1.2}, 1e-6);
  const Value out_of_range = I64({1, 1}, {8}), five = F32({1}, {5});
  const auto error = RunOp(MakeNode("ScatterND"), {&data, &out_of_range, &five}, 1);
  EXPECT_EQ(error.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(error.status().message().find("out of range"), std::string::npos);
}

TEST(IndexTest, TopKBreaksTiesByLowerIndex) {
  const Value x = Iota({3, 4}), k = I64({1}, {3});
  std::vector<Value> out = RunAll(MakeNode("TopK"), {&x, &k}, 2);
  ExpectValue(out[0], {3, 3}, {3, 2, 1, 7, 6, 5, 11, 10, 9});
  EXPECT_EQ(out[1].dtype, ElemType::kI64);
  ExpectValue(out[1], {3, 3}, {3, 2, 1, 3, 2, 1, 3, 2, 1});
  const Value ties = F32({4}, {1, 3, 3, 2}), two = I64({1}, {2});
  out = RunAll(MakeNode("TopK"), {&ties, &two}, 2);
  ExpectValue(out[0], {2}, {3, 3});
  ExpectValue(out[1], {2}, {1, 2});
  out = RunAll(MakeNode("TopK", {{"largest", IntAttr(0)}}), {&ties, &two}, 2);
  ExpectValue(out[0], {2}, {1, 2});
  ExpectValue(out[1], {2}, {0, 3});
  const Value one = I64({1}, {1});
  out = RunAll(MakeNode("TopK", {{"axis", IntAttr(0)}}), {&x, &one}, 2);
  ExpectValue(out[0], {1, 4}, {8, 9, 10, 11});
  ExpectValue(out[1], {1, 4}, {2, 2, 2, 2});
}

TEST(IndexTest, OneHotNonZeroCompress) {
  const Value indices = I64({3}, {0, -1, 5}), depth = I64({}, {3}), values = F32({2}, {0, 1});
  ExpectValue(Run1(MakeNode("OneHot"), {&indices, &depth, &values}), {3, 3},
              {1, 0, 0, 0, 0, 1, 0, 0, 0});
  ExpectValue(Run1(MakeNode("OneHot", {{"axis", IntAttr(0)}}), {&indices, &depth, &values}), {3, 3},
              {1, 0, 0, 0, 0, 0, 0, 1, 0});
  const Value mask = F32({2, 2}, {1, 0, 1, 1});
  const Value nonzero = Run1(MakeNode("NonZero"), {&mask});
  EXPECT_EQ(nonzero.dtype, ElemType::kI64);
  ExpectValue(nonzero, {2, 3}, {0, 1, 1, 0, 0, 1});
  const Value m = F32({3, 2}, {1, 2, 3, 4, 5, 6});
  const Value keep_rows = Tensor(ElemType::kBool, {3}, {0, 1, 1});
  ExpectValue(Run1(MakeNode("Compress", {{"axis", IntAttr(0)}}), {&m, &keep_rows}), {2, 2},
              {3, 4, 5, 6});
  const Value flat = Tensor(ElemType::kBool, {5}, {0, 1, 0, 0, 1});
  ExpectValue(Run1(MakeNode("Compress"), {&m, &flat}), {2}, {2, 5});
}

TEST(CreateTest, ShapeSizeConstantsRangeTriluEyeLike) {
  const Value x = Iota({2, 3, 4});
  ExpectValue(Run1(MakeNode("Shape"), {&x}), {3}, {2, 3, 4});
  ExpectValue(Run1(MakeNode("Shape", {{"start", IntAttr(1)}}, 15), {&x}), {2}, {3, 4});
  ExpectValue(Run1(MakeNode("Shape", {{"start", IntAttr(-10)}, {"end", IntAttr(-1)}}, 15), {&x}),
              {2}, {2, 3});
  ExpectValue(Run1(MakeNode("Size"), {&x}), {}, {24});
  const Value shape = I64({2}, {2, 2});
  const Value sevens =
      Run1(MakeNode("ConstantOfShape", {{"value", TensorAttr(Tensor(ElemType::kI32, {1}, {7}))}}),
           {&shape});
  EXPECT_EQ(sevens.dtype, ElemType::kI32);
  ExpectValue(sevens, {2, 2}, {7, 7, 7, 7});
  ExpectValue(Run1(MakeNode("ConstantOfShape"), {&shape}), {2, 2}, {0, 0, 0, 0});
  ExpectValue(Run1(MakeNode("Constant", {{"value", TensorAttr(F32({2}, {1.5, 2.5}))}}), {}), {2},
              {1.5, 2.5});
  const Value ints = Run1(MakeNode("Constant", {{"value_ints", IntsAttr({4, 5})}}), {});
  EXPECT_EQ(ints.dtype, ElemType::kI64);
  ExpectValue(ints, {2}, {4, 5});
  ExpectValue(Run1(MakeNode("Constant", {{"value_float", FloatAttr(0.5)}}), {}), {}, {0.5});
  const Value start = I64({}, {1}), limit = I64({}, {5}), delta = I64({}, {2});
  ExpectValue(Run1(MakeNode("Range"), {&start, &limit, &delta}), {2}, {1, 3});
  const Value f0 = F32({}, {0}), f1 = F32({}, {1}), quarter = F32({}, {0.25});
  ExpectValue(Run1(MakeNode("Range"), {&f0, &f1, &quarter}), {4}, {0, 0.25, 0.5, 0.75});
  const Value ten = I64({}, {10}), four = I64({}, {4}), minus3 = I64({}, {-3});
  ExpectValue(Run1(MakeNode("Range"), {&ten, &four, &minus3}), {2}, {10, 7});
  const Value square = Iota({3, 3});
  ExpectValue(Run1(MakeNode("Trilu"), {&square}), {3, 3}, {0, 1, 2, 0, 4, 5, 0, 0, 8});
  const Value minus1 = I64({}, {-1});
  ExpectValue(Run1(MakeNode("Trilu", {{"upper", IntAttr(0)}}), {&square, &minus1}), {3, 3},
              {0, 0, 0, 3, 0, 0, 6, 7, 0});
  const Value wide = Iota({2, 3});
  const Value eye = Run1(MakeNode("EyeLike", {{"k", IntAttr(1)}, {"dtype", IntAttr(7)}}), {&wide});
  EXPECT_EQ(eye.dtype, ElemType::kI64);
  ExpectValue(eye, {2, 3}, {0, 1, 0, 0, 0, 1});
}

}  // namespace
}  // namespace gtco::runtime::reference
