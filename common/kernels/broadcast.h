// Broadcast shapes of element-wise workloads, shared by the CPU and CUDA element-wise families.
#pragma once

#include <cstdint>
#include <vector>

#include "common/ir/workload.h"

namespace gtco::kernels {

/// The element-wise output viewed with size-1 output dims dropped and adjacent dims merged when
/// every input either spans both or broadcasts over both (numpy broadcasting preserved).
/// `inputs[k]` has the rank of `out`; a dim is out[d] or 1. A scalar output is {1}.
struct CollapsedShapes {
  std::vector<int64_t> out;
  std::vector<std::vector<int64_t>> inputs;
};
CollapsedShapes CollapseBroadcastDims(const ir::Workload& w);

}  // namespace gtco::kernels
