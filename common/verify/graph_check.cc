// The check at submit: the prepared graph against the original, both interpreted.
#include "common/verify/graph_check.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/graph/bf16x3_split.h"
#include "common/onnx/model_analysis.h"
#include "common/util/status.h"
#include "common/verify/model_verification.h"
#include "common/verify/reference_interpreter.h"

namespace gtco::verify {
namespace {

std::string Sci(double value) { return absl::StrFormat("%.2g", value); }

/// The first node of `prepared` one of whose outputs differs from the original's tensor of the
/// same name ("" when none does).
std::string FirstDivergingNode(const graph::Graph& original, const graph::Graph& prepared,
                               const ValueMap& inputs) {
  absl::StatusOr<ValueMap> want = Interpret(original, inputs, /*keep_all=*/true);
  absl::StatusOr<ValueMap> got = Interpret(prepared, inputs, /*keep_all=*/true);
  if (!want.ok() || !got.ok()) return "";
  for (const graph::Node& node : prepared.nodes) {
    for (const std::string& output : node.outputs) {
      auto a = got->find(output);
      auto b = want->find(output);
      if (output.empty() || a == got->end() || b == want->end()) continue;
      const double error = RelativeError(a->second, b->second);
      const double tolerance = ToleranceFor(original, b->second.dtype);
      if (error > tolerance) {
        return absl::StrCat("the first node whose value diverges is '", node.name, "' (",
                            node.op_type, "): its tensor '", output, "' is ", Sci(error),
                            " off (tolerance ", Sci(tolerance), ")");
      }
    }
  }
  return "";
}

}  // namespace

absl::StatusOr<GraphCheck> CheckGraphPasses(std::string_view model_bytes,
                                            const onnx::ShapeOverrides& overrides) {
  GTCO_ASSIGN_OR_RETURN(graph::Graph original, onnx::ImportOnnx(model_bytes, overrides));
  GTCO_ASSIGN_OR_RETURN(graph::Graph prepared, onnx::PrepareGraph(model_bytes, overrides));
  GraphCheck check;
  for (const graph::Node& node : prepared.nodes) {
    if (node.domain == graph::kGtcoInternalDomain) {
      check.reason = absl::StrCat("the prepared graph holds '", node.op_type,
                                  "', which only the exporter runs (checked at export)");
      return check;
    }
  }
  ValueMap inputs = RandomInputs(original, kDefaultSeed);
  if (std::optional<std::string> unknown = FillShapeInputs(original, &inputs, nullptr)) {
    check.reason = absl::StrCat("input '", *unknown, "' sets a shape the random inputs cannot");
    return check;
  }
  absl::StatusOr<ValueMap> want = Interpret(original, inputs, /*keep_all=*/false);
  if (!want.ok()) {
    check.reason =
        absl::StrCat("the model does not run on random inputs: ", want.status().message());
    return check;
  }
  absl::StatusOr<ValueMap> got = Interpret(prepared, inputs, /*keep_all=*/false);
  if (!got.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the graph after GTCO's passes does not run where the ONNX graph does: ",
                     got.status().message(),
                     ". This is a GTCO bug (a graph rewrite gone wrong): please report "
                     "it with the model"));
  }
  check.checked = true;
  for (const std::string& output : original.outputs) {
    auto a = got->find(output);
    auto b = want->find(output);
    if (b == want->end()) continue;
    const double error = a == got->end() ? std::numeric_limits<double>::infinity()
                                         : RelativeError(a->second, b->second);
    check.max_error = std::max(check.max_error, error);
    const double tolerance = ToleranceFor(original, b->second.dtype);
    if (error > tolerance) {
      const std::string where = FirstDivergingNode(original, prepared, inputs);
      return absl::FailedPreconditionError(absl::StrCat(
          "the graph after GTCO's passes does not compute what the ONNX graph does: output '",
          output, "' is ", Sci(error), " off (tolerance ", Sci(tolerance), ", input seed ",
          kDefaultSeed, ")", where.empty() ? "" : "; ", where,
          ". This is a GTCO bug (a graph rewrite gone wrong): please report it with the model"));
    }
  }
  return check;
}

}  // namespace gtco::verify
