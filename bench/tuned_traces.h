// The tuning outcome of each case saved as a small TSV, so the timing phase can be repeated on a
// quieter machine (cpu_vs_vendor --retime FILE) without tuning again.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/tuner.h"

namespace gtco::bench {

/// Tab-separated: id, trials, failed, tuning seconds, best seconds, best trace (one case a line).
std::string RenderTunedTraces(const std::vector<std::pair<std::string, TuneResult>>& tuned);

/// Parses RenderTunedTraces output into TuneResults by case id (best_so_far stays empty).
/// INVALID_ARGUMENT naming the line for a malformed one.
absl::StatusOr<std::map<std::string, TuneResult>> ParseTunedTraces(const std::string& text);

}  // namespace gtco::bench
