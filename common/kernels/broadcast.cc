// Broadcast-dimension collapsing of element-wise workloads.
#include "common/kernels/broadcast.h"

namespace gtco::kernels {

CollapsedShapes CollapseBroadcastDims(const ir::Workload& w) {
  std::vector<int64_t> out = w.output.shape;
  if (out.empty()) out.push_back(1);
  const size_t rank = out.size();
  // full[k][d]: input k spans output dim d (after right alignment); false when broadcast.
  std::vector<std::vector<bool>> full(w.inputs.size(), std::vector<bool>(rank, false));
  for (size_t input_idx = 0; input_idx < w.inputs.size(); ++input_idx) {
    const std::vector<int64_t>& shape = w.inputs[input_idx].shape;
    for (size_t dim = 0; dim < rank; ++dim) {
      const int64_t offset = static_cast<int64_t>(dim + shape.size()) - static_cast<int64_t>(rank);
      full[input_idx][dim] = offset >= 0 && shape[offset] == out[dim] && out[dim] != 1;
    }
  }
  CollapsedShapes view;
  view.inputs.assign(w.inputs.size(), {});
  std::vector<bool> previous_pattern;
  for (size_t dim = 0; dim < rank; ++dim) {
    if (out[dim] == 1) continue;
    std::vector<bool> pattern;
    for (const auto& input_full : full) pattern.push_back(input_full[dim]);
    if (!view.out.empty() && pattern == previous_pattern) {
      view.out.back() *= out[dim];
      for (size_t input_idx = 0; input_idx < pattern.size(); ++input_idx) {
        if (pattern[input_idx]) view.inputs[input_idx].back() *= out[dim];
      }
    } else {
      view.out.push_back(out[dim]);
      for (size_t input_idx = 0; input_idx < pattern.size(); ++input_idx) {
        view.inputs[input_idx].push_back(pattern[input_idx] ? out[dim] : 1);
      }
    }
    previous_pattern = pattern;
  }
  if (view.out.empty()) {
    view.out = {1};
    for (auto& shape : view.inputs) shape = {1};
  }
  return view;
}

}  // namespace gtco::kernels
