// Verdict checks and knob ordering shared by the CUDA row and element-wise sketches.
#include "common/kernels/cuda/rows/cuda_rows_util.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/kernels/family.h"

namespace gtco::kernels {
namespace {

/// Combinations MoveFirstAdmittedToFront tries before giving up.
constexpr int64_t kMaxScannedCombinations = 1 << 16;

bool IsFloatStorage(ir::DType dtype) {
  return dtype == ir::DType::kF32 || dtype == ir::DType::kF16 || dtype == ir::DType::kBF16;
}

}  // namespace

std::vector<int> EpilogueInputs(const ir::Workload& w) {
  std::set<int> inputs;
  for (const ir::EwInstr& instr : w.epilogue) {
    for (const ir::Operand& arg : instr.args) {
      if (arg.kind == ir::Operand::Kind::kInput && arg.index >= 0 &&
          arg.index < static_cast<int>(w.inputs.size())) {
        inputs.insert(arg.index);
      }
    }
  }
  return std::vector<int>(inputs.begin(), inputs.end());
}

std::string NonFloatStorage(const ir::Workload& w) {
  for (size_t input_idx = 0; input_idx < w.inputs.size(); ++input_idx) {
    if (!IsFloatStorage(w.inputs[input_idx].dtype)) {
      return absl::StrCat("needs f32, f16 or bf16 operands (in", input_idx, " is ",
                          ir::DTypeName(w.inputs[input_idx].dtype), ")");
    }
  }
  if (!IsFloatStorage(w.output.dtype)) {
    return absl::StrCat("needs an f32, f16 or bf16 output (out is ", ir::DTypeName(w.output.dtype),
                        ")");
  }
  return "";
}

std::string NonBroadcastingInput(const ir::Workload& w) {
  const std::vector<int64_t>& out = w.output.shape;
  for (int input_idx : EpilogueInputs(w)) {
    const std::vector<int64_t>& shape = w.inputs[input_idx].shape;
    bool broadcasts = true;
    for (size_t back = 1; back <= shape.size(); ++back) {
      const int64_t dim = shape[shape.size() - back];
      const int64_t out_dim = back <= out.size() ? out[out.size() - back] : 1;
      if (dim != 1 && dim != out_dim) broadcasts = false;
    }
    if (!broadcasts) {
      return absl::StrCat("epilogue input ", input_idx, " of shape [", absl::StrJoin(shape, ","),
                          "] does not broadcast to the output [", absl::StrJoin(out, ","), "]");
    }
  }
  return "";
}

void SortByPreference(std::vector<int64_t>* values, int64_t preferred) {
  auto distance = [preferred](int64_t value) {
    return std::abs(std::log2(std::max<double>(value, 0.5)) -
                    std::log2(std::max<double>(preferred, 0.5)));
  };
  std::stable_sort(values->begin(), values->end(), [&](int64_t a, int64_t b) {
    const double da = distance(a), db = distance(b);
    if (da != db) return da < db;
    return a > b;
  });
}

void MoveFirstAdmittedToFront(std::vector<Knob>* knobs, const std::vector<int>& scan_order,
                              const std::function<bool(const KnobValues&)>& admitted) {
  for (const Knob& knob : *knobs) {
    if (knob.values.empty()) return;
  }
  std::vector<size_t> position(knobs->size(), 0);
  KnobValues values(knobs->size());
  for (int64_t scanned = 0; scanned < kMaxScannedCombinations; ++scanned) {
    for (size_t knob_idx = 0; knob_idx < knobs->size(); ++knob_idx) {
      values[knob_idx] = (*knobs)[knob_idx].values[position[knob_idx]];
    }
    if (admitted(values)) {
      for (size_t knob_idx = 0; knob_idx < knobs->size(); ++knob_idx) {
        std::vector<int64_t>& list = (*knobs)[knob_idx].values;
        std::rotate(list.begin(), list.begin() + position[knob_idx],
                    list.begin() + position[knob_idx] + 1);
      }
      return;
    }
    // Odometer step: the last knob of scan_order varies fastest.
    size_t digit = scan_order.size();
    while (digit > 0) {
      const int knob_idx = scan_order[digit - 1];
      if (++position[knob_idx] < (*knobs)[knob_idx].values.size()) break;
      position[knob_idx] = 0;
      --digit;
    }
    if (digit == 0) return;
  }
}

}  // namespace gtco::kernels
