// Lowering of one anchor node (MatMul, MatMulInteger, Gemm, Softmax, LayerNormalization,
// ReduceMean, Conv, GlobalAveragePool, MaxPool, AveragePool) to the canonical head of a workload; used by the fusion
// planner.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/graph/graph.h"
#include "common/ir/workload.h"

namespace gtco::graph {

/// A workload under construction: anchor params and inputs set, output described, and for
/// Gemm the alpha/beta/C epilogue prefix already emitted.
struct AnchorHead {
  ir::Workload workload;
  std::string onnx_output;               ///< the anchor node's output tensor
  std::vector<int64_t> onnx_shape;       ///< its ONNX shape
  ir::Operand result;                    ///< operand holding the anchor's value (acc or v:j)
  std::map<std::string, int> input_ids;  ///< extra inputs already added (tensor -> index)
};

/// Canonical head for anchor `node` (see workload.h for canonical shapes). UNIMPLEMENTED,
/// naming the node, for softmax/layernorm/reduce-mean over a non-last axis, partially
/// broadcast batch dims, or optional outputs in use.
absl::StatusOr<AnchorHead> LowerAnchor(const Node& node, const Graph& graph);

/// The canonical shape of extra input `extra` in the region of `head`: conv heads take full-shape,
/// per-channel ([K, 1, 1] after leading 1s) and scalar inputs; other anchors as below.
std::optional<std::vector<int64_t>> AnchorExtraShape(const AnchorHead& head,
                                                     const std::vector<int64_t>& extra);

/// The pooling params of a MaxPool / AveragePool node over input shape `x` (4-D only; explicit,
/// VALID or SAME pads). UNIMPLEMENTED for other ranks, a used Indices output or storage_order 1;
/// INVALID_ARGUMENT for malformed attributes. Shape inference shares it.
absl::StatusOr<ir::PoolParams> PoolParamsOf(const Node& node, const std::vector<int64_t>& x);

/// `shape` without leading 1s (at least one dim is kept).
std::vector<int64_t> StripLeadingOnes(const std::vector<int64_t>& shape);

/// Canonical shape of an extra epilogue input of ONNX shape `extra` in a region whose output
/// has ONNX shape `onnx_out` and canonical shape `canonical_out`: full shape -> canonical_out,
/// last-dim vector -> [last], scalar -> [1]; nullopt for any other broadcast.
std::optional<std::vector<int64_t>> AnchorExtraShape(const std::vector<int64_t>& extra,
                                                     const std::vector<int64_t>& onnx_out,
                                                     const std::vector<int64_t>& canonical_out);

}  // namespace gtco::graph
