// Graph pass: the nodes no kernel family or data step runs (an op GTCO does not tune, or an
// anchor in a form its kernels do not take) become fallback steps, run by the reference op
// library at run time, so that a model is not refused for one op.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/graph/graph.h"

namespace gtco::graph {

/// Marks (kFallbackAttr, see op_support.h) every node that CheckNodeSupported or the anchor
/// lowering refuses and that the reference op library runs, with the refusal as the reason.
/// UNIMPLEMENTED naming op and node for a node neither runs (the original refusal, with "the
/// reference interpreter does not run it either"), and for a fallback node with a tensor of no
/// static shape.
absl::Status MarkFallbacks(Graph& graph);

/// One fallback node: its op, name and why it falls back.
struct FallbackNode {
  std::string op_type, node, reason;
};

/// The nodes MarkFallbacks marked, in graph order.
std::vector<FallbackNode> FallbackNodes(const Graph& graph);

}  // namespace gtco::graph
