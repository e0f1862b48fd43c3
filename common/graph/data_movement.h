// Graph pass: data movement that need not move data. Exported models run each Transpose,
// Slice and Concat as a copy between kernels and each Reshape as a free alias; the pass rewrites
// what an exporter (torch.nn.MultiheadAttention's, notably) writes so that fewer copies remain
// and the fusion planner sees epilogues and attention scales it would otherwise miss.
#pragma once

#include "absl/status/status.h"
#include "common/graph/graph.h"

namespace gtco::graph {

/// Runs, until none applies, three rewrites that keep every value the graph computes:
///  1. A Transpose that keeps its non-unit axes in order (only axes of size 1 move, as the
///     [1, S, D] <-> [S, 1, D] transposes around torch's batch-first attention) is a Reshape.
///  2. A scalar Mul or Div by a constant power of two on an input of a MatMul (ViT's query
///     scaled by 1/sqrt(head_dim) = 1/8 before Q K^T), where it would be a kernel of its own (its
///     input a copy's output or a graph input), moves to the MatMul's output: scaling by a
///     power of two is exact, so both orders give the same floats (save where values under- or
///     overflow), and the attention pattern MatMul -> Div -> Softmax then carries the scale.
///  3. An element-wise node reading a reshape (Reshape, Flatten, Squeeze, Unsqueeze, Identity) of
///     an anchor's or element-wise node's output computes on that output's shape instead, the
///     reshape moved after it (its other inputs reshaped alike, or scalars): the residual Add
///     after torch's out-projection becomes the Gemm's epilogue. Only where the reshape's input and
///     output are read by the one node each, so the chain stays one region.
/// Node names are kept (added nodes get fresh ones); graph inputs and outputs are unchanged.
/// Run after shape inference and constant folding; nodes without static shapes are left alone.
/// The farm runs it unless GTCO_KEEP_COPIES is set (bench/e2e's ablation baseline, which also
/// keeps the exporter's slices and transposes apart).
absl::Status SimplifyDataMovement(Graph& graph);

/// True when the process runs with GTCO_KEEP_COPIES set: the farm skips SimplifyDataMovement and
/// the exporter merges no slice into a transpose (bench/e2e's ablation baseline).
bool KeepCopies();

}  // namespace gtco::graph
