// Fallback marking: refused nodes the reference op library runs become fallback steps.
#include "common/graph/fallback.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/graph/anchor_lowering.h"
#include "common/graph/op_support.h"
#include "runtime/reference_ops.h"

namespace gtco::graph {
namespace {

/// Why `node` cannot run as a tuned kernel or a data step (OK when it can).
absl::Status Refusal(const Node& node, const Graph& graph) {
  absl::Status status = CheckNodeSupported(node, graph);
  if (!status.ok()) return status;
  if (RoleOf(node) == OpRole::kAnchor) {
    absl::StatusOr<AnchorHead> head = LowerAnchor(node, graph);
    if (!head.ok() && head.status().code() == absl::StatusCode::kUnimplemented) {
      return head.status();
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status MarkFallbacks(Graph& graph) {
  for (Node& node : graph.nodes) {
    if (node.HasAttr(kFallbackAttr)) continue;
    const absl::Status refusal = Refusal(node, graph);
    if (refusal.ok()) continue;
    // Shapes the artifact cannot hold statically stay a refusal, whoever runs the op.
    if (refusal.code() != absl::StatusCode::kUnimplemented ||
        absl::StrContains(refusal.message(), "static shape")) {
      return refusal;
    }
    if (!runtime::reference::Supports(node.domain, node.op_type)) {
      return absl::UnimplementedError(
          absl::StrCat(refusal.message(),
                       "; the reference interpreter does not run it either, so it cannot "
                       "run as a fallback step"));
    }
    Attribute reason;
    reason.kind = Attribute::Kind::kString;
    reason.s = std::string(refusal.message());
    node.attributes[kFallbackAttr] = std::move(reason);
    const absl::Status shapes = CheckNodeSupported(node, graph);
    if (!shapes.ok()) return shapes;
  }
  return absl::OkStatus();
}

std::vector<FallbackNode> FallbackNodes(const Graph& graph) {
  std::vector<FallbackNode> nodes;
  for (const Node& node : graph.nodes) {
    auto found = node.attributes.find(kFallbackAttr);
    if (found == node.attributes.end()) continue;
    nodes.push_back(
        {node.domain.empty() ? node.op_type : absl::StrCat(node.domain, ".", node.op_type),
         node.name, found->second.s});
  }
  return nodes;
}

}  // namespace gtco::graph
