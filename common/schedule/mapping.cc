// Mapping helpers: which mappings a workload's target considers, verdict helpers, and the
// "vector" mapping shared by the row-wise and element-wise CPU sketches.
#include "common/schedule/mapping.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gtco::schedule {

MappingVerdict VectorMapping::Explain(const ir::Workload& w, const target::HardwareInfo& hw) const {
  const std::string non_f32 = NonF32Operands(w);
  if (!non_f32.empty()) return {Name(), false, non_f32};
  return {Name(), true, absl::StrCat("vectorized rows, up to ", hw.MaxFloatLanes(), " fp32 lanes")};
}

bool MappingConsiders(const MappingSketch& mapping, const ir::Workload& w,
                      const target::HardwareInfo& hw) {
  return hw.target == mapping.Target() && mapping.Considers(w);
}

std::string MissingCpuFeatures(const target::HardwareInfo& hw,
                               const std::vector<std::string>& features) {
  std::vector<std::string> missing;
  for (const std::string& feature : features) {
    if (!hw.HasFeature(feature)) missing.push_back(feature);
  }
  if (missing.empty()) return "";
  return absl::StrCat("needs CPU feature", missing.size() > 1 ? "s " : " ",
                      absl::StrJoin(missing, ", "), " (host: ", hw.Summary(), ")");
}

std::string NonF32Operands(const ir::Workload& w) {
  for (size_t input_idx = 0; input_idx < w.inputs.size(); ++input_idx) {
    if (w.inputs[input_idx].dtype != ir::DType::kF32) {
      return absl::StrCat("needs f32 operands (in", input_idx, " is ",
                          ir::DTypeName(w.inputs[input_idx].dtype), ")");
    }
  }
  if (w.output.dtype != ir::DType::kF32) {
    return absl::StrCat("needs an f32 output (out is ", ir::DTypeName(w.output.dtype), ")");
  }
  return "";
}

}  // namespace gtco::schedule
