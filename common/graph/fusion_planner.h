// Fusion planner: splits a folded, checked graph into workloads (anchor + absorbed
// element-wise epilogue, or element-wise chains without anchor).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/graph/graph.h"
#include "common/ir/workload.h"
#include "common/target/target.h"

namespace gtco::graph {

/// One fused subgraph of the model.
struct PlannedWorkload {
  ir::Workload workload;
  /// The graph nodes it computes: the anchor (if any) first, then the epilogue's nodes in
  /// instruction order. A fused attention's anchor is several nodes, listed in graph order.
  std::vector<std::string> node_names;
  /// The graph tensor each workload input reads, in workload input order (its data in the graph
  /// tensor's row-major order is the input's canonical layout; scalar constants folded into
  /// immediates have no input), and the graph tensor the workload writes.
  std::vector<std::string> input_tensors;
  std::string output_tensor;
};

/// What the workloads are planned for.
struct PlanOptions {
  /// The target whose workers run the workloads.
  target::Target target = target::Target::kCpu;
  /// For kCpu: plan each attention subgraph (masked ones included) as one kAttention workload.
  /// Off by default for now: callers opt in (the exporter, the farm's planning of CPU jobs) so
  /// that the unfused plan stays available as the ablation baseline. kCuda always fuses
  /// unmasked attention.
  bool fuse_attention = false;
};

/// Plans the workloads of `graph`, which must have passed FoldConstants and
/// CheckSupportedOps. Anchors (MatMul, Gemm, Softmax, LayerNormalization, ReduceMean) are
/// visited in topological order; each grows a region over the element-wise nodes that follow
/// it: a node joins when it reads a region tensor, its output has the anchor output's shape,
/// its other inputs do not depend on the anchor and broadcast as full shape, last-dim vector
/// or scalar. Only one region tensor may escape (be read outside or be a graph output): the
/// last-added nodes are dropped until that holds. Element-wise nodes left over form anchorless
/// chains grown the same way (any numpy broadcast allowed). Scalar constants become
/// immediates. The result is in topological order of each workload's first node; every
/// workload passes Validate(). UNIMPLEMENTED (naming the node) for anchors outside what
/// workload.h can express. For target "cuda", each attention subgraph (FindAttentionPatterns in
/// attention_fusion.h: MatMul(Q, K^T) -> optional scalar Mul/Div -> Softmax -> MatMul(., V))
/// first becomes one kAttention anchor at its final MatMul, which then grows an epilogue like any
/// anchor.
absl::StatusOr<std::vector<PlannedWorkload>> PlanWorkloads(const Graph& graph,
                                                           const PlanOptions& options = {});

/// The plan options the farm tunes and the exporter exports a model for `target` with (they must
/// agree, or exported workloads would find no records): fused attention on both targets, unless
/// the process runs with GTCO_UNFUSED_ATTENTION set (the ablation baseline of bench/e2e: a
/// server started with it plans, tunes and exports attention as matmul, softmax, matmul).
PlanOptions PlanOptionsFor(target::Target target);

}  // namespace gtco::graph
