// Reference evaluation of workloads: deterministic random inputs, a plain and obviously correct
// evaluator (double accumulation for reductions), and tolerant output comparison. Every
// candidate program is checked against this before its time counts.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "common/ir/workload.h"

namespace gtco::ir {

/// Deterministic random inputs for `w` (one vector per input, in order): uniform in [-1, 1];
/// the layernorm scale (input 1) uniform in [0.5, 1.5]. Same (w, seed) => same values on every
/// platform (a fixed 64-bit generator, not std::uniform_real_distribution).
std::vector<std::vector<float>> RandomInputs(const Workload& w, uint64_t seed);

/// Plain evaluation of `w` on `inputs` (sizes must match the input shapes; a GTCO_CHECK guards
/// it). Reductions accumulate in double; the epilogue is applied per element with EvalEwOp and
/// numpy broadcasting of its extra inputs. Returns the output, row-major.
std::vector<float> ComputeReference(const Workload& w,
                                    const std::vector<std::vector<float>>& inputs);

/// OK when sizes agree and every element satisfies |a - e| <= atol + rtol * |e| (NaN matches
/// NaN, infinities must match exactly); otherwise FAILED_PRECONDITION naming the first
/// mismatching index, the expected and actual values, and the number of mismatches.
absl::Status CompareOutputs(const std::vector<float>& expected, const std::vector<float>& actual,
                            double rtol, double atol);

/// Tolerances suited to `w`: matmul grows with sqrt(k); transcendental epilogues loosen them.
void DefaultTolerance(const Workload& w, double* rtol, double* atol);

}  // namespace gtco::ir
