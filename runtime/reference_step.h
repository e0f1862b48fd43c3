// Fallback ("reference") steps of an artifact: an ONNX node without a kernel family, run by the
// reference op library on the arena's tensors, and the conversions between artifact tensors and
// the library's values (the exporter's whole-model check reads intermediate tensors with them).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "runtime/artifact.h"
#include "runtime/reference_ops.h"

namespace gtco::runtime {

/// Element `index` of `data` (elements of `type`, little-endian) as double (exact).
double LoadElement(const char* data, ElemType type, int64_t index);
/// Stores `value` (rounded to `type` as reference::RoundTo rounds) as element `index` of `data`.
void StoreElement(char* data, ElemType type, int64_t index, double value);

/// The tensor of `spec` whose bytes are `data`, as a reference value.
reference::Value ValueFromBytes(const TensorSpec& spec, const char* data);

/// Runs `node` on the inputs (`inputs[i]` null for an omitted optional input) and writes its
/// outputs into `outputs` (one buffer per spec). INVALID_ARGUMENT naming the node when the op
/// fails on these inputs (an index out of range, say) or computes a shape or type other than the
/// manifest's.
absl::Status RunReferenceStep(const reference::Node& node,
                              const std::vector<const TensorSpec*>& input_specs,
                              const std::vector<const char*>& inputs,
                              const std::vector<const TensorSpec*>& output_specs,
                              const std::vector<char*>& outputs);

}  // namespace gtco::runtime
