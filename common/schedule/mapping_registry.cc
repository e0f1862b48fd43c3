// The intrinsic-mapping registry (its table is mappings.def), verdict helpers, and the "vector"
// mappings of the row-wise and element-wise sketches.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/schedule/mapping.h"

namespace gtco::schedule {
namespace {

/// The single "vector" mapping of a row-wise or element-wise sketch: any CPU, f32 operands.
class VectorRowMapping final : public MappingSketch {
 public:
  explicit VectorRowMapping(const Sketch& sketch) : sketch_(sketch) {}
  const char* Name() const override { return "vector"; }
  const Sketch& sketch() const override { return sketch_; }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    const std::string non_f32 = NonF32Operands(w);
    if (!non_f32.empty()) return {Name(), false, non_f32};
    return {Name(), true,
            absl::StrCat("vectorized rows, up to ", hw.MaxFloatLanes(), " fp32 lanes")};
  }

 private:
  const Sketch& sketch_;
};

}  // namespace

const std::vector<const MappingSketch*>& MappingRegistry() {
  static const std::vector<const MappingSketch*>* const registry =
      new std::vector<const MappingSketch*>{
#define GTCO_MAPPING(function) &function(),
#include "common/schedule/mappings.def"
#undef GTCO_MAPPING
      };
  return *registry;
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

const MappingSketch& VectorSoftmaxMapping() {
  static const VectorRowMapping* const mapping = new VectorRowMapping(SoftmaxSketch());
  return *mapping;
}

const MappingSketch& VectorLayerNormMapping() {
  static const VectorRowMapping* const mapping = new VectorRowMapping(LayerNormSketch());
  return *mapping;
}

const MappingSketch& VectorReduceMeanMapping() {
  static const VectorRowMapping* const mapping = new VectorRowMapping(ReduceMeanSketch());
  return *mapping;
}

const MappingSketch& VectorElementwiseMapping() {
  static const VectorRowMapping* const mapping = new VectorRowMapping(ElementwiseSketch());
  return *mapping;
}

}  // namespace gtco::schedule
