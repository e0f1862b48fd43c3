// The check at submit: the graph after GTCO's passes (the one the farm plans and tunes) against
// the original ONNX graph, both run by the reference interpreter on the same random inputs, so
// that a wrong graph rewrite is caught before any trial is spent on it. It compiles nothing:
// kernels, data steps and layouts are checked at export (model_verification.h).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/onnx/onnx_import.h"

namespace gtco::verify {

struct GraphCheck {
  bool checked = false;  ///< false: skipped (`reason` says why)
  std::string reason;
  double max_error = 0;  ///< the worst output's relative error (RelativeError)
};

/// Interprets the imported graph and the prepared one (onnx::PrepareGraph) on random inputs
/// (kDefaultSeed) and compares every output within ToleranceFor. Skipped, with the reason, when
/// the prepared graph holds an op only the exporter runs (the bf16x3 split), an input that sets
/// shapes, or the model cannot run on random inputs. FAILED_PRECONDITION on a mismatch, naming
/// the output and the first node of the prepared graph whose output diverges from the
/// original's tensor of the same name. The errors of the import and the passes.
absl::StatusOr<GraphCheck> CheckGraphPasses(std::string_view model_bytes,
                                            const onnx::ShapeOverrides& overrides);

}  // namespace gtco::verify
