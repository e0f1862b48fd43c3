// Weights stored in the layout the chosen kernel reads: the ahead-of-time export's half of the
// blocked matmul's pack_b = 2 (matmul_blocked.h, kPackBPrepacked).
#pragma once

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "common/ir/workload.h"
#include "common/schedule/trace.h"

namespace gtco::kernels {

/// A constant B operand in the layout a kernel reads, and that kernel's trace.
struct PrepackedOperand {
  schedule::Trace trace;        ///< `t` with pack_b = 2: reads B as `data` holds it
  std::vector<float> data;      ///< B in the trace's panels, zero-padded to whole column tiles
  std::vector<int64_t> shape;   ///< [K, N rounded up to whole column tiles]
};

/// For a matmul `w` whose B (input 1, row-major [K, N]) is a constant weight `b`: when `t` is a
/// blocked FMA schedule (mm_avx512_fma/v1, mm_avx2_fma/v1) with one B shared by the batch and
/// not transposed, the trace that reads B pre-packed and B in that layout, so that no kernel
/// packs or strides through the weight at run time; nullopt when `t` reads B another way.
/// INVALID_ARGUMENT when `t` does not replay for `w` or `b` is not K x N.
absl::StatusOr<std::optional<PrepackedOperand>> PrepackConstantB(const ir::Workload& w,
                                                                 const schedule::Trace& t,
                                                                 const std::vector<float>& b);

}  // namespace gtco::kernels
