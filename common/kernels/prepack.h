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
/// For a conv `w` (B is its weights W) the same for a channel-vectorized schedule
/// (conv_avx512_fma_channels/v1, conv_avx2_fma_channels/v1).
/// INVALID_ARGUMENT when `t` does not replay for `w` or `b` has the wrong size.
absl::StatusOr<std::optional<PrepackedOperand>> PrepackConstantB(const ir::Workload& w,
                                                                 const schedule::Trace& t,
                                                                 const std::vector<float>& b);

/// `t` with its pack_b decision set to `pack_b` (unchanged when it has none).
schedule::Trace WithPackB(schedule::Trace t, int64_t pack_b);

/// Whether `t` reads its B pre-packed (a pack_b decision of 2).
bool ReadsPrepackedInput(const schedule::Trace& t);

/// `inputs` (in w's layout) as the kernel of trace `t` reads them: when `t` reads its constant
/// B pre-packed (pack_b = 2: an exported matmul, or a channel-vectorized conv, which is searched
/// that way), input 1 is replaced by its packed layout; otherwise nothing changes. A worker
/// measuring such a trace on random inputs packs them with this. INVALID_ARGUMENT as
/// PrepackConstantB.
absl::Status PackInputsForTrace(const ir::Workload& w, const schedule::Trace& t,
                                std::vector<std::vector<float>>* inputs);

}  // namespace gtco::kernels
