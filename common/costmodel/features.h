// Features of a lowered program for the cost model.
#pragma once

#include <string>
#include <vector>

#include "common/costmodel/cost_model.h"
#include "common/ir/loop_ir.h"
#include "common/target/target.h"

namespace gtco::costmodel {

/// Names of the features, in vector order (for debugging and tests).
const std::vector<std::string>& FeatureNames();

/// Features computed from the loop nest of `func` (loop extents and kinds, vector and unroll
/// widths, parallel extent vs cores, bytes touched per cache level, arithmetic intensity, ...),
/// relative to `hw` where that matters. Deterministic; length == FeatureNames().size().
Features ExtractFeatures(const ir::LoweredFunc& func, const target::HardwareInfo& hw);

}  // namespace gtco::costmodel
