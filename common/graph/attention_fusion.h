// Attention fusion: finds scaled-dot-product attention subgraphs, as torch exports them for
// ViT/BERT (opset 13+), so that the fusion planner can plan each as one kAttention workload.
#pragma once

#include <string>
#include <vector>

#include "common/graph/anchor_lowering.h"
#include "common/graph/graph.h"
#include "common/ir/workload.h"

namespace gtco::graph {

/// One attention subgraph: P = Softmax(scale * MatMul(Q, K^T)) over the last axis, out =
/// MatMul(P, V).
struct AttentionMatch {
  /// Indices into graph.nodes of every node the workload computes, in graph order: the Transpose
  /// that produced K^T (when absorbed), the scores MatMul, the Mul/Div by the scale (if any), the
  /// Softmax and the final MatMul.
  std::vector<int> nodes;
  int final_matmul = 0;  ///< index of the final MatMul: the anchor whose output the workload is
  std::string q, k, v;   ///< the workload's input tensors (k: K^T's source when absorbed)
  std::string mask;      ///< the additive mask's tensor (params.mask_groups > 0), else empty
  ir::AttentionParams params;
};

/// What a match may take in, by the target's kernels.
struct AttentionOptions {
  /// An Add of a mask between the scale and the Softmax (BERT's padding mask): the mask
  /// broadcasts over the query rows and over trailing batch dims ([N, 1, 1, seq_k] for scores
  /// [N, heads, seq_q, seq_k]) and becomes the workload's fourth input.
  bool allow_mask = false;
  /// Absorb the Transpose producing K^T (K read as [seq_k, head_dim]); else K^T is the input
  /// (k_transposed), which the CPU kernel streams in key-contiguous rows.
  bool absorb_k_transpose = true;
};

/// Every attention subgraph of `graph` (which must have passed FoldConstants and
/// CheckSupportedOps), in graph order of their final MatMul; matches share no node. A match
/// needs: f32 MatMuls whose operands have equal batch dims (flattened into params.batch); a
/// scale that is a scalar constant multiplier (Mul, either side) or divisor (Div by a nonzero
/// constant), or none (scale 1); then, with options.allow_mask, an optional Add of a mask;
/// Softmax over the last axis; each intermediate tensor read by the
/// next pattern node only and not a graph output. K^T produced by a Transpose that swaps the last
/// two axes, read only by the scores MatMul, is absorbed (K is the Transpose's input); otherwise
/// K is K^T itself and params.k_transposed is set.
std::vector<AttentionMatch> FindAttentionPatterns(const Graph& graph,
                                                  const AttentionOptions& options = {});

/// The workload head of `match`: kAttention with Q, K, V in canonical shapes, the output
/// [batch, seq_q, value_dim], result = acc.
AnchorHead AttentionHead(const AttentionMatch& match, const Graph& graph);

}  // namespace gtco::graph
