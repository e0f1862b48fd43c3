// Static output shapes of the ops GTCO keeps or folds, from input shapes and constant
// parameter inputs (Reshape's shape, Slice's starts/ends, ...). Complements ONNX shape
// inference where its data propagation stops (e.g. after an Expand fed by folded arithmetic).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/graph/graph.h"

namespace gtco::graph {

/// The element window a Slice reads: per input axis, first index, step and element count.
struct SliceWindow {
  std::vector<int64_t> first, step, count;
};

/// Slice window of `node` (opset >= 10 inputs, or the older attributes) over its first
/// input's shape, following ONNX's clamping rules. Parameter inputs must be constant.
absl::StatusOr<SliceWindow> ComputeSliceWindow(const Node& node, const Graph& graph);

/// Output shape of Identity, Reshape, Flatten, Squeeze or Unsqueeze (which move no data).
absl::StatusOr<std::vector<int64_t>> ReshapeLikeShape(const Node& node, const Graph& graph);

/// Output shape of Gather with data shape `data` and indices shape `indices`.
absl::StatusOr<std::vector<int64_t>> GatherShape(const Node& node, const std::vector<int64_t>& data,
                                                 const std::vector<int64_t>& indices);

/// Output shape of Concat over its inputs' shapes.
absl::StatusOr<std::vector<int64_t>> ConcatShape(const Node& node, const Graph& graph);

/// Output 0 shape of a supported compute or data op (element-wise, MatMul, Gemm, Softmax,
/// LayerNormalization, ReduceMean, Transpose, Reshape, Identity, Flatten, Squeeze, Unsqueeze,
/// Slice, Concat, Gather, Cast) whose inputs have static shapes. INVALID_ARGUMENT or
/// UNIMPLEMENTED (naming the node) when it cannot be derived.
absl::StatusOr<std::vector<int64_t>> InferOutputShape(const Node& node, const Graph& graph);

/// Transpose's `perm` attribute for an input of rank `rank` (reversed axes when absent).
/// INVALID_ARGUMENT naming the node unless it is a permutation of 0..rank-1.
absl::StatusOr<std::vector<int64_t>> TransposePerm(const Node& node, int64_t rank);

/// `axis` made non-negative for `rank`; INVALID_ARGUMENT naming the node when out of range.
absl::StatusOr<int64_t> NormalizeAxis(const Node& node, int64_t axis, int64_t rank);

}  // namespace gtco::graph
