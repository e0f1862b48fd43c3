// Helpers shared by the CUDA row and element-wise sketches (cuda_rows_sketch.cc,
// cuda_rows_elementwise.cc): verdict checks, epilogue inputs, and ordering knob values so that
// the heuristic default comes first.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/ir/workload.h"
#include "common/kernels/family.h"
#include "common/schedule/sketch.h"

namespace gtco::kernels {

/// Oldest compute capability the row and element-wise kernels target (warp shuffles with masks,
/// f16 conversions).
inline constexpr int kRowsMinSm = 70;

/// Distinct indices of the inputs the epilogue reads, ascending (out-of-range indices of a
/// malformed workload are left out).
std::vector<int> EpilogueInputs(const ir::Workload& w);

/// Empty when every input and the output of `w` is f32, f16 or bf16, else the reason
/// ("needs f32, f16 or bf16 operands (in1 is i8)").
std::string NonFloatStorage(const ir::Workload& w);

/// Empty when every input the epilogue reads broadcasts to the output shape (numpy rules), else
/// the reason naming the first that does not.
std::string NonBroadcastingInput(const ir::Workload& w);

/// Orders `values` by closeness to `preferred` on a log2 scale (ties: the larger first).
void SortByPreference(std::vector<int64_t>* values, int64_t preferred);

/// Scans the knob product with knob `scan_order[0]` varying slowest (values in their current
/// order) and moves each knob's value of the first combination `admitted` accepts to the front
/// of its list, so that the first values form an admitted trace. Leaves `knobs` as they are
/// when nothing is admitted within a bounded number of combinations.
void MoveFirstAdmittedToFront(std::vector<Knob>* knobs, const std::vector<int>& scan_order,
                              const std::function<bool(const KnobValues&)>& admitted);

}  // namespace gtco::kernels
