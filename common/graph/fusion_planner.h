// Fusion planner: splits a folded, checked graph into workloads (anchor + absorbed
// element-wise epilogue, or element-wise chains without anchor).
#pragma once

#include <functional>
#include <optional>
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

/// One way of planning the whole graph (PlanOptions) and its name in `status --explain`.
struct PlanVariant {
  std::string name;
  PlanOptions options;
};

/// A part of the graph the variants plan differently: alternatives[v] lists the workloads (indices
/// into ModelPlan::workloads) variant v plans for it; each alternative computes the same nodes.
struct PlanRegion {
  std::vector<std::vector<int>> alternatives;
};

/// Every variant's plan of one graph: the workloads they share, and the regions where they
/// differ. A plan is chosen region by region (the regions share no node and no tensor between
/// them other than the graph's own, so the choices are independent).
struct ModelPlan {
  std::vector<std::string> variants;       ///< variant names; 0 is the default plan
  std::vector<PlannedWorkload> workloads;  ///< every variant's workloads, each once
  std::vector<int> shared;                 ///< workloads every variant plans
  std::vector<PlanRegion> regions;
};

/// The variants PlanAlternatives weighs for `options`: on CPU with fused attention, the fused
/// plan ("fused attention") and the unfused one ("unfused attention": matmul, softmax, matmul);
/// otherwise `options` alone.
std::vector<PlanVariant> PlanVariantsFor(const PlanOptions& options);

/// Plans `graph` (as PlanWorkloads) with every variant of PlanVariantsFor(options) and splits the
/// plans into shared workloads and regions. Workloads are the same when they compute the same
/// nodes into the same tensor. A region is a connected group (by shared nodes) of the workloads
/// not every variant plans. Where two variants' workloads in a region cover different nodes (one
/// leaves a node to a data-movement step another fuses), the default variant's plan is returned
/// alone (no regions). The planner's errors.
absl::StatusOr<ModelPlan> PlanAlternatives(const Graph& graph, const PlanOptions& options);

/// The workloads of `plan` with alternative choice[r] in region r (variant 0 where `choice` is
/// shorter), in topological order of the nodes that write their outputs.
std::vector<PlannedWorkload> SelectPlan(const Graph& graph, const ModelPlan& plan,
                                        const std::vector<int>& choice);

/// A workload's cost in seconds per run, nullopt when it has none (not measured).
using WorkloadCost = std::function<std::optional<double>(const PlannedWorkload&)>;

/// The cost of alternative `alt` of `region`: the sum of its workloads' costs, nullopt when one
/// has none.
std::optional<double> AlternativeCost(const ModelPlan& plan, const PlanRegion& region, int alt,
                                      const WorkloadCost& cost);

/// The plan's rule: the alternative of least cost among those with a cost; the default (0) when
/// none has one.
int LeastCostAlternative(const std::vector<std::optional<double>>& costs);

/// Per region, LeastCostAlternative of its alternatives' costs.
std::vector<int> ChooseByCost(const ModelPlan& plan, const WorkloadCost& cost);

/// The plan options the farm tunes and the exporter exports a model for `target` with (they must
/// agree, or exported workloads would find no records): fused attention on both targets, unless
/// the process runs with GTCO_UNFUSED_ATTENTION set (the ablation baseline of bench/e2e: a
/// server started with it plans, tunes and exports attention as matmul, softmax, matmul).
PlanOptions PlanOptionsFor(target::Target target);

}  // namespace gtco::graph
